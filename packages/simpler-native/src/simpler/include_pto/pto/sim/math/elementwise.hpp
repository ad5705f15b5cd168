// Element-wise vector ops on Vec tiles: tile-tile and tile-scalar add/sub/mul/div/max/min, the
// unary exp, log, sin, cos, sqrt, rsqrt, recip, abs, neg, relu, fmod/fmods (C's fmod, floats),
// and the leaky ReLUs lrelu
// (scalar slope) and prelu (a slope tile): x > 0 ? x : slope * x (floating-point tiles).
//
// Shape rule: the operands' valid shapes must be equal; the result's valid shape is theirs and
// must fit the destination's static shape (else reported, destination untouched). Only the valid
// region is computed. dst may be one of the operands (in-place). Static shapes may differ.
//
// Arithmetic is done in compute_t<T>: float for half/bfloat16 (one rounding back to T per op,
// nearest even), T otherwise. Integer add/sub/mul/neg/abs wrap (two's complement); integer
// division truncates toward zero and a zero divisor gives 0 and reports an error. max/min
// return NaN when either operand is NaN. A scalar operand has type compute_t<T> (a float for a
// half tile; it is not rounded to half first).
#pragma once

#include <cmath>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/dtype.hpp"
#include "pto/sim/math/common.hpp"
#include "pto/sim/math/exp.hpp"

namespace pto {
namespace sim {
namespace math {

namespace detail {

template <class X>
inline constexpr bool is_vec_v = X::space == Space::Vec;

template <class T>
using wrap_t = std::conditional_t<is_int_v<T> && (sizeof(T) >= 4), std::make_unsigned_t<std::conditional_t<is_int_v<T>, T, int>>, T>;

template <class C>
inline C op_add(C a, C b) noexcept {
    using W = wrap_t<C>;
    return static_cast<C>(static_cast<W>(a) + static_cast<W>(b));
}
template <class C>
inline C op_sub(C a, C b) noexcept {
    using W = wrap_t<C>;
    return static_cast<C>(static_cast<W>(a) - static_cast<W>(b));
}
template <class C>
inline C op_mul(C a, C b) noexcept {
    using W = wrap_t<C>;
    return static_cast<C>(static_cast<W>(a) * static_cast<W>(b));
}
template <class C>
inline C op_max(C a, C b) noexcept {
    return (a > b || a != a) ? a : b;
}
template <class C>
inline C op_min(C a, C b) noexcept {
    return (a < b || a != a) ? a : b;
}
template <class C>
inline C op_div(C a, C b, bool* div_zero) noexcept {
    if constexpr (std::is_integral<C>::value) {
        if (b == 0) {
            *div_zero = true;
            return C(0);
        }
        if (std::is_signed<C>::value && b == C(-1)) return op_sub(C(0), a);  // no INT_MIN / -1 trap
        return static_cast<C>(a / b);
    } else {
        (void)div_zero;
        return a / b;
    }
}

template <class T>
inline void require_arith() noexcept {
    static_assert(!std::is_same<T, bool>::value, "tile arithmetic is not defined on bool tiles");
}

// dst[r, c] = f(a[r, c], b[r, c]) over the common valid shape.
template <class Dst, class A, class B, class F>
inline bool map2(const char* op, Dst& dst, const A& a, const B& b, F f) noexcept {
    static_assert(is_vec_v<Dst> && is_vec_v<A> && is_vec_v<B>, "element-wise ops take Vec tiles");
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename A::value_type>::value && std::is_same<T, typename B::value_type>::value,
                  "element-wise ops need one element type (use cast first)");
    require_arith<T>();
    if (!operands_ok(op, a, b) || !same_valid(op, a, b) || !fits(op, dst, a.valid_rows, a.valid_cols)) return false;
    const int vr = a.valid_rows, vc = a.valid_cols;
    // Whole rows of three tiles of one width are one contiguous run: a single loop.
    const bool flat = vc == Dst::cols && vc == A::cols && vc == B::cols;
    const int nr = flat ? 1 : vr, nc = flat ? vr * vc : vc;
    for (int r = 0; r < nr; ++r) {
        T* d = dst.row(r);
        const T* x = a.row(r);
        const T* y = b.row(r);
        for_cols(nc, [&](int c) { d[c] = from_compute<T>(f(to_compute(x[c]), to_compute(y[c]))); });
    }
    dst.valid_rows = vr;
    dst.valid_cols = vc;
    return true;
}

// dst[r, c] = f(a[r, c]) over a's valid shape.
template <class Dst, class A, class F>
inline bool map1(const char* op, Dst& dst, const A& a, F f) noexcept {
    static_assert(is_vec_v<Dst> && is_vec_v<A>, "element-wise ops take Vec tiles");
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename A::value_type>::value, "element-wise ops need one element type (use cast first)");
    require_arith<T>();
    if (!operands_ok(op, a) || !fits(op, dst, a.valid_rows, a.valid_cols)) return false;
    const int vr = a.valid_rows, vc = a.valid_cols;
    const bool flat = vc == Dst::cols && vc == A::cols;  // one contiguous run, as in map2
    const int nr = flat ? 1 : vr, nc = flat ? vr * vc : vc;
    for (int r = 0; r < nr; ++r) {
        T* d = dst.row(r);
        const T* x = a.row(r);
        if constexpr (has_run_v<F> && std::is_same<T, float>::value)
            F::run(d, x, nc);  // the same values, a run at a time (exp.hpp)
        else
            for_cols(nc, [&](int c) { d[c] = from_compute<T>(f(to_compute(x[c]))); });
    }
    dst.valid_rows = vr;
    dst.valid_cols = vc;
    return true;
}

template <class T>
inline void require_float(const char*) noexcept {
    static_assert(is_float_like_v<T>, "this op needs a floating-point tile (float, half or bfloat16)");
}

}  // namespace detail

// ---- tile-tile binary ops: dst = a (op) b --------------------------------------------------

#define PTO_SIM_MATH_BINARY(NAME, EXPR)                                                               \
    template <class Dst, class A, class B, std::enable_if_t<is_tile<B>::value, int> = 0>              \
    inline bool NAME(Dst& dst, const A& a, const B& b) noexcept {                                      \
        using C = compute_t<typename Dst::value_type>;                                                 \
        return detail::map2(#NAME, dst, a, b, [](C x, C y) noexcept { return EXPR; });               \
    }                                                                                                 \
    template <class Dst, class A>                                                                      \
    inline bool NAME##s(Dst& dst, const A& a, compute_t<typename Dst::value_type> s) noexcept {        \
        using C = compute_t<typename Dst::value_type>;                                                 \
        static_assert(detail::is_vec_v<Dst>, "element-wise ops take Vec tiles");                      \
        return detail::map1(#NAME "s", dst, a, [s](C x) noexcept {                                     \
            const C y = s;                                                                             \
            return EXPR;                                                                               \
        });                                                                                           \
    }                                                                                                 \
    template <class Dst, class A>                                                                      \
    inline bool NAME(Dst& dst, const A& a, compute_t<typename Dst::value_type> s) noexcept {           \
        return NAME##s(dst, a, s);                                                                     \
    }

PTO_SIM_MATH_BINARY(add, detail::op_add<C>(x, y))
PTO_SIM_MATH_BINARY(sub, detail::op_sub<C>(x, y))
PTO_SIM_MATH_BINARY(mul, detail::op_mul<C>(x, y))
PTO_SIM_MATH_BINARY(max, detail::op_max<C>(x, y))
PTO_SIM_MATH_BINARY(min, detail::op_min<C>(x, y))
#undef PTO_SIM_MATH_BINARY

// Division: integer division by zero yields 0 and is reported (once per call).
template <class Dst, class A, class B, std::enable_if_t<is_tile<B>::value, int> = 0>
inline bool div(Dst& dst, const A& a, const B& b) noexcept {
    using C = compute_t<typename Dst::value_type>;
    bool zero = false;
    const bool ok = detail::map2("div", dst, a, b, [&zero](C x, C y) noexcept { return detail::op_div<C>(x, y, &zero); });
    if (zero) report_kernel_error("tile div: integer division by zero (result set to 0)");
    return ok;
}
template <class Dst, class A>
inline bool divs(Dst& dst, const A& a, compute_t<typename Dst::value_type> s) noexcept {
    using C = compute_t<typename Dst::value_type>;
    if constexpr (std::is_integral<C>::value) {
        if (s == 0) report_kernel_error("tile divs: integer division by zero (result set to 0)");
    }
    bool zero = false;
    return detail::map1("divs", dst, a, [s, &zero](C x) noexcept { return detail::op_div<C>(x, s, &zero); });
}
template <class Dst, class A>
inline bool div(Dst& dst, const A& a, compute_t<typename Dst::value_type> s) noexcept {
    return divs(dst, a, s);
}

// ---- unary ops: dst = f(a) ------------------------------------------------------------------

template <class Dst, class A>
inline bool exp(Dst& dst, const A& a) noexcept {
    detail::require_float<typename Dst::value_type>("exp");
    return detail::map1("exp", dst, a, detail::ExpFn{});
}
template <class Dst, class A>
inline bool log(Dst& dst, const A& a) noexcept {
    detail::require_float<typename Dst::value_type>("log");
    return detail::map1("log", dst, a, [](float x) noexcept { return std::log(x); });
}
template <class Dst, class A>
inline bool sin(Dst& dst, const A& a) noexcept {
    detail::require_float<typename Dst::value_type>("sin");
    return detail::map1("sin", dst, a, [](float x) noexcept { return std::sin(x); });
}
template <class Dst, class A>
inline bool cos(Dst& dst, const A& a) noexcept {
    detail::require_float<typename Dst::value_type>("cos");
    return detail::map1("cos", dst, a, [](float x) noexcept { return std::cos(x); });
}
template <class Dst, class A>
inline bool sqrt(Dst& dst, const A& a) noexcept {
    detail::require_float<typename Dst::value_type>("sqrt");
    return detail::map1("sqrt", dst, a, [](float x) noexcept { return std::sqrt(x); });
}
template <class Dst, class A>
inline bool rsqrt(Dst& dst, const A& a) noexcept {
    detail::require_float<typename Dst::value_type>("rsqrt");
    return detail::map1("rsqrt", dst, a, [](float x) noexcept { return 1.0f / std::sqrt(x); });
}
template <class Dst, class A>
inline bool recip(Dst& dst, const A& a) noexcept {
    detail::require_float<typename Dst::value_type>("recip");
    return detail::map1("recip", dst, a, [](float x) noexcept { return 1.0f / x; });
}
template <class Dst, class A>
inline bool abs(Dst& dst, const A& a) noexcept {
    using C = compute_t<typename Dst::value_type>;
    if constexpr (std::is_floating_point<C>::value) {
        return detail::map1("abs", dst, a, [](C x) noexcept { return std::fabs(x); });
    } else {
        return detail::map1("abs", dst, a, [](C x) noexcept { return x < C(0) ? detail::op_sub<C>(C(0), x) : x; });
    }
}
template <class Dst, class A>
inline bool neg(Dst& dst, const A& a) noexcept {
    using C = compute_t<typename Dst::value_type>;
    if constexpr (std::is_floating_point<C>::value) {
        return detail::map1("neg", dst, a, [](C x) noexcept { return -x; });
    } else {
        return detail::map1("neg", dst, a, [](C x) noexcept { return detail::op_sub<C>(C(0), x); });
    }
}
template <class Dst, class A>
inline bool relu(Dst& dst, const A& a) noexcept {
    using C = compute_t<typename Dst::value_type>;
    // NaN stays NaN (x > 0 is false for NaN, so compare the other way round).
    return detail::map1("relu", dst, a, [](C x) noexcept { return x < C(0) ? C(0) : x; });
}

// fmod: the remainder of a / b with the sign of a (C's fmod, torch.fmod); floating-point tiles.
template <class Dst, class A, class B, std::enable_if_t<is_tile<B>::value, int> = 0>
inline bool fmod(Dst& dst, const A& a, const B& b) noexcept {
    detail::require_float<typename Dst::value_type>("fmod");
    return detail::map2("fmod", dst, a, b, [](float x, float y) noexcept { return std::fmod(x, y); });
}
template <class Dst, class A>
inline bool fmods(Dst& dst, const A& a, compute_t<typename Dst::value_type> s) noexcept {
    detail::require_float<typename Dst::value_type>("fmods");
    return detail::map1("fmods", dst, a, [s](float x) noexcept { return std::fmod(x, static_cast<float>(s)); });
}

template <class Dst, class A>
inline bool lrelu(Dst& dst, const A& a, compute_t<typename Dst::value_type> slope) noexcept {
    detail::require_float<typename Dst::value_type>("lrelu");
    return detail::map1("lrelu", dst, a, [slope](float x) noexcept { return x > 0.0f ? x : x * slope; });
}
template <class Dst, class A, class S>
inline bool prelu(Dst& dst, const A& a, const S& slope) noexcept {
    detail::require_float<typename Dst::value_type>("prelu");
    return detail::map2("prelu", dst, a, slope, [](float x, float s) noexcept { return x > 0.0f ? x : x * s; });
}

}  // namespace math
}  // namespace sim
}  // namespace pto
