// The element-wise atomic add of multi-chip programs, shared by every writer of window memory:
// a kernel's own accesses (pto/sim: TSTORE with AtomicAdd, TPUT, ...) and the rank process
// applying a peer's host-path request (core/chip/comm_host.cpp). Every add to a cell is the same
// compare-and-swap on the element's bits, so concurrent adds from any of them never lose one
// another. 16-bit floats add in float and round once; integers wrap around.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "simpler/dtype.hpp"

namespace simpler {

// *p += v atomically (sequentially consistent). `p` must be aligned to sizeof(T).
template <class T>
inline void atomic_add(T* p, T v) noexcept {
    using Bits = std::conditional_t<
        sizeof(T) == 1, std::uint8_t,
        std::conditional_t<sizeof(T) == 2, std::uint16_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
    static_assert(sizeof(Bits) == sizeof(T), "atomic add: unsupported element size");
    // integers add in their unsigned type (wrapping, without signed overflow); floats in float
    using C = std::conditional_t<std::is_integral<T>::value, Bits,
                                 std::conditional_t<std::is_floating_point<T>::value, T, float>>;
    Bits* bp = reinterpret_cast<Bits*>(p);
    Bits old = __atomic_load_n(bp, __ATOMIC_RELAXED);
    for (;;) {
        T cur;
        std::memcpy(&cur, &old, sizeof cur);
        const T next = static_cast<T>(static_cast<C>(static_cast<C>(cur) + static_cast<C>(v)));
        Bits nb;
        std::memcpy(&nb, &next, sizeof nb);
        if (__atomic_compare_exchange_n(bp, &old, nb, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return;
    }
}

}  // namespace simpler
