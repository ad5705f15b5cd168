// ChipTensor: the 128-byte tensor descriptor that kernels receive and TMR packets carry (WIRE.md).
//
// Consumers: the TMR codec (packets), the simulated chip (kernel args[i] is a ChipTensor*), the
// tile library (element addressing and bounds) and generated kernels. Defined once here so host
// encoders and device consumers cannot disagree about a byte.
//
// Element address: buffer.addr + (start_offset + sum(idx[i] * strides[i])) * elem_size.
// Fields marked "zero in a packet" are runtime bookkeeping: the encoder clears them and the
// decoder rejects a packet that sets them, so a packet has exactly one byte image per tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "simpler/wire/data_type.hpp"
#include "simpler/wire/status.hpp"

namespace simpler {

enum class AddressSpace : std::uint8_t {
    HOST = 0,
    DEVICE = 1,
};

inline constexpr std::uint32_t kMaxTensorDims = 5;

struct ChipBuffer {
    std::uint64_t addr;  // byte address of the backing allocation
    std::uint64_t size;  // bytes of the backing allocation
};

struct alignas(64) ChipTensor {
    ChipBuffer buffer;
    std::uint64_t owner_task_id;             // zero in a packet
    std::uint64_t start_offset;              // elements
    std::int32_t version;                    // zero in a packet
    std::uint32_t ndims;                     // 1..kMaxTensorDims
    std::uint8_t dtype;                      // DataType code
    std::uint8_t manual_dep;                 // zero in a packet
    std::uint8_t is_contiguous;              // zero in a packet
    std::uint8_t address_space;              // AddressSpace; DEVICE in a packet
    std::uint32_t shapes[kMaxTensorDims];    // unused dims zero
    std::uint64_t extent_elem_cache;         // zero in a packet
    std::uint32_t strides[kMaxTensorDims];   // elements, > 0 for nonempty tensors; unused dims zero
    std::uint8_t padding[36];                // zero
};

inline constexpr std::size_t kChipTensorBytes = 128;

static_assert(sizeof(ChipTensor) == kChipTensorBytes, "wire ABI changed: ChipTensor size");
static_assert(alignof(ChipTensor) == 64, "wire ABI changed: ChipTensor alignment");
static_assert(offsetof(ChipTensor, buffer) + offsetof(ChipBuffer, addr) == 0, "wire ABI changed: ChipTensor.buffer.addr");
static_assert(offsetof(ChipTensor, buffer) + offsetof(ChipBuffer, size) == 8, "wire ABI changed: ChipTensor.buffer.size");
static_assert(offsetof(ChipTensor, owner_task_id) == 16, "wire ABI changed: ChipTensor.owner_task_id");
static_assert(offsetof(ChipTensor, start_offset) == 24, "wire ABI changed: ChipTensor.start_offset");
static_assert(offsetof(ChipTensor, version) == 32, "wire ABI changed: ChipTensor.version");
static_assert(offsetof(ChipTensor, ndims) == 36, "wire ABI changed: ChipTensor.ndims");
static_assert(offsetof(ChipTensor, dtype) == 40, "wire ABI changed: ChipTensor.dtype");
static_assert(offsetof(ChipTensor, manual_dep) == 41, "wire ABI changed: ChipTensor.manual_dep");
static_assert(offsetof(ChipTensor, is_contiguous) == 42, "wire ABI changed: ChipTensor.is_contiguous");
static_assert(offsetof(ChipTensor, address_space) == 43, "wire ABI changed: ChipTensor.address_space");
static_assert(offsetof(ChipTensor, shapes) == 44, "wire ABI changed: ChipTensor.shapes");
static_assert(offsetof(ChipTensor, extent_elem_cache) == 64, "wire ABI changed: ChipTensor.extent_elem_cache");
static_assert(offsetof(ChipTensor, strides) == 72, "wire ABI changed: ChipTensor.strides");
static_assert(offsetof(ChipTensor, padding) == 92, "wire ABI changed: ChipTensor.padding");
static_assert(std::is_trivially_copyable_v<ChipTensor>, "wire ABI changed: ChipTensor must be plain data");
static_assert(std::is_standard_layout_v<ChipTensor>, "wire ABI changed: ChipTensor must be standard layout");

// True when some used dimension is 0: the tensor accesses no element.
inline bool chip_tensor_is_empty(const ChipTensor& t) noexcept {
    const std::uint32_t n = t.ndims < kMaxTensorDims ? t.ndims : kMaxTensorDims;
    for (std::uint32_t i = 0; i < n; ++i)
        if (t.shapes[i] == 0) return true;
    return false;
}

// Elements spanned by a nonempty tensor: 1 + sum((shape[i] - 1) * stride[i]). False on overflow.
inline bool chip_tensor_extent(const ChipTensor& t, std::uint64_t* extent) noexcept {
    if (t.ndims == 0 || t.ndims > kMaxTensorDims) return false;
    std::uint64_t e = 1;
    for (std::uint32_t i = 0; i < t.ndims; ++i) {
        if (t.shapes[i] == 0) return false;
        std::uint64_t term = 0;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(t.shapes[i] - 1), static_cast<std::uint64_t>(t.strides[i]), &term))
            return false;
        if (__builtin_add_overflow(e, term, &e)) return false;
    }
    *extent = e;
    return true;
}

// The checks every descriptor in a packet passes, apart from the canonical-zero fields:
// Device address space, known dtype, rank 1..5, and for a nonempty tensor nonzero strides,
// a nonzero address and start_offset + extent elements inside the backing (overflow-checked).
// An empty tensor accesses nothing, so its address, strides and backing are not checked.
inline InvocationStatus check_chip_tensor_semantics(const ChipTensor& t) noexcept {
    if (t.address_space != static_cast<std::uint8_t>(AddressSpace::DEVICE)) return InvocationStatus::InvalidTensor;
    if (!is_known_dtype(t.dtype)) return InvocationStatus::InvalidTensor;
    if (t.ndims < 1 || t.ndims > kMaxTensorDims) return InvocationStatus::InvalidTensor;
    // One pass over the dimensions; the verdict waits until emptiness is known.
    bool empty = false, bad = false;
    std::uint64_t extent = 1;
    for (std::uint32_t i = 0; i < t.ndims; ++i) {
        const std::uint64_t shape = t.shapes[i], stride = t.strides[i];
        std::uint64_t term = 0;
        empty |= shape == 0;
        bad |= stride == 0;
        bad |= __builtin_mul_overflow(shape - 1, stride, &term);
        bad |= __builtin_add_overflow(extent, term, &extent);
    }
    if (empty) return InvocationStatus::Ok;
    std::uint64_t end = 0, end_bits = 0, size_bits = 0, last = 0;
    bad |= t.buffer.addr == 0;
    bad |= __builtin_add_overflow(t.start_offset, extent, &end);
    bad |= __builtin_mul_overflow(end, static_cast<std::uint64_t>(dtype_bits(t.dtype)), &end_bits);
    if (__builtin_mul_overflow(t.buffer.size, std::uint64_t{8}, &size_bits)) size_bits = UINT64_MAX;
    bad |= end_bits > size_bits;
    // The last byte touched must be addressable: addr + ceil(end_bits / 8) must not wrap.
    bad |= __builtin_add_overflow(t.buffer.addr, end_bits / 8 + (end_bits % 8 != 0), &last);
    return bad ? InvocationStatus::InvalidTensor : InvocationStatus::Ok;
}

// The packet image of `in`: identity fields copied, everything else (bookkeeping, unused dims,
// padding) zero. Identity = address, backing size, start offset, rank, dtype, address space and
// the used shapes and strides. `in.ndims` must already be in 1..kMaxTensorDims.
inline void canonicalize_chip_tensor(const ChipTensor& in, ChipTensor* out) noexcept {
    std::memset(out, 0, sizeof(ChipTensor));
    out->buffer = in.buffer;
    out->start_offset = in.start_offset;
    out->ndims = in.ndims;
    out->dtype = in.dtype;
    out->address_space = in.address_space;
    const std::uint32_t n = in.ndims < kMaxTensorDims ? in.ndims : kMaxTensorDims;
    for (std::uint32_t i = 0; i < n; ++i) {
        out->shapes[i] = in.shapes[i];
        out->strides[i] = in.strides[i];
    }
}

// True when `t` is its own canonical image (what a decoder requires of packet bytes): rank in
// 1..kMaxTensorDims and every field outside the identity (bookkeeping, unused dims, padding) zero.
inline bool chip_tensor_is_canonical(const ChipTensor& t) noexcept {
    if (t.ndims < 1 || t.ndims > kMaxTensorDims) return false;
    if (t.owner_task_id != 0 || t.version != 0 || t.manual_dep != 0 || t.is_contiguous != 0 || t.extent_elem_cache != 0)
        return false;
    for (std::uint32_t i = t.ndims; i < kMaxTensorDims; ++i)
        if (t.shapes[i] != 0 || t.strides[i] != 0) return false;
    static constexpr std::uint8_t kZero[sizeof t.padding] = {};
    return std::memcmp(t.padding, kZero, sizeof t.padding) == 0;
}

// Bytes from buffer.addr to one past the last byte a nonempty tensor may touch:
// ceil((start_offset + extent) * bits / 8). 0 for an empty tensor or when it overflows.
inline std::uint64_t chip_tensor_span_bytes(const ChipTensor& t) noexcept {
    std::uint64_t extent = 0, end = 0, end_bits = 0;
    if (chip_tensor_is_empty(t) || !chip_tensor_extent(t, &extent)) return 0;
    if (__builtin_add_overflow(t.start_offset, extent, &end)) return 0;
    if (__builtin_mul_overflow(end, static_cast<std::uint64_t>(dtype_bits(t.dtype)), &end_bits)) return 0;
    return end_bits / 8 + (end_bits % 8 != 0);
}

// Why a caller tensor cannot go into a packet (the first failing rule, naming the field and the
// allowed range), or nullptr when encode_chip_tensor would accept it. For error messages only:
// the codec's verdict is check_chip_tensor_semantics().
inline const char* chip_tensor_problem(const ChipTensor& t) noexcept {
    if (t.address_space != static_cast<std::uint8_t>(AddressSpace::DEVICE))
        return "address_space must be DEVICE (1): packets carry device descriptors only";
    if (!is_known_dtype(t.dtype)) return "dtype must be a known DataType code (0..14)";
    if (t.ndims < 1 || t.ndims > kMaxTensorDims) return "ndims must be 1..5";
    if (chip_tensor_is_empty(t)) return nullptr;
    for (std::uint32_t i = 0; i < t.ndims; ++i)
        if (t.strides[i] == 0) return "strides must be > 0 for a nonempty tensor";
    if (t.buffer.addr == 0) return "buffer.addr must be nonzero for a nonempty tensor";
    if (chip_tensor_span_bytes(t) == 0) return "shapes, strides and start_offset overflow 64-bit element arithmetic";
    if (check_chip_tensor_semantics(t) != InvocationStatus::Ok)
        return "start_offset + extent must fit buffer.size (and the address range must not wrap)";
    return nullptr;
}

// The throwing form for entry points: InvocationError(InvalidTensor) naming `what` and the rule.
inline void validate_chip_tensor(const ChipTensor& t, const std::string& what) {
    if (const char* problem = chip_tensor_problem(t)) throw InvocationError(InvocationStatus::InvalidTensor, what + ": " + problem);
}

// Same geometry and backing (everything in the packet image except the address).
inline bool chip_tensor_same_structure(const ChipTensor& a, const ChipTensor& b) noexcept {
    if (a.ndims != b.ndims || a.dtype != b.dtype || a.address_space != b.address_space ||
        a.buffer.size != b.buffer.size || a.start_offset != b.start_offset || a.ndims > kMaxTensorDims)
        return false;
    for (std::uint32_t i = 0; i < a.ndims; ++i)
        if (a.shapes[i] != b.shapes[i] || a.strides[i] != b.strides[i]) return false;
    return true;
}

}  // namespace simpler
