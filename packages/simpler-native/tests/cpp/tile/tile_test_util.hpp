// Helpers shared by the tile tests: ChipTensor descriptors over host arrays and access to the
// kernel error channel.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>

#include "simpler/kernel_abi.hpp"
#include "simpler/tile.hpp"
#include "simpler/wire/chip_tensor.hpp"

namespace tiletest {

// A descriptor of `shape` with element `strides` over `base` (backing `bytes` long).
template <class T>
inline simpler::ChipTensor make_tensor(const T* base, std::uint64_t bytes, std::initializer_list<std::uint32_t> shape,
                                       std::initializer_list<std::uint32_t> strides, std::uint64_t start_offset = 0) {
    simpler::ChipTensor t;
    std::memset(&t, 0, sizeof t);
    t.buffer.addr = reinterpret_cast<std::uintptr_t>(base);
    t.buffer.size = bytes;
    t.start_offset = start_offset;
    t.ndims = static_cast<std::uint32_t>(shape.size());
    t.dtype = static_cast<std::uint8_t>(simpler::tile::dtype_v<T>);
    t.address_space = static_cast<std::uint8_t>(simpler::AddressSpace::DEVICE);
    int i = 0;
    for (std::uint32_t s : shape) t.shapes[i++] = s;
    i = 0;
    for (std::uint32_t s : strides) t.strides[i++] = s;
    return t;
}

// Row-major (compact) strides for `shape`.
template <class T>
inline simpler::ChipTensor compact(const T* base, std::uint64_t bytes, std::initializer_list<std::uint32_t> shape) {
    simpler::ChipTensor t = make_tensor(base, bytes, shape, {});
    std::uint32_t s = 1;
    for (int i = static_cast<int>(t.ndims) - 1; i >= 0; --i) {
        t.strides[i] = s;
        s *= t.shapes[i];
    }
    return t;
}

// Take the pending kernel error ("" if none), clearing the slot as the runtime does.
inline std::string take_error() {
    simpler::KernelErrorSlot& slot = simpler::kernel_error_slot();
    if (!slot.set) return std::string();
    slot.set = false;
    return std::string(slot.message);
}

// Deterministic pseudo-random numbers (xorshift), so failures reproduce.
struct Rng {
    std::uint64_t s = 0x9e3779b97f4a7c15ull;
    std::uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) / 16777216.0f; }
    int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
};

}  // namespace tiletest
