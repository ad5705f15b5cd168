// InvocationHeader: the 40-byte header that opens every kernel-invocation packet (WIRE.md).
//
// Shared by the TMR payload (simpler/wire/tmr_packet.hpp) and any other runtime payload (HBG):
// validate_invocation_header() in simpler/wire/prepared_view.hpp checks it without reading the
// payload. Lives here so producers (host encoders) and consumers (AICPU) share one definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace simpler {

enum class ExecutionMode : std::uint32_t {
    PROGRAM = 0,
    KERNEL = 1,
};

inline constexpr std::int32_t kMaxCallables = 64;   // registered-callable cap; ids are 0..63
inline constexpr std::int32_t kMaxTensors = 256;    // tensors per invocation
inline constexpr std::int32_t kMaxScalars = 128;    // scalars per invocation
inline constexpr std::int32_t kMaxArguments = 256;  // tensors + scalars per invocation

struct InvocationHeader {
    std::uint32_t mode;                    // ExecutionMode; KERNEL in a kernel packet
    std::int32_t callable_id;              // 0 <= id < kMaxCallables
    std::uint64_t generation;              // callable slot residency generation; live slots start at 1
    std::uint64_t payload_bytes;           // bytes after the header == packet size - 40
    std::int32_t tensor_count;             // 0..kMaxTensors
    std::int32_t scalar_count;             // 0..kMaxScalars, tensor_count + scalar_count <= kMaxArguments
    std::int32_t host_copy_tensor_count;   // must be 0
    std::uint32_t reserved;                // must be 0
};

inline constexpr std::size_t kInvocationHeaderBytes = 40;

static_assert(sizeof(InvocationHeader) == kInvocationHeaderBytes, "wire ABI changed: InvocationHeader size");
static_assert(offsetof(InvocationHeader, mode) == 0, "wire ABI changed: InvocationHeader.mode");
static_assert(offsetof(InvocationHeader, callable_id) == 4, "wire ABI changed: InvocationHeader.callable_id");
static_assert(offsetof(InvocationHeader, generation) == 8, "wire ABI changed: InvocationHeader.generation");
static_assert(offsetof(InvocationHeader, payload_bytes) == 16, "wire ABI changed: InvocationHeader.payload_bytes");
static_assert(offsetof(InvocationHeader, tensor_count) == 24, "wire ABI changed: InvocationHeader.tensor_count");
static_assert(offsetof(InvocationHeader, scalar_count) == 28, "wire ABI changed: InvocationHeader.scalar_count");
static_assert(offsetof(InvocationHeader, host_copy_tensor_count) == 32,
              "wire ABI changed: InvocationHeader.host_copy_tensor_count");
static_assert(offsetof(InvocationHeader, reserved) == 36, "wire ABI changed: InvocationHeader.reserved");
static_assert(std::is_trivially_copyable_v<InvocationHeader>, "wire ABI changed: InvocationHeader must be plain data");
static_assert(std::is_standard_layout_v<InvocationHeader>, "wire ABI changed: InvocationHeader must be standard layout");

// Counts a header may carry at all (before comparing with a trusted view).
inline constexpr bool invocation_counts_in_limits(std::int64_t tensors, std::int64_t scalars) noexcept {
    return tensors >= 0 && tensors <= kMaxTensors && scalars >= 0 && scalars <= kMaxScalars &&
           tensors + scalars <= kMaxArguments;
}

inline constexpr bool callable_id_in_range(std::int64_t id) noexcept { return id >= 0 && id < kMaxCallables; }

}  // namespace simpler
