// PreparedInvocationView and the runtime-independent admission of an invocation header.
//
// A PreparedInvocationView is what the owner of a live, independently validated callable
// registration vouches for: its id, its effective tensor/scalar counts and the residency
// generation of its slot. It is never built from the packet being checked. Both the TMR codec
// and any other payload (HBG) admit a packet with validate_invocation_header(), which reads the
// 40-byte header only and leaves the payload to the runtime-specific decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "simpler/wire/byte_span.hpp"
#include "simpler/wire/invocation_header.hpp"
#include "simpler/wire/status.hpp"

namespace simpler {

// Direction of one signature entry. Every tensor (In/Out/InOut) precedes every Scalar.
enum class ArgDirection : std::uint8_t {
    Scalar = 0,
    In = 1,
    Out = 2,
    InOut = 3,
};
inline constexpr std::uint8_t kArgDirectionCount = 4;

struct PreparedInvocationView {
    std::int32_t callable_id;
    std::int32_t tensor_count;
    std::int32_t scalar_count;
    std::uint64_t slot_generation;  // >= 1 for a live slot
};
static_assert(std::is_trivially_copyable_v<PreparedInvocationView>, "PreparedInvocationView must be plain data");

inline constexpr bool is_valid_prepared_view(const PreparedInvocationView& v) noexcept {
    return callable_id_in_range(v.callable_id) && invocation_counts_in_limits(v.tensor_count, v.scalar_count) &&
           v.slot_generation != 0;
}

struct InvocationCounts {
    std::int32_t tensor_count;
    std::int32_t scalar_count;
};

// Effective counts of a signature (one ArgDirection code per entry). Rejects unknown codes and a
// tensor after a scalar (InvalidSignature) and counts over the limits (InvalidCounts). A nonzero
// `cached_scalar_count` must equal the signature's scalar count (InvalidSignature); zero means
// "use the signature's". *out is written only on Ok.
inline InvocationStatus derive_invocation_counts(const std::uint8_t* signature, std::size_t length,
                                                 std::int32_t cached_scalar_count,
                                                 InvocationCounts* out) noexcept {
    if (out == nullptr || (signature == nullptr && length != 0) || cached_scalar_count < 0)
        return InvocationStatus::InvalidArgument;
    if (length > static_cast<std::size_t>(kMaxArguments)) return InvocationStatus::InvalidCounts;
    std::int32_t tensors = 0, scalars = 0;
    for (std::size_t i = 0; i < length; ++i) {
        const std::uint8_t d = signature[i];
        if (d >= kArgDirectionCount) return InvocationStatus::InvalidSignature;
        if (d == static_cast<std::uint8_t>(ArgDirection::Scalar)) {
            ++scalars;
        } else {
            if (scalars != 0) return InvocationStatus::InvalidSignature;
            ++tensors;
        }
    }
    if (!invocation_counts_in_limits(tensors, scalars)) return InvocationStatus::InvalidCounts;
    if (cached_scalar_count != 0 && cached_scalar_count != scalars) return InvocationStatus::InvalidSignature;
    *out = InvocationCounts{tensors, scalars};
    return InvocationStatus::Ok;
}

// Admit a packet's header against a trusted view. Checks, in this order: the view itself
// (InvalidArgument); a readable span of at least 40 bytes (InvalidSize); KERNEL mode, callable id
// range, host_copy_tensor_count == 0 and reserved == 0 (InvalidHeader); count limits
// (InvalidCounts); payload_bytes == span size - 40 (InvalidSize); id equal to the view's
// (StaleCallable); generation equal to the view's (StaleCallable); counts equal to the view's
// (InvalidCounts). The payload is not read. *out is written only on Ok.
inline InvocationStatus validate_invocation_header(ByteSpan packet, const PreparedInvocationView& view,
                                                   InvocationHeader* out) noexcept {
    if (!is_valid_prepared_view(view)) return InvocationStatus::InvalidArgument;
    InvocationHeader h;
    if (!packet.read_at(0, &h)) return InvocationStatus::InvalidSize;
    if (h.mode != static_cast<std::uint32_t>(ExecutionMode::KERNEL)) return InvocationStatus::InvalidHeader;
    if (!callable_id_in_range(h.callable_id)) return InvocationStatus::InvalidHeader;
    if (h.host_copy_tensor_count != 0 || h.reserved != 0) return InvocationStatus::InvalidHeader;
    if (!invocation_counts_in_limits(h.tensor_count, h.scalar_count)) return InvocationStatus::InvalidCounts;
    if (h.payload_bytes != packet.size - kInvocationHeaderBytes) return InvocationStatus::InvalidSize;
    if (h.callable_id != view.callable_id || h.generation != view.slot_generation)
        return InvocationStatus::StaleCallable;
    if (h.tensor_count != view.tensor_count || h.scalar_count != view.scalar_count)
        return InvocationStatus::InvalidCounts;
    if (out != nullptr) *out = h;
    return InvocationStatus::Ok;
}

}  // namespace simpler
