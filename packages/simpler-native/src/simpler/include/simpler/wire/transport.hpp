// The AICPU transport adapter: hand one encoded TMR block to a copy-on-enqueue runner, and the
// device-side reading of such a block.
//
// Block (WIRE.md, "Transport envelope"): u64 packet_bytes, then the packet. The AICPU entry
// receives one pointer and no length, hence the prefix.
//
// AicpuPayloadRunner is the seam between this adapter and whatever executes the block: the
// simulated AICPU of simpler's chip runtime, the test runner in simpler/wire/packet_pool.hpp, or
// a CANN launch in tools/cann-probe. Contract of launch_aicpu_payload: copy-on-enqueue. When it
// returns, it has copied all `bytes` (or failed), so the caller may overwrite or free the block
// at once. It returns 0 on success and a runner-specific nonzero code on failure; it does not
// throw. Success means "enqueued", not "executed".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/byte_span.hpp"
#include "simpler/wire/encoding_cache.hpp"
#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/status.hpp"
#include "simpler/wire/tmr_packet.hpp"

namespace simpler {

class AicpuPayloadRunner {
  public:
    virtual ~AicpuPayloadRunner() = default;
    virtual int launch_aicpu_payload(const void* block, std::size_t bytes) noexcept = 0;
};

struct EnqueueOutcome {
    InvocationStatus status = InvocationStatus::Ok;  // admission of the candidate
    int launch_rc = 0;                               // the runner's code when admission passed
    bool ok() const noexcept { return status == InvocationStatus::Ok && launch_rc == 0; }
};

// Revalidate a candidate against the trusted metadata, then enqueue its block. Checks: a
// nonempty candidate whose owned length is 8 + tmr_invocation_size(view counts) and whose prefix
// says so (InvalidSize); its recorded view and binding equal the trusted ones (StaleCallable,
// InvalidBinding); its packet passes validate_invocation_header and carries the trusted binding.
// The runner is called only when all of that holds.
inline EnqueueOutcome enqueue_tmr_invocation_aicpu(AicpuPayloadRunner& runner, const TmrCandidate& candidate,
                                                   const PreparedInvocationView& view,
                                                   const TmrBindingRef& binding) noexcept {
    EnqueueOutcome r;
    if (!is_valid_prepared_view(view) || !is_valid_trusted_binding(binding)) {
        r.status = InvocationStatus::InvalidArgument;
        return r;
    }
    const std::size_t packet_bytes = tmr_invocation_size(view.tensor_count, view.scalar_count);
    std::uint64_t prefix = 0;
    if (candidate.empty() || candidate.block_bytes() != kTmrBlockPrefixBytes + packet_bytes ||
        !ByteSpan(candidate.block(), candidate.block_bytes()).read_at(0, &prefix) || prefix != packet_bytes) {
        r.status = InvocationStatus::InvalidSize;
        return r;
    }
    const PreparedInvocationView& cv = candidate.view();
    if (cv.callable_id != view.callable_id || cv.slot_generation != view.slot_generation ||
        cv.tensor_count != view.tensor_count || cv.scalar_count != view.scalar_count) {
        r.status = InvocationStatus::StaleCallable;
        return r;
    }
    if (!same_binding(candidate.binding(), binding)) {
        r.status = InvocationStatus::InvalidBinding;
        return r;
    }
    const ByteSpan packet = candidate.packet();
    r.status = validate_invocation_header(packet, view, nullptr);
    if (r.status != InvocationStatus::Ok) return r;
    TmrBindingRef carried;
    if (!packet.read_at(kTmrBindingOffset, &carried) || !same_binding(carried, binding)) {
        r.status = InvocationStatus::InvalidBinding;
        return r;
    }
    r.launch_rc = runner.launch_aicpu_payload(candidate.block(), candidate.block_bytes());
    return r;
}

// Device side: the packet inside a block of `capacity` readable bytes. The prefix must fit the
// block and be at most the largest TMR packet; the exact size is checked later against the
// trusted counts by the decoder. *out is written only on Ok.
inline InvocationStatus tmr_block_packet(const void* block, std::size_t capacity, ByteSpan* out) noexcept {
    std::uint64_t packet_bytes = 0;
    const ByteSpan b(block, capacity);
    if (out == nullptr) return InvocationStatus::InvalidArgument;
    if (!b.read_at(0, &packet_bytes)) return InvocationStatus::InvalidSize;
    if (packet_bytes > kMaxTmrPacketBytes || packet_bytes > capacity - kTmrBlockPrefixBytes)
        return InvocationStatus::InvalidSize;
    *out = ByteSpan(b.data + kTmrBlockPrefixBytes, static_cast<std::size_t>(packet_bytes));
    return InvocationStatus::Ok;
}

}  // namespace simpler
