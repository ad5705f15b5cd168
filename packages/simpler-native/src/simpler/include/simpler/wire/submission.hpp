// TmrSubmissionOwner: the submission transaction of one prepared callable.
//
// One owner guard (a mutex) spans the whole sequence: take the trusted view and binding, encode
// a private candidate, enqueue it completely, commit the template on success, release the host
// packet. publish() (callable replacement) and close() take the same guard, so a submission
// never mixes metadata of two registrations and never runs after close. Different owners share
// nothing and need no common lock. The chip runtime keeps one owner per prepared callable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/encoding_cache.hpp"
#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/status.hpp"
#include "simpler/wire/transport.hpp"

namespace simpler {

class TmrSubmissionOwner {
  public:
    TmrSubmissionOwner() = default;
    TmrSubmissionOwner(const TmrSubmissionOwner&) = delete;
    TmrSubmissionOwner& operator=(const TmrSubmissionOwner&) = delete;

    // Publish (or replace) the trusted metadata. InvalidArgument leaves the owner as it was.
    InvocationStatus publish(const PreparedInvocationView& view, const TmrBindingRef& binding) noexcept {
        if (!is_valid_prepared_view(view) || !is_valid_trusted_binding(binding)) return InvocationStatus::InvalidArgument;
        std::scoped_lock lock(mu_);
        view_ = view;
        binding_ = binding;
        live_ = true;
        return InvocationStatus::Ok;
    }

    // After close, submit() returns StaleCallable until the next publish().
    void close() noexcept {
        std::scoped_lock lock(mu_);
        live_ = false;
    }

    EnqueueOutcome submit(AicpuPayloadRunner& runner, const ChipTensor* tensors, std::size_t tensor_count,
                          const std::uint64_t* scalars, std::size_t scalar_count) noexcept {
        std::scoped_lock lock(mu_);
        EnqueueOutcome r;
        if (!live_) {
            r.status = InvocationStatus::StaleCallable;
            return r;
        }
        TmrCandidate candidate;
        r.status = cache_.encode(view_, binding_, tensors, tensor_count, scalars, scalar_count, &candidate);
        if (r.status != InvocationStatus::Ok) return r;
        r = enqueue_tmr_invocation_aicpu(runner, candidate, view_, binding_);
        if (r.ok()) cache_.commit(candidate);
        ++submissions_;
        return r;  // the candidate (host packet) is released here, still under the guard
    }

    std::size_t template_bytes() const noexcept {
        std::scoped_lock lock(mu_);
        return cache_.template_bytes();
    }
    std::uint64_t submissions() const noexcept {
        std::scoped_lock lock(mu_);
        return submissions_;
    }

  private:
    mutable std::mutex mu_;
    bool live_ = false;
    PreparedInvocationView view_{};
    TmrBindingRef binding_{};
    TmrEncodingCache cache_;
    std::uint64_t submissions_ = 0;
};

}  // namespace simpler
