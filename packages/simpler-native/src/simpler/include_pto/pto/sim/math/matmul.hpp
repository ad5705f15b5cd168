// Cube ops: matmul(c, a, b) computes c = a @ b and matmul_acc(c, a, b) computes c += a @ b, with
// a a Left tile [M, K], b a Right tile [K, N] and c an Acc tile [M, N] (M = a.valid_rows,
// K = a.valid_cols = b.valid_rows, N = b.valid_cols); add_row(c, row) adds a bias row to every
// row of c.
//
// Element types: float, half or bfloat16 operands (both the same) accumulate in a float Acc tile;
// int8 x int8 accumulates in an int32 Acc tile. Products and sums are formed in the accumulator
// type, summing over k in increasing order for each output element (a product and its sum may be
// fused into one rounding where the target has FMA). matmul sets c's valid shape to [M, N];
// matmul_acc requires it to be [M, N] already.
//
// Implementation: a register-blocked micro-kernel (docs/tile-interface.md, "Matmul"). The output
// is cut into blocks of kMmRows rows x two vectors of columns; each block's accumulators stay in
// registers while k runs from 0 to K, so every output element still sees its products in k order
// (no reassociation, no k-blocking). Vectors are GCC/Clang vector extensions as wide as the
// target's widest float register (64 bytes with AVX-512F, 32 with AVX, 16 otherwise), so the same
// source compiles to SSE2, AVX2 or AVX-512 code with no intrinsics and no extra headers. Columns
// left over after whole vectors take a scalar loop with the same order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/dtype.hpp"
#include "pto/sim/math/common.hpp"

#if defined(__AVX512F__)
#define PTO_SIM_MATH_MM_VEC_BYTES 64
#define PTO_SIM_MATH_MM_ROWS 8
#elif defined(__AVX__)
#define PTO_SIM_MATH_MM_VEC_BYTES 32
#define PTO_SIM_MATH_MM_ROWS 6
#else
#define PTO_SIM_MATH_MM_VEC_BYTES 16
#define PTO_SIM_MATH_MM_ROWS 4
#endif

namespace pto {
namespace sim {
namespace math {

namespace detail {

template <class AccT, class In>
inline constexpr bool matmul_types_ok_v =
    (std::is_same<AccT, float>::value && is_float_like_v<In>) ||
    (std::is_same<AccT, std::int32_t>::value && std::is_same<In, std::int8_t>::value);

// The accumulator's vector type (one register of the target's widest kind).
template <class AT>
struct mm_vec;
template <>
struct mm_vec<float> {
    typedef float type __attribute__((vector_size(PTO_SIM_MATH_MM_VEC_BYTES)));
};
template <>
struct mm_vec<std::int32_t> {
    typedef std::int32_t type __attribute__((vector_size(PTO_SIM_MATH_MM_VEC_BYTES)));
};

inline constexpr int kMmRows = PTO_SIM_MATH_MM_ROWS;  // rows of a register block
inline constexpr int kMmVecs = 2;                     // vectors (of columns) per row of a block

// c[r, 0 : NV * lanes] (+)= sum over p in [0, k), in order, of a[r, p] * b[p, 0 : NV * lanes], for
// r in [0, MR). Row strides AS, BS, CS (elements) are the tiles' static column counts.
template <int MR, int NV, int AS, int BS, int CS, class AT>
inline void mm_block(AT* __restrict c, const AT* __restrict a, const AT* __restrict b, int k,
                     bool accumulate) noexcept {
    using V = typename mm_vec<AT>::type;
    constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(AT));
    V acc[MR][NV];
    PTO_SIM_MATH_UNROLL
    for (int r = 0; r < MR; ++r) {
        PTO_SIM_MATH_UNROLL
        for (int v = 0; v < NV; ++v) {
            if (accumulate)
                __builtin_memcpy(&acc[r][v], c + r * CS + v * kLanes, sizeof(V));
            else
                acc[r][v] = V{};
        }
    }
    for (int p = 0; p < k; ++p) {
        V bv[NV];
        PTO_SIM_MATH_UNROLL
        for (int v = 0; v < NV; ++v) __builtin_memcpy(&bv[v], b + p * BS + v * kLanes, sizeof(V));
        PTO_SIM_MATH_UNROLL
        for (int r = 0; r < MR; ++r) {
            const AT av = a[r * AS + p];
            PTO_SIM_MATH_UNROLL
            for (int v = 0; v < NV; ++v) acc[r][v] += av * bv[v];
        }
    }
    PTO_SIM_MATH_UNROLL
    for (int r = 0; r < MR; ++r) {
        PTO_SIM_MATH_UNROLL
        for (int v = 0; v < NV; ++v) __builtin_memcpy(c + r * CS + v * kLanes, &acc[r][v], sizeof(V));
    }
}

// All m rows of one column strip of NV vectors: full blocks of kMmRows rows, then single rows.
template <int NV, int AS, int BS, int CS, class AT>
inline void mm_strip(AT* c, const AT* a, const AT* b, int m, int k, bool accumulate) noexcept {
    int i = 0;
    for (; i + kMmRows <= m; i += kMmRows) mm_block<kMmRows, NV, AS, BS, CS>(c + i * CS, a + i * AS, b, k, accumulate);
    for (; i < m; ++i) mm_block<1, NV, AS, BS, CS>(c + i * CS, a + i * AS, b, k, accumulate);
}

// c[0:m, 0:n] (+)= a[0:m, 0:k] @ b[0:k, 0:n], all in the accumulator type.
template <int AS, int BS, int CS, class AT>
inline void mm_run(AT* c, const AT* a, const AT* b, int m, int k, int n, bool accumulate) noexcept {
    constexpr int kLanes = static_cast<int>(sizeof(typename mm_vec<AT>::type) / sizeof(AT));
    int j = 0;
    for (; j + kMmVecs * kLanes <= n; j += kMmVecs * kLanes)
        mm_strip<kMmVecs, AS, BS, CS>(c + j, a, b + j, m, k, accumulate);
    for (; j + kLanes <= n; j += kLanes) mm_strip<1, AS, BS, CS>(c + j, a, b + j, m, k, accumulate);
    for (; j < n; ++j)  // columns short of a vector: one element at a time, same k order
        for (int i = 0; i < m; ++i) {
            AT s = accumulate ? c[i * CS + j] : AT(0);
            for (int p = 0; p < k; ++p) s += a[i * AS + p] * b[p * BS + j];
            c[i * CS + j] = s;
        }
}

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
    if constexpr (std::is_same<In, AT>::value) {
        mm_run<L::cols, R::cols, Acc::cols>(c.data, a.data, b.data, m, k, n, accumulate);
    } else {
        // Operands converted to the accumulator type once (row-major, the tiles' row strides).
        AT aconv[L::rows * L::cols];
        AT bconv[R::rows * R::cols];
        for (int r = 0; r < m; ++r) {
            const In* s = a.row(r);
            for (int j = 0; j < k; ++j) aconv[r * L::cols + j] = static_cast<AT>(to_compute(s[j]));
        }
        for (int r = 0; r < k; ++r) {
            const In* s = b.row(r);
            for (int j = 0; j < n; ++j) bconv[r * R::cols + j] = static_cast<AT>(to_compute(s[j]));
        }
        mm_run<L::cols, R::cols, Acc::cols>(c.data, aconv, bconv, m, k, n, accumulate);
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

// c[r, j] += row[j] over c's valid shape (a bias row, in the accumulator type; integers wrap
// around as two's complement, as the device's 32-bit adders do).
template <class Acc>
inline void add_row(Acc& c, const typename Acc::value_type* row) noexcept {
    using AT = typename Acc::value_type;
    for (int r = 0; r < c.valid_rows; ++r) {
        AT* d = c.row(r);
        for (int j = 0; j < c.valid_cols; ++j) {
            if constexpr (std::is_integral<AT>::value) {
                using U = std::make_unsigned_t<AT>;
                d[j] = static_cast<AT>(static_cast<U>(d[j]) + static_cast<U>(row[j]));
            } else {
                d[j] += row[j];
            }
        }
    }
}

}  // namespace math
}  // namespace sim
}  // namespace pto
