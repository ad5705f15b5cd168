// TMR packet layout: header(40) | TmrBindingRef(16) | ChipTensor[T](128 each) | u64 scalars[S].
//
// The size is a function of the trusted counts only (tmr_invocation_size), never of a packet's
// own fields. The transport envelope (simpler/wire/transport.hpp) prefixes a u64 packet size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/invocation_header.hpp"

namespace simpler {

inline constexpr std::size_t kTmrBindingOffset = kInvocationHeaderBytes;
inline constexpr std::size_t kTmrTensorsOffset = kTmrBindingOffset + kTmrBindingRefBytes;
inline constexpr std::size_t kTmrFixedBytes = kTmrTensorsOffset;
inline constexpr std::size_t kTmrScalarBytes = sizeof(std::uint64_t);

static_assert(kTmrBindingOffset == 40 && kTmrTensorsOffset == 56, "wire ABI changed: TMR packet offsets");

// Bytes of a TMR packet with these counts; the counts must already be within the limits.
inline constexpr std::size_t tmr_invocation_size(std::int32_t tensors, std::int32_t scalars) noexcept {
    return kTmrFixedBytes + kChipTensorBytes * static_cast<std::size_t>(tensors) +
           kTmrScalarBytes * static_cast<std::size_t>(scalars);
}

inline constexpr std::size_t tmr_scalars_offset(std::int32_t tensors) noexcept {
    return kTmrTensorsOffset + kChipTensorBytes * static_cast<std::size_t>(tensors);
}

// Largest packet any count combination allows: every argument a tensor.
inline constexpr std::size_t kMaxTmrPacketBytes = tmr_invocation_size(kMaxArguments, 0);
static_assert(kMaxTmrPacketBytes == 32824, "wire ABI changed: maximum TMR packet size");
static_assert(tmr_invocation_size(0, 0) == 56 && tmr_invocation_size(1, 1) == 192,
              "wire ABI changed: TMR packet size formula");

}  // namespace simpler
