// Bitwise ops on integer Vec tiles: and_, or_, xor_, not_, shl, shr and their tile-scalar forms
// ands, ors, xors, shls, shrs.
//
// Shape rule as in elementwise.hpp: equal operand valid shapes, the result takes them, only the
// valid region is computed, dst may be an operand. Element types must be integers (int8 ..
// int64, uint8 .. uint64); a floating-point tile is a compile error.
//
// Shifts: shl shifts left, filling with zeros (the bits shifted out are lost, as in the unsigned
// type of the same width); shr shifts a signed element arithmetically (the sign is copied in)
// and an unsigned one logically. A shift amount outside [0, bits of the type) is reported
// through the kernel error channel and that element becomes 0.
#pragma once

#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/dtype.hpp"
#include "pto/sim/math/elementwise.hpp"
#include "pto/sim/math/common.hpp"

namespace pto {
namespace sim {
namespace math {

namespace detail {

template <class T>
inline void require_int() noexcept {
    static_assert(is_int_v<T>, "bitwise ops need an integer tile (int8..int64, uint8..uint64)");
}

template <class T>
inline T shift_left(T x, T n, bool* bad) noexcept {
    constexpr T bits = static_cast<T>(sizeof(T) * 8);
    if (n < T(0) || n >= bits) {
        *bad = true;
        return T(0);
    }
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(x) << static_cast<unsigned>(n)));
}

template <class T>
inline T shift_right(T x, T n, bool* bad) noexcept {
    constexpr T bits = static_cast<T>(sizeof(T) * 8);
    if (n < T(0) || n >= bits) {
        *bad = true;
        return T(0);
    }
    return static_cast<T>(x >> static_cast<unsigned>(n));  // arithmetic for signed T on GCC and Clang
}

}  // namespace detail

#define PTO_SIM_MATH_BITWISE(NAME, SNAME, EXPR)                                                     \
    template <class Dst, class A, class B, std::enable_if_t<is_tile<B>::value, int> = 0>            \
    inline bool NAME(Dst& dst, const A& a, const B& b) noexcept {                                    \
        using T = typename Dst::value_type;                                                          \
        detail::require_int<T>();                                                                    \
        return detail::map2(#NAME, dst, a, b, [](T x, T y) noexcept { return static_cast<T>(EXPR); }); \
    }                                                                                               \
    template <class Dst, class A>                                                                    \
    inline bool SNAME(Dst& dst, const A& a, typename Dst::value_type s) noexcept {                   \
        using T = typename Dst::value_type;                                                          \
        detail::require_int<T>();                                                                    \
        return detail::map1(#SNAME, dst, a, [s](T x) noexcept {                                      \
            const T y = s;                                                                           \
            return static_cast<T>(EXPR);                                                             \
        });                                                                                         \
    }

PTO_SIM_MATH_BITWISE(and_, ands, x & y)
PTO_SIM_MATH_BITWISE(or_, ors, x | y)
PTO_SIM_MATH_BITWISE(xor_, xors, x ^ y)
#undef PTO_SIM_MATH_BITWISE

template <class Dst, class A>
inline bool not_(Dst& dst, const A& a) noexcept {
    using T = typename Dst::value_type;
    detail::require_int<T>();
    return detail::map1("not_", dst, a, [](T x) noexcept { return static_cast<T>(~x); });
}

#define PTO_SIM_MATH_SHIFT(NAME, SNAME, FN)                                                          \
    template <class Dst, class A, class B, std::enable_if_t<is_tile<B>::value, int> = 0>             \
    inline bool NAME(Dst& dst, const A& a, const B& b) noexcept {                                     \
        using T = typename Dst::value_type;                                                           \
        detail::require_int<T>();                                                                     \
        bool bad = false;                                                                             \
        const bool ok = detail::map2(#NAME, dst, a, b, [&bad](T x, T n) noexcept { return FN(x, n, &bad); }); \
        if (bad) report_kernel_error("tile " #NAME ": shift amount outside [0, %d) (element set to 0)",     \
                                     static_cast<int>(sizeof(T) * 8));                                \
        return ok;                                                                                    \
    }                                                                                                \
    template <class Dst, class A>                                                                     \
    inline bool SNAME(Dst& dst, const A& a, typename Dst::value_type s) noexcept {                    \
        using T = typename Dst::value_type;                                                           \
        detail::require_int<T>();                                                                     \
        bool bad = false;                                                                             \
        const bool ok = detail::map1(#SNAME, dst, a, [s, &bad](T x) noexcept { return FN(x, s, &bad); }); \
        if (bad) report_kernel_error("tile " #SNAME ": shift amount outside [0, %d) (element set to 0)",    \
                                     static_cast<int>(sizeof(T) * 8));                                \
        return ok;                                                                                    \
    }

PTO_SIM_MATH_SHIFT(shl, shls, detail::shift_left<T>)
PTO_SIM_MATH_SHIFT(shr, shrs, detail::shift_right<T>)
#undef PTO_SIM_MATH_SHIFT

}  // namespace math
}  // namespace sim
}  // namespace pto
