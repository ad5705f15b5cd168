// The TMR codec: encode one invocation into its packet image, decode a packet from a span.
//
// Producers: the host encoding cache (simpler/wire/encoding_cache.hpp). Consumers: the AICPU
// side (simpler/wire/consume.hpp), fuzzers and the Python binding. Everything is header-only
// and noexcept so an external build (tools/cann-probe) reuses the same code.
//
// Encode normalises each tensor to its canonical image (simpler/wire/chip_tensor.hpp) and
// checks it; decode requires exactly that image, the exact size from the trusted counts and
// the trusted binding. Neither writes its output unless it succeeds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/byte_span.hpp"
#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/invocation_header.hpp"
#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/status.hpp"
#include "simpler/wire/tmr_packet.hpp"

namespace simpler {

// Check one caller tensor and write its canonical packet image to *out (only on Ok).
inline InvocationStatus encode_chip_tensor(const ChipTensor& in, ChipTensor* out) noexcept {
    if (in.ndims < 1 || in.ndims > kMaxTensorDims) return InvocationStatus::InvalidTensor;
    ChipTensor c;
    canonicalize_chip_tensor(in, &c);
    const InvocationStatus s = check_chip_tensor_semantics(c);
    if (s != InvocationStatus::Ok) return s;
    *out = c;
    return InvocationStatus::Ok;
}

// The header and binding ref a packet for (view, binding) starts with.
inline void make_tmr_prefix(const PreparedInvocationView& view, const TmrBindingRef& binding,
                            std::uint8_t* dst) noexcept {
    InvocationHeader h;
    std::memset(&h, 0, sizeof h);
    h.mode = static_cast<std::uint32_t>(ExecutionMode::KERNEL);
    h.callable_id = view.callable_id;
    h.generation = view.slot_generation;
    h.payload_bytes = tmr_invocation_size(view.tensor_count, view.scalar_count) - kInvocationHeaderBytes;
    h.tensor_count = view.tensor_count;
    h.scalar_count = view.scalar_count;
    std::memcpy(dst, &h, sizeof h);
    std::memcpy(dst + kTmrBindingOffset, &binding, sizeof binding);
}

// Arguments every encode entry point checks before touching a tensor.
inline InvocationStatus check_encode_arguments(const PreparedInvocationView& view, const TmrBindingRef& binding,
                                               const ChipTensor* tensors, std::size_t tensor_count,
                                               const std::uint64_t* scalars, std::size_t scalar_count) noexcept {
    if (!is_valid_prepared_view(view) || !is_valid_trusted_binding(binding)) return InvocationStatus::InvalidArgument;
    if ((tensors == nullptr && tensor_count != 0) || (scalars == nullptr && scalar_count != 0))
        return InvocationStatus::InvalidArgument;
    if (tensor_count != static_cast<std::size_t>(view.tensor_count) ||
        scalar_count != static_cast<std::size_t>(view.scalar_count))
        return InvocationStatus::InvalidCounts;
    return InvocationStatus::Ok;
}

// Encode into dst[0, dst_size); dst_size must be tmr_invocation_size(view counts). On failure
// dst may hold a partial image: callers encode into private storage they discard on failure.
inline InvocationStatus encode_tmr_invocation(const PreparedInvocationView& view, const TmrBindingRef& binding,
                                              const ChipTensor* tensors, std::size_t tensor_count,
                                              const std::uint64_t* scalars, std::size_t scalar_count,
                                              std::uint8_t* dst, std::size_t dst_size) noexcept {
    InvocationStatus s = check_encode_arguments(view, binding, tensors, tensor_count, scalars, scalar_count);
    if (s != InvocationStatus::Ok) return s;
    if (dst == nullptr || dst_size != tmr_invocation_size(view.tensor_count, view.scalar_count))
        return InvocationStatus::InvalidSize;
    make_tmr_prefix(view, binding, dst);
    for (std::size_t i = 0; i < tensor_count; ++i) {
        ChipTensor c;
        s = encode_chip_tensor(tensors[i], &c);
        if (s != InvocationStatus::Ok) return s;
        std::memcpy(dst + kTmrTensorsOffset + i * kChipTensorBytes, &c, sizeof c);
    }
    if (scalar_count != 0)
        std::memcpy(dst + tmr_scalars_offset(view.tensor_count), scalars, scalar_count * kTmrScalarBytes);
    return InvocationStatus::Ok;
}

// A decoded packet. It borrows the packet storage, which must stay alive and unchanged while
// the view is used; tensor() and scalar() copy out of it (the storage may be unaligned).
struct TmrInvocationView {
    InvocationHeader header{};
    TmrBindingRef binding{};
    ByteSpan packet{};

    std::int32_t tensor_count() const noexcept { return header.tensor_count; }
    std::int32_t scalar_count() const noexcept { return header.scalar_count; }
    ChipTensor tensor(std::size_t i) const noexcept {
        ChipTensor t;
        std::memset(&t, 0, sizeof t);
        if (i < static_cast<std::size_t>(header.tensor_count)) packet.read_at(kTmrTensorsOffset + i * kChipTensorBytes, &t);
        return t;
    }
    std::uint64_t scalar(std::size_t i) const noexcept {
        std::uint64_t v = 0;
        if (i < static_cast<std::size_t>(header.scalar_count))
            packet.read_at(tmr_scalars_offset(header.tensor_count) + i * kTmrScalarBytes, &v);
        return v;
    }
};

// Decode and validate a TMR packet against trusted metadata. Order: the trusted binding
// (InvalidArgument), the header (validate_invocation_header), the exact size from the trusted
// counts (InvalidSize), the binding ref (InvalidBinding), then every tensor: canonical image and
// semantics (InvalidTensor). *out is written only on Ok.
inline InvocationStatus decode_tmr_invocation(ByteSpan packet, const PreparedInvocationView& view,
                                              const TmrBindingRef& trusted_binding, TmrInvocationView* out) noexcept {
    if (out == nullptr || !is_valid_trusted_binding(trusted_binding)) return InvocationStatus::InvalidArgument;
    InvocationHeader h;
    InvocationStatus s = validate_invocation_header(packet, view, &h);
    if (s != InvocationStatus::Ok) return s;
    if (packet.size != tmr_invocation_size(view.tensor_count, view.scalar_count)) return InvocationStatus::InvalidSize;
    TmrBindingRef b;
    if (!packet.read_at(kTmrBindingOffset, &b)) return InvocationStatus::InvalidSize;
    if (!same_binding(b, trusted_binding)) return InvocationStatus::InvalidBinding;
    for (std::int32_t i = 0; i < h.tensor_count; ++i) {
        ChipTensor t;
        if (!packet.read_at(kTmrTensorsOffset + static_cast<std::size_t>(i) * kChipTensorBytes, &t))
            return InvocationStatus::InvalidSize;
        if (!chip_tensor_is_canonical(t)) return InvocationStatus::InvalidTensor;
        s = check_chip_tensor_semantics(t);
        if (s != InvocationStatus::Ok) return s;
    }
    out->header = h;
    out->binding = b;
    out->packet = packet;
    return InvocationStatus::Ok;
}

}  // namespace simpler
