// Row reductions and broadcasts on Vec tiles.
//
// row_sum/row_max/row_min/row_prod(dst, src): dst[r, 0] = reduce(src[r, 0 .. valid_cols)); dst's valid
// shape becomes [src.valid_rows, 1]. Sums accumulate in float for floating tiles (eight running
// partial sums combined at the end, so the loop vectorizes) and in 64-bit integers for integer
// tiles; the result is converted to dst's element type with convert<>() (so an INT8 tile can be
// summed into an INT32 [rows, 1] tile). A row with valid_cols == 0 gives 0 for a sum, and for
// max/min the lowest/highest value of the type (-inf/+inf for floats).
//
// col_sum/col_max/col_min(dst, src): dst[0, c] = reduce(src[0 .. valid_rows, c]), summed row by
// row in order, in the same accumulator types; dst's valid shape becomes [1, src.valid_cols].
//
// row_expand(dst, src): dst[r, c] = src[r, 0]; dst keeps its valid_cols, valid_rows becomes
// src.valid_rows. row_expand_{add,sub,mul,div}(dst, a, s): dst[r, c] = a[r, c] (op) s[r, 0],
// with s.valid_rows == a.valid_rows; dst's valid shape becomes a's. An s with k > 1 valid
// columns is a packed carrier (upstream's 32-byte block a row): dst[r, c] = a[r, c] (op)
// s[r, c % k] (the compiler passes one only to row_expand_add).
// col_expand(dst, src): dst[r, c] = src[0, c]; dst keeps its valid_rows, valid_cols becomes
// src.valid_cols. col_expand_{add,sub,mul,div}(dst, a, s): dst[r, c] = a[r, c] (op) s[0, c], with
// s.valid_cols == a.valid_cols. The arithmetic is that of elementwise.hpp. The fused forms are
// add, sub, mul, div, max, min and expdif (exp(a - s), floating-point tiles only).
//
// row_argmax/row_argmin(dst, src) and col_argmax/col_argmin: the int32 index of the first
// maximum / minimum of each row ([rows, 1]) or column ([1, cols]); a NaN counts as the extreme
// (as torch.argmax/argmin); an empty row or column gives 0.
//
// row_prod/col_prod: the product of each row / column, in the accumulator types of the sums
// (integer products wrap in 64 bits before the conversion to dst's type).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
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
using reduce_acc_t = std::conditional_t<is_float_like_v<T>, float, std::conditional_t<std::is_signed<T>::value, std::int64_t, std::uint64_t>>;

enum class RowReduce { Sum, Max, Min, Prod };

template <RowReduce K, class A>
inline A reduce_identity() noexcept {
    if constexpr (K == RowReduce::Sum) {
        return A(0);
    } else if constexpr (K == RowReduce::Prod) {
        return A(1);
    } else if constexpr (std::is_floating_point<A>::value) {
        return K == RowReduce::Max ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    } else {
        return K == RowReduce::Max ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
    }
}

template <RowReduce K, class A>
inline A reduce_step(A acc, A x) noexcept {
    if constexpr (K == RowReduce::Sum) {
        return op_add<A>(acc, x);
    } else if constexpr (K == RowReduce::Prod) {
        return op_mul<A>(acc, x);
    } else if constexpr (K == RowReduce::Max) {
        return op_max<A>(acc, x);
    } else {
        return op_min<A>(acc, x);
    }
}

// out[r] = reduce(row r of x, n elements), rows `stride` elements apart, r in [0, NR): eight
// running partials a row (partial l takes columns l, l + 8, ... in order), then the partials in
// order, then the columns after the last whole group of eight. The NR rows are folded side by
// side: each partial is a chain of dependent steps, and NR rows give NR independent chains for
// the same order per row.
// Eight float lanes, and reduce_step on each lane (the max/min select by bit masks, which
// every compiler's vector extension has).
typedef float fold_f8 __attribute__((vector_size(32)));
typedef std::int32_t fold_i8 __attribute__((vector_size(32)));
// (By reference: a 32-byte vector passed by value changes the ABI between SSE and AVX builds.)
template <RowReduce K>
inline void fold_step8(fold_f8& p, const fold_f8& v) noexcept {
    if constexpr (K == RowReduce::Sum) {
        p = p + v;
    } else if constexpr (K == RowReduce::Prod) {
        p = p * v;
    } else {
        const fold_i8 keep = (K == RowReduce::Max ? p > v : p < v) | (p != p);  // lanes: 0 or -1
        p = (fold_f8)(((fold_i8)p & keep) | ((fold_i8)v & ~keep));
    }
}

template <RowReduce K, int NR, class A, class T>
inline void fold_rows(A* out, const T* x, int stride, int n) noexcept {
    constexpr int L = 8;
    A part[NR][L];
    int c = 0;
    if constexpr (std::is_same<A, float>::value) {  // the partials as one vector a row
        fold_f8 pv[NR];
        PTO_SIM_MATH_UNROLL
        for (int r = 0; r < NR; ++r) pv[r] = fold_f8{} + reduce_identity<K, A>();
        for (; c + L <= n; c += L) {
            PTO_SIM_MATH_UNROLL
            for (int r = 0; r < NR; ++r) {
                fold_f8 v = {};
                if constexpr (std::is_same<T, float>::value) {
                    __builtin_memcpy(&v, x + r * stride + c, sizeof v);
                } else {
                    for (int l = 0; l < L; ++l) v[l] = static_cast<float>(to_compute(x[r * stride + c + l]));
                }
                fold_step8<K>(pv[r], v);
            }
        }
        for (int r = 0; r < NR; ++r)
            for (int l = 0; l < L; ++l) part[r][l] = pv[r][l];
    } else {
        for (int r = 0; r < NR; ++r)
            for (int l = 0; l < L; ++l) part[r][l] = reduce_identity<K, A>();
        for (; c + L <= n; c += L)
            for (int r = 0; r < NR; ++r)
                for (int l = 0; l < L; ++l)
                    part[r][l] = reduce_step<K, A>(part[r][l], static_cast<A>(to_compute(x[r * stride + c + l])));
    }
    for (int r = 0; r < NR; ++r) {
        A acc = reduce_identity<K, A>();
        for (int l = 0; l < L; ++l) acc = reduce_step<K, A>(acc, part[r][l]);
        for (int k = c; k < n; ++k) acc = reduce_step<K, A>(acc, static_cast<A>(to_compute(x[r * stride + k])));
        out[r] = acc;
    }
}

template <RowReduce K, class Dst, class Src>
inline bool row_reduce(const char* op, Dst& dst, const Src& src) noexcept {
    static_assert(is_vec_v<Dst> && is_vec_v<Src>, "row reductions take Vec tiles");
    using T = typename Src::value_type;
    using D = typename Dst::value_type;
    using A = reduce_acc_t<T>;
    require_arith<T>();
    if (!operands_ok(op, src) || !fits(op, dst, src.valid_rows, 1)) return false;
    const int vr = src.valid_rows, vc = src.valid_cols;
    constexpr int kRows = 4;  // rows folded side by side (fold_rows)
    A acc[kRows];
    int r = 0;
    if constexpr (Src::rows >= kRows && Dst::rows >= kRows) {
        for (; r + kRows <= vr; r += kRows) {
            fold_rows<K, kRows, A>(acc, src.row(r), Src::cols, vc);
            for (int i = 0; i < kRows; ++i) dst(r + i, 0) = convert<D>(acc[i]);
        }
    }
    for (; r < vr; ++r) {
        fold_rows<K, 1, A>(acc, src.row(r), Src::cols, vc);
        dst(r, 0) = convert<D>(acc[0]);
    }
    dst.valid_rows = vr;
    dst.valid_cols = 1;
    return true;
}

// dst[0, c] = reduce(src[0 .. valid_rows, c]): rows are folded in order into a row of
// accumulators, so the column loop vectorizes.
template <RowReduce K, class Dst, class Src>
inline bool col_reduce(const char* op, Dst& dst, const Src& src) noexcept {
    static_assert(is_vec_v<Dst> && is_vec_v<Src>, "column reductions take Vec tiles");
    using T = typename Src::value_type;
    using D = typename Dst::value_type;
    using A = reduce_acc_t<T>;
    require_arith<T>();
    if (!operands_ok(op, src) || !fits(op, dst, 1, src.valid_cols)) return false;
    const int vr = src.valid_rows, vc = src.valid_cols;
    A acc[Src::cols < 16 ? 16 : Src::cols];  // at least one for_cols chunk: no bounds warning on narrow tiles
    for_cols(vc, [&](int c) { acc[c] = reduce_identity<K, A>(); });
    for (int r = 0; r < vr; ++r) {
        const T* x = src.row(r);
        for_cols(vc, [&](int c) { acc[c] = reduce_step<K, A>(acc[c], static_cast<A>(to_compute(x[c]))); });
    }
    D* d = dst.row(0);
    for (int c = 0; c < vc; ++c) d[c] = convert<D>(acc[c]);
    dst.valid_rows = 1;
    dst.valid_cols = vc;
    return true;
}

// dst[r, c] = f(a[r, c], s[r or 0, 0 or c]) over a's valid shape. Row: s is [rows, 1].
template <bool Row, class Dst, class A, class S, class F>
inline bool expand_op(const char* op, Dst& dst, const A& a, const S& s, F f) noexcept {
    static_assert(is_vec_v<Dst> && is_vec_v<A> && is_vec_v<S>, "expand ops take Vec tiles");
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename A::value_type>::value && std::is_same<T, typename S::value_type>::value,
                  "expand ops need one element type (use cast first)");
    require_arith<T>();
    if (!operands_ok(op, a, s)) return false;
    const int vr = a.valid_rows, vc = a.valid_cols;
    if (Row ? (s.valid_rows != vr || s.valid_cols < 1) : (s.valid_cols != vc || s.valid_rows < 1)) {
        report_kernel_error("tile %s: broadcast operand valid shape [%d, %d] does not match [%d, %d]", op,
                            s.valid_rows, s.valid_cols, Row ? vr : 1, Row ? 1 : vc);
        return false;
    }
    if (!fits(op, dst, vr, vc)) return false;
    using C = compute_t<T>;
    for (int r = 0; r < vr; ++r) {
        T* d = dst.row(r);
        const T* x = a.row(r);
        if (Row && s.valid_cols == 1) {
            const C y = to_compute(s(r, 0));
            if constexpr (has_run_v<F> && std::is_same<T, float>::value)
                F::run(d, x, y, vc);  // the same values, a run at a time (exp.hpp)
            else
                for_cols(vc, [&](int c) { d[c] = from_compute<T>(f(to_compute(x[c]), y)); });
        } else if (Row) {  // a packed block a row, repeated across the columns
            const T* y = s.row(r);
            const int k = s.valid_cols;
            for (int c = 0; c < vc; ++c) d[c] = from_compute<T>(f(to_compute(x[c]), to_compute(y[c % k])));
        } else {
            const T* y = s.row(0);
            for_cols(vc, [&](int c) { d[c] = from_compute<T>(f(to_compute(x[c]), to_compute(y[c]))); });
        }
    }
    dst.valid_rows = vr;
    dst.valid_cols = vc;
    return true;
}

}  // namespace detail

// row_sum/row_max/row_min/row_prod and col_sum/col_max/col_min/col_prod (dst, src).
#define PTO_SIM_MATH_REDUCE(NAME, WALK, KIND)                                     \
    template <class Dst, class Src>                                              \
    inline bool NAME(Dst& dst, const Src& src) noexcept {                        \
        return detail::WALK<detail::RowReduce::KIND>(#NAME, dst, src);           \
    }
PTO_SIM_MATH_REDUCE(row_sum, row_reduce, Sum)
PTO_SIM_MATH_REDUCE(row_max, row_reduce, Max)
PTO_SIM_MATH_REDUCE(row_min, row_reduce, Min)
PTO_SIM_MATH_REDUCE(row_prod, row_reduce, Prod)
PTO_SIM_MATH_REDUCE(col_sum, col_reduce, Sum)
PTO_SIM_MATH_REDUCE(col_max, col_reduce, Max)
PTO_SIM_MATH_REDUCE(col_min, col_reduce, Min)
PTO_SIM_MATH_REDUCE(col_prod, col_reduce, Prod)
#undef PTO_SIM_MATH_REDUCE

namespace detail {

// The index of the first maximum (Max) or minimum of n values read by at(i); a NaN counts as
// the extreme (its first occurrence wins), as torch.argmax/argmin do; 0 when n == 0.
template <bool Max, class At>
inline std::int32_t arg_extreme(int n, At at) noexcept {
    if (n <= 0) return 0;
    auto best = at(0);
    std::int32_t k = 0;
    if (best != best) return 0;
    for (int i = 1; i < n; ++i) {
        const auto v = at(i);
        if (v != v) return static_cast<std::int32_t>(i);
        if (Max ? v > best : v < best) {
            best = v;
            k = static_cast<std::int32_t>(i);
        }
    }
    return k;
}

template <bool Max, class Dst, class Src>
inline bool row_arg(const char* op, Dst& dst, const Src& src) noexcept {
    static_assert(is_vec_v<Dst> && is_vec_v<Src>, "arg reductions take Vec tiles");
    static_assert(std::is_same<typename Dst::value_type, std::int32_t>::value, "arg reductions give int32 indices");
    require_arith<typename Src::value_type>();
    if (!operands_ok(op, src) || !fits(op, dst, src.valid_rows, 1)) return false;
    const int vr = src.valid_rows, vc = src.valid_cols;
    for (int r = 0; r < vr; ++r) {
        const auto* x = src.row(r);
        dst(r, 0) = arg_extreme<Max>(vc, [x](int c) { return to_compute(x[c]); });
    }
    dst.valid_rows = vr;
    dst.valid_cols = 1;
    return true;
}

template <bool Max, class Dst, class Src>
inline bool col_arg(const char* op, Dst& dst, const Src& src) noexcept {
    static_assert(is_vec_v<Dst> && is_vec_v<Src>, "arg reductions take Vec tiles");
    static_assert(std::is_same<typename Dst::value_type, std::int32_t>::value, "arg reductions give int32 indices");
    require_arith<typename Src::value_type>();
    if (!operands_ok(op, src) || !fits(op, dst, 1, src.valid_cols)) return false;
    const int vr = src.valid_rows, vc = src.valid_cols;
    for (int c = 0; c < vc; ++c) dst(0, c) = arg_extreme<Max>(vr, [&src, c](int r) { return to_compute(src(r, c)); });
    dst.valid_rows = 1;
    dst.valid_cols = vc;
    return true;
}

}  // namespace detail

// row_argmax/row_argmin and col_argmax/col_argmin (dst, src).
#define PTO_SIM_MATH_ARG(NAME, WALK, MAX)                                        \
    template <class Dst, class Src>                                              \
    inline bool NAME(Dst& dst, const Src& src) noexcept {                        \
        return detail::WALK<MAX>(#NAME, dst, src);                               \
    }
PTO_SIM_MATH_ARG(row_argmax, row_arg, true)
PTO_SIM_MATH_ARG(row_argmin, row_arg, false)
PTO_SIM_MATH_ARG(col_argmax, col_arg, true)
PTO_SIM_MATH_ARG(col_argmin, col_arg, false)
#undef PTO_SIM_MATH_ARG

template <class Dst, class Src>
inline bool row_expand(Dst& dst, const Src& src) noexcept {
    static_assert(detail::is_vec_v<Dst> && detail::is_vec_v<Src>, "expand ops take Vec tiles");
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename Src::value_type>::value, "row_expand needs one element type");
    if (!detail::operands_ok("row_expand", src, dst)) return false;
    const int vr = src.valid_rows, vc = dst.valid_cols;
    if (src.valid_cols < 1 && vr > 0) {
        report_kernel_error("tile row_expand: source valid shape [%d, %d] has no column", vr, src.valid_cols);
        return false;
    }
    if (!detail::fits("row_expand", dst, vr, vc)) return false;
    for (int r = 0; r < vr; ++r) {
        T* d = dst.row(r);
        const T v = src(r, 0);
        detail::for_cols(vc, [&](int c) { d[c] = v; });
    }
    dst.valid_rows = vr;
    return true;
}

template <class Dst, class Src>
inline bool col_expand(Dst& dst, const Src& src) noexcept {
    static_assert(detail::is_vec_v<Dst> && detail::is_vec_v<Src>, "expand ops take Vec tiles");
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename Src::value_type>::value, "col_expand needs one element type");
    if (!detail::operands_ok("col_expand", src, dst)) return false;
    const int vr = dst.valid_rows, vc = src.valid_cols;
    if (src.valid_rows < 1 && vc > 0) {
        report_kernel_error("tile col_expand: source valid shape [%d, %d] has no row", src.valid_rows, vc);
        return false;
    }
    if (!detail::fits("col_expand", dst, vr, vc)) return false;
    const T* s = src.row(0);
    for (int r = 0; r < vr; ++r) {
        T* d = dst.row(r);
        detail::for_cols(vc, [&](int c) { d[c] = s[c]; });
    }
    dst.valid_cols = vc;
    return true;
}

#define PTO_SIM_MATH_EXPAND(NAME, EXPR)                                                                       \
    template <class Dst, class A, class S>                                                                     \
    inline bool row_expand_##NAME(Dst& dst, const A& a, const S& s) noexcept {                                \
        using C = compute_t<typename Dst::value_type>;                                                        \
        return detail::expand_op<true>("row_expand_" #NAME, dst, a, s, [](C x, C y) noexcept { return EXPR; }); \
    }                                                                                                         \
    template <class Dst, class A, class S>                                                                     \
    inline bool col_expand_##NAME(Dst& dst, const A& a, const S& s) noexcept {                                \
        using C = compute_t<typename Dst::value_type>;                                                        \
        return detail::expand_op<false>("col_expand_" #NAME, dst, a, s, [](C x, C y) noexcept { return EXPR; }); \
    }

PTO_SIM_MATH_EXPAND(add, detail::op_add<C>(x, y))
PTO_SIM_MATH_EXPAND(sub, detail::op_sub<C>(x, y))
PTO_SIM_MATH_EXPAND(mul, detail::op_mul<C>(x, y))
PTO_SIM_MATH_EXPAND(max, detail::op_max<C>(x, y))
PTO_SIM_MATH_EXPAND(min, detail::op_min<C>(x, y))
#undef PTO_SIM_MATH_EXPAND

// exp(a - s), the softmax step: floating-point tiles only.
template <class Dst, class A, class S>
inline bool row_expand_expdif(Dst& dst, const A& a, const S& s) noexcept {
    detail::require_float<typename Dst::value_type>("row_expand_expdif");
    return detail::expand_op<true>("row_expand_expdif", dst, a, s, detail::ExpDifFn{});
}
template <class Dst, class A, class S>
inline bool col_expand_expdif(Dst& dst, const A& a, const S& s) noexcept {
    detail::require_float<typename Dst::value_type>("col_expand_expdif");
    return detail::expand_op<false>("col_expand_expdif", dst, a, s, detail::ExpDifFn{});
}

template <class Dst, class A, class S>
inline bool row_expand_div(Dst& dst, const A& a, const S& s) noexcept {
    using C = compute_t<typename Dst::value_type>;
    bool zero = false;
    const bool ok = detail::expand_op<true>("row_expand_div", dst, a, s,
                                            [&zero](C x, C y) noexcept { return detail::op_div<C>(x, y, &zero); });
    if (zero) report_kernel_error("tile row_expand_div: integer division by zero (result set to 0)");
    return ok;
}
template <class Dst, class A, class S>
inline bool col_expand_div(Dst& dst, const A& a, const S& s) noexcept {
    using C = compute_t<typename Dst::value_type>;
    bool zero = false;
    const bool ok = detail::expand_op<false>("col_expand_div", dst, a, s,
                                             [&zero](C x, C y) noexcept { return detail::op_div<C>(x, y, &zero); });
    if (zero) report_kernel_error("tile col_expand_div: integer division by zero (result set to 0)");
    return ok;
}

}  // namespace math
}  // namespace sim
}  // namespace pto
