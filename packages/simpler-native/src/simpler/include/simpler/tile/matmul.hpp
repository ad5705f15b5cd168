// Cube ops: matmul(c, a, b) computes c = a @ b and matmul_acc(c, a, b) computes c += a @ b, with
// a a Left tile [M, K], b a Right tile [K, N] and c an Acc tile [M, N] (M = a.valid_rows,
// K = a.valid_cols = b.valid_rows, N = b.valid_cols).
//
// Element types: float, half or bfloat16 operands (both the same) accumulate in a float Acc tile;
// int8 x int8 accumulates in an int32 Acc tile. Products and sums are formed in the accumulator
// type, summing over k in increasing order for each output element. matmul sets c's valid shape
// to [M, N]; matmul_acc requires it to be [M, N] already.
#pragma once

#include <cstdint>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/tile/dtype.hpp"
#include "simpler/tile/tile.hpp"

namespace simpler {
namespace tile {

namespace detail {

template <class AccT, class In>
inline constexpr bool matmul_types_ok_v =
    (std::is_same<AccT, float>::value && is_float_like_v<In>) ||
    (std::is_same<AccT, std::int32_t>::value && std::is_same<In, std::int8_t>::value);

template <class Acc, class L, class R>
inline bool matmul_impl(const char* op, Acc& c, const L& a, const R& b, bool accumulate) noexcept {
    static_assert(Acc::space == Space::Acc && L::space == Space::Left && R::space == Space::Right,
                  "matmul takes (Acc, Left, Right) tiles");
    using AT = typename Acc::value_type;
    using In = typename L::value_type;
    static_assert(std::is_same<In, typename R::value_type>::value, "matmul operands need one element type");
    static_assert(matmul_types_ok_v<AT, In>,
                  "matmul: float/half/bfloat16 operands need a float Acc tile, int8 operands an int32 Acc tile");
    if (!operands_ok(op, a, b) || (accumulate && !operands_ok(op, c))) return false;
    const int m = a.valid_rows, k = a.valid_cols, n = b.valid_cols;
    if (b.valid_rows != k) {
        report_kernel_error("tile %s: inner dims differ: Left is [%d, %d], Right is [%d, %d]", op, m, k, b.valid_rows, n);
        return false;
    }
    if (!fits(op, c, m, n)) return false;
    if (accumulate && (c.valid_rows != m || c.valid_cols != n)) {
        report_kernel_error("tile %s: accumulator valid shape [%d, %d] is not the product's [%d, %d]", op, c.valid_rows,
                            c.valid_cols, m, n);
        return false;
    }
    // Right operand in the accumulator type, row-major with R::cols columns.
    AT bconv[std::is_same<In, AT>::value ? 1 : R::rows * R::cols];
    const AT* bp;
    if constexpr (std::is_same<In, AT>::value) {
        bp = b.data;
    } else {
        for (int r = 0; r < k; ++r) {
            AT* d = bconv + r * R::cols;
            const In* s = b.row(r);
            for (int j = 0; j < n; ++j) d[j] = static_cast<AT>(to_compute(s[j]));
        }
        bp = bconv;
    }
    for (int i = 0; i < m; ++i) {
        AT* crow = c.row(i);
        if (!accumulate)
            for (int j = 0; j < n; ++j) crow[j] = AT(0);
        const In* arow = a.row(i);
        for (int p = 0; p < k; ++p) {
            const AT av = static_cast<AT>(to_compute(arow[p]));
            const AT* brow = bp + p * R::cols;
SIMPLER_TILE_IVDEP
            for (int j = 0; j < n; ++j) crow[j] += av * brow[j];
        }
    }
    c.valid_rows = m;
    c.valid_cols = n;
    return true;
}

}  // namespace detail

template <class Acc, class L, class R>
inline bool matmul(Acc& c, const L& a, const R& b) noexcept {
    return detail::matmul_impl("matmul", c, a, b, false);
}

template <class Acc, class L, class R>
inline bool matmul_acc(Acc& c, const L& a, const R& b) noexcept {
    return detail::matmul_impl("matmul_acc", c, a, b, true);
}

}  // namespace tile
}  // namespace simpler
