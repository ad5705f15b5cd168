// Shared by the probe's host and device parts: the test callables, result slots and the
// checksum both sides compute over decoded descriptors and scalar bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/prepared_view.hpp"

namespace probe {

inline constexpr std::size_t kPackets = 24;
inline constexpr std::size_t kNegativeControls = 2;  // a stale binding, a truncated packet
inline constexpr std::size_t kSlots = kPackets + kNegativeControls;
inline constexpr std::uint64_t kSentinelChecksum = 0xFA11FA11FA11FA11ull;
inline constexpr std::int32_t kSentinelStatus = -1;

// Three callables: no arguments, one tensor and one scalar, and the maximum tensor count.
inline constexpr simpler::PreparedInvocationView kCallables[3] = {
    {0, 0, 0, 1},
    {1, 1, 1, 1},
    {2, simpler::kMaxTensors, 0, 1},
};

struct ResultSlot {
    std::uint64_t checksum = kSentinelChecksum;  // of the decoded descriptors and scalars
    std::int32_t status = kSentinelStatus;       // InvocationStatus of the device-side consume
};

// FNV-1a over the callable id, the canonical descriptor bytes and the scalar bits.
inline std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

inline std::uint64_t invocation_checksum(std::int32_t callable_id, const simpler::ChipTensor* tensors,
                                         std::size_t tensor_count, const std::uint64_t* scalars,
                                         std::size_t scalar_count) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, &callable_id, sizeof callable_id);
    h = fnv1a(h, tensors, tensor_count * sizeof(simpler::ChipTensor));
    h = fnv1a(h, scalars, scalar_count * sizeof(std::uint64_t));
    return h;
}

}  // namespace probe
