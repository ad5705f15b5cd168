// Matmul: TMATMUL, TMATMUL_ACC, TMATMUL_BIAS and the GEMV forms TGEMV, TGEMV_ACC, TGEMV_BIAS (a
// one-row Left operand). Part of our PTO-ISA CPU backend; pto/sim/instr.hpp describes what every
// instruction does.
#pragma once

#include "pto/sim/instr_support.hpp"

namespace pto {

// ---- matmul ------------------------------------------------------------------------------------

namespace sim {
// No bias operand (TMATMUL, TMATMUL_ACC and the GEMV forms without one).
struct NoBias {};

// c (+)= a @ b (+ bias); with Acc, the addend is cin's [m, n] region (cin may be c itself). A bias
// is a [1, N] Bias tile of the accumulator's element type whose valid columns cover n; its row is
// added to every row of the product after the sum over k (as the official CPU backend does). A
// GEMV takes a Left tile with one valid row.
template <bool Acc, class C, class A, class B, class Bias = NoBias>
inline void matmul(const char* name, C& c, C& cin, A& a, B& b, Bias* bias = nullptr, bool gemv = false) noexcept {
    static_assert(C::Loc == TileType::Acc && A::Loc == TileType::Left && B::Loc == TileType::Right,
                  "TMATMUL takes (Acc, Left, Right) tiles");
    constexpr bool kBias = !std::is_same<Bias, NoBias>::value;
    if constexpr (kBias) {
        static_assert(Bias::Loc == TileType::Bias && Bias::Rows == 1, "TMATMUL_BIAS: the bias is a [1, N] Bias tile");
        static_assert(std::is_same<typename Bias::DType, typename C::DType>::value,
                      "TMATMUL_BIAS: the bias has the accumulator's element type");
    }
    Op op(name, PIPE_M);
    const int m = vrow(a), k = vcol(a), n = vcol(b);
    if (!all_placed(op, c, cin, a, b)) return;
    if constexpr (kBias) {
        if (!all_placed(op, *bias)) return;
        if (vrow(*bias) < 1 || vcol(*bias) < n) {
            ::simpler::report_kernel_error("%s: the bias's valid shape [%d, %d] does not cover the product's %d columns",
                                           name, vrow(*bias), vcol(*bias), n);
            return;
        }
    }
    if (gemv && m != 1) {
        ::simpler::report_kernel_error("%s: the Left tile has %d valid rows; a GEMV takes one", name, m);
        return;
    }
    if (vrow(b) != k) {
        ::simpler::report_kernel_error("%s: inner dims differ: Left valid shape [%d, %d], Right [%d, %d]", name, m, k,
                                       vrow(b), n);
        return;
    }
    if (m > C::Rows || n > C::Cols) {
        ::simpler::report_kernel_error("%s: the product [%d, %d] does not fit the Acc tile [%d, %d]", name, m, n,
                                       C::Rows, C::Cols);
        return;
    }
    rd(op, a, m, k);
    rd(op, b, k, n);
    if (Acc) rd(op, cin, m, n);
    if constexpr (kBias) rd(op, *bias, 1, n);
    wr(op, c, m, n);
    if (Acc && c.data() != cin.data()) copy_window(c, 0, 0, cin, 0, 0, m, n);
    auto cv = view(c, m, n);
    if (Acc)
        ::pto::sim::math::matmul_acc(cv, view(a, m, k), view(b, k, n));
    else
        ::pto::sim::math::matmul(cv, view(a, m, k), view(b, k, n));
    if constexpr (kBias) ::pto::sim::math::add_row(cv, bias->data());
}
}  // namespace sim

// TMATMUL(c, a, b): c[0:m, 0:n] = a @ b with m, k = a's valid shape and n = b's valid columns
// (PIPE_M). float/half/bfloat16 operands accumulate in float, int8 in int32, k in order.
template <typename TileRes, typename TileLeft, typename TileRight, typename... WaitEvents>
PTO_INST RecordEvent TMATMUL(TileRes& cMatrix, TileLeft& aMatrix, TileRight& bMatrix, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::matmul<false>("TMATMUL", cMatrix, cMatrix, aMatrix, bMatrix);
    return {};
}

// TMATMUL_ACC(c, a, b): c[0:m, 0:n] += a @ b.
template <AccPhase Phase = AccPhase::Unspecified, typename TileRes, typename TileLeft, typename TileRight,
          typename... WaitEvents>
PTO_INST RecordEvent TMATMUL_ACC(TileRes& cMatrix, TileLeft& aMatrix, TileRight& bMatrix, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::matmul<true>("TMATMUL_ACC", cMatrix, cMatrix, aMatrix, bMatrix);
    return {};
}

// TMATMUL_ACC(cOut, cIn, a, b): cOut[0:m, 0:n] = cIn[0:m, 0:n] + a @ b.
template <typename TileRes, typename TileLeft, typename TileRight, typename... WaitEvents>
PTO_INST RecordEvent TMATMUL_ACC(TileRes& cOutMatrix, TileRes& cInMatrix, TileLeft& aMatrix, TileRight& bMatrix,
                                 WaitEvents&... events) {
    (void)sizeof...(events);
    sim::matmul<true>("TMATMUL_ACC", cOutMatrix, cInMatrix, aMatrix, bMatrix);
    return {};
}

// TMATMUL_BIAS(c, a, b, bias): c[0:m, 0:n] = a @ b + bias[0, 0:n] in every row.
template <typename TileRes, typename TileLeft, typename TileRight, typename TileBias, typename... WaitEvents>
PTO_INST RecordEvent TMATMUL_BIAS(TileRes& cMatrix, TileLeft& aMatrix, TileRight& bMatrix, TileBias& biasData,
                                  WaitEvents&... events) {
    (void)sizeof...(events);
    sim::matmul<false>("TMATMUL_BIAS", cMatrix, cMatrix, aMatrix, bMatrix, &biasData);
    return {};
}

// TGEMV<Phase>(c, a, b): TMATMUL of a one-row Left tile. The accumulation phase is the device's
// hint for when the result leaves L0C; it changes no value here.
template <AccPhase Phase = AccPhase::Unspecified, typename TileRes, typename TileLeft, typename TileRight,
          typename... WaitEvents>
PTO_INST RecordEvent TGEMV(TileRes& cMatrix, TileLeft& aMatrix, TileRight& bMatrix, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::matmul<false>("TGEMV", cMatrix, cMatrix, aMatrix, bMatrix, static_cast<sim::NoBias*>(nullptr), true);
    return {};
}

// TGEMV_ACC<Phase>(cOut, cIn, a, b): cOut[0, 0:n] = cIn[0, 0:n] + a @ b.
template <AccPhase Phase = AccPhase::Unspecified, typename TileRes, typename TileLeft, typename TileRight,
          typename... WaitEvents>
PTO_INST RecordEvent TGEMV_ACC(TileRes& cOutMatrix, TileRes& cInMatrix, TileLeft& aMatrix, TileRight& bMatrix,
                               WaitEvents&... events) {
    (void)sizeof...(events);
    sim::matmul<true>("TGEMV_ACC", cOutMatrix, cInMatrix, aMatrix, bMatrix, static_cast<sim::NoBias*>(nullptr), true);
    return {};
}

// TGEMV_BIAS<Phase>(c, a, b, bias): c[0, 0:n] = a @ b + bias[0, 0:n].
template <AccPhase Phase = AccPhase::Unspecified, typename TileRes, typename TileLeft, typename TileRight,
          typename TileBias, typename... WaitEvents>
PTO_INST RecordEvent TGEMV_BIAS(TileRes& cMatrix, TileLeft& aMatrix, TileRight& bMatrix, TileBias& biasData,
                                WaitEvents&... events) {
    (void)sizeof...(events);
    sim::matmul<false>("TGEMV_BIAS", cMatrix, cMatrix, aMatrix, bMatrix, &biasData, true);
    return {};
}

}  // namespace pto
