// TmrEncodingCache: the host-side encoder of one prepared callable, with a structural template.
//
// The template is the last committed packet image without tensor addresses and scalar values
// (a descriptor's address slot holds its byte span instead, see encode()):
// it keeps the scope (callable id, counts), both generations, the binding address, and every
// tensor's geometry, offset and backing size. An encode whose structure matches it (a hit)
// copies the template and patches addresses and scalars, still checking every current input;
// anything else (a miss) encodes from scratch and carries a new template in the candidate.
//
// Transaction: encode() is const and builds a private TmrCandidate (the owned block the
// transport sends). The owner calls commit() only after the complete enqueue succeeded; a
// failed encode or enqueue leaves the previous template in place. commit() is noexcept (a miss
// candidate already owns its template storage). Storage is one template, replaced on commit, so
// it does not grow with the number of invocations. One cache per prepared callable; the owner
// serialises encode/commit on a shared cache (simpler/wire/submission.hpp); independent caches
// need no lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simpler/wire/aligned_bytes.hpp"
#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/byte_span.hpp"
#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/codec.hpp"
#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/status.hpp"
#include "simpler/wire/tmr_packet.hpp"

namespace simpler {

// Bytes before the packet in a transport block: the u64 packet_bytes prefix (WIRE.md, envelope).
inline constexpr std::size_t kTmrBlockPrefixBytes = sizeof(std::uint64_t);

class TmrEncodingCache;

// One encoded invocation: an owned block (u64 packet_bytes + packet) and the trusted metadata
// it was encoded for. Move-only; destroying it releases the host packet.
class TmrCandidate {
  public:
    TmrCandidate() = default;
    TmrCandidate(TmrCandidate&&) noexcept = default;
    TmrCandidate& operator=(TmrCandidate&&) noexcept = default;
    TmrCandidate(const TmrCandidate&) = delete;
    TmrCandidate& operator=(const TmrCandidate&) = delete;

    bool empty() const noexcept { return !block_; }
    const std::uint8_t* block() const noexcept { return block_.get(); }
    std::size_t block_bytes() const noexcept { return block_bytes_; }
    ByteSpan packet() const noexcept {
        return block_ ? ByteSpan(block_.get() + kTmrBlockPrefixBytes, block_bytes_ - kTmrBlockPrefixBytes) : ByteSpan();
    }
    std::size_t packet_bytes() const noexcept { return block_ ? block_bytes_ - kTmrBlockPrefixBytes : 0; }
    bool cache_hit() const noexcept { return hit_; }
    // Fill the owned block with `byte`. After a copy-on-enqueue launch the caller may do this
    // (tests and tools/cann-probe do, to show the transport kept its own copy).
    void overwrite(std::uint8_t byte) noexcept {
        if (block_) std::memset(block_.get(), byte, block_bytes_);
    }
    const PreparedInvocationView& view() const noexcept { return view_; }
    const TmrBindingRef& binding() const noexcept { return binding_; }

  private:
    friend class TmrEncodingCache;
    AlignedBytes block_;
    std::size_t block_bytes_ = 0;
    AlignedBytes template_;  // new structural template (miss only; block layout), moved into the cache on commit
    std::size_t template_bytes_ = 0;
    const TmrEncodingCache* origin_ = nullptr;
    bool hit_ = false;
    bool committed_ = false;
    PreparedInvocationView view_{};
    TmrBindingRef binding_{};
};

class TmrEncodingCache {
  public:
    TmrEncodingCache() = default;
    TmrEncodingCache(const TmrEncodingCache&) = delete;
    TmrEncodingCache& operator=(const TmrEncodingCache&) = delete;

    // Bytes of the committed template (header + binding + descriptors), 0 before the first commit.
    std::size_t template_bytes() const noexcept { return template_bytes_; }

    // Encode a private candidate. *out is replaced only on Ok; the cache never changes here.
    InvocationStatus encode(const PreparedInvocationView& view, const TmrBindingRef& binding, const ChipTensor* tensors,
                            std::size_t tensor_count, const std::uint64_t* scalars, std::size_t scalar_count,
                            TmrCandidate* out) const noexcept {
        if (out == nullptr) return InvocationStatus::InvalidArgument;
        InvocationStatus s = check_encode_arguments(view, binding, tensors, tensor_count, scalars, scalar_count);
        if (s != InvocationStatus::Ok) return s;
        const std::size_t packet_bytes = tmr_invocation_size(view.tensor_count, view.scalar_count);
        const std::size_t block_bytes = kTmrBlockPrefixBytes + packet_bytes;
        AlignedBytes block = allocate_aligned_bytes(block_bytes);
        if (!block) return InvocationStatus::AllocationFailure;
        const std::uint64_t prefix = packet_bytes;
        std::memcpy(block.get(), &prefix, sizeof prefix);
        std::uint8_t* packet = block.get() + kTmrBlockPrefixBytes;

        TmrCandidate c;
        s = encode_hit(view, binding, tensors, tensor_count, packet, &c.hit_);
        if (s != InvocationStatus::Ok) return s;
        if (!c.hit_) {
            s = encode_tmr_invocation(view, binding, tensors, tensor_count, scalars, scalar_count, packet, packet_bytes);
            if (s != InvocationStatus::Ok) return s;
            const std::size_t tbytes = tmr_scalars_offset(view.tensor_count);
            c.template_ = allocate_aligned_bytes(kTmrBlockPrefixBytes + tbytes);
            if (!c.template_) return InvocationStatus::AllocationFailure;
            std::uint8_t* image = c.template_.get() + kTmrBlockPrefixBytes;
            std::memset(c.template_.get(), 0, kTmrBlockPrefixBytes);
            std::memcpy(image, packet, tbytes);
            // The address slot of a template descriptor holds what the hit path needs instead of
            // an address: the bytes a nonempty tensor spans from its address (0 when empty).
            for (std::size_t i = 0; i < tensor_count; ++i) {
                ChipTensor* d = reinterpret_cast<ChipTensor*>(image + kTmrTensorsOffset) + i;
                d->buffer.addr = chip_tensor_span_bytes(*d);
            }
            c.template_bytes_ = tbytes;
        } else if (scalar_count != 0) {
            std::memcpy(packet + tmr_scalars_offset(view.tensor_count), scalars, scalar_count * kTmrScalarBytes);
        }
        c.block_ = std::move(block);
        c.block_bytes_ = block_bytes;
        c.origin_ = this;
        c.view_ = view;
        c.binding_ = binding;
        *out = std::move(c);
        return InvocationStatus::Ok;
    }

    // Adopt the candidate's structure as the template. Call only after its complete enqueue
    // succeeded. False (and nothing changes) for a candidate of another cache or one already
    // committed. A hit candidate leaves the template as it is (it matched it).
    bool commit(TmrCandidate& c) noexcept {
        if (c.origin_ != this || c.committed_ || c.empty()) return false;
        c.committed_ = true;
        if (!c.hit_) {
            template_ = std::move(c.template_);
            template_bytes_ = c.template_bytes_;
            c.template_bytes_ = 0;
        }
        return true;
    }

  private:
    // Hit path: header, binding and every tensor's structure equal the template. Writes the
    // header, binding and descriptors (with current addresses) to `packet` and checks each
    // current tensor. *hit = false (Ok) when the structure differs anywhere.
    InvocationStatus encode_hit(const PreparedInvocationView& view, const TmrBindingRef& binding,
                                const ChipTensor* tensors, std::size_t tensor_count, std::uint8_t* packet,
                                bool* hit) const noexcept {
        *hit = false;
        if (!template_ || template_bytes_ != tmr_scalars_offset(view.tensor_count)) return InvocationStatus::Ok;
        make_tmr_prefix(view, binding, packet);
        const std::uint8_t* image = template_.get() + kTmrBlockPrefixBytes;
        if (std::memcmp(packet, image, kTmrFixedBytes) != 0) return InvocationStatus::Ok;
        const ChipTensor* tmpl = reinterpret_cast<const ChipTensor*>(image + kTmrTensorsOffset);
        for (std::size_t i = 0; i < tensor_count; ++i)
            if (!chip_tensor_same_structure(tensors[i], tmpl[i])) return InvocationStatus::Ok;
        // Structure equal to a validated template: only the address can make a tensor invalid
        // now (nonzero, and address + span must not wrap, for a nonempty tensor).
        for (std::size_t i = 0; i < tensor_count; ++i) {
            const std::uint64_t span = tmpl[i].buffer.addr, addr = tensors[i].buffer.addr;
            std::uint64_t last = 0;
            if (span != 0 && (addr == 0 || __builtin_add_overflow(addr, span, &last))) return InvocationStatus::InvalidTensor;
        }
        std::memcpy(packet + kTmrTensorsOffset, tmpl, tensor_count * kChipTensorBytes);
        ChipTensor* dst = reinterpret_cast<ChipTensor*>(packet + kTmrTensorsOffset);
        for (std::size_t i = 0; i < tensor_count; ++i) dst[i].buffer.addr = tensors[i].buffer.addr;
        *hit = true;
        return InvocationStatus::Ok;
    }

    // Same layout as a block: 8 unused bytes, then the image, so descriptors are 64-byte aligned.
    AlignedBytes template_;
    std::size_t template_bytes_ = 0;
};

}  // namespace simpler
