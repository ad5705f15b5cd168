// Matmul: TMATMUL, TMATMUL_ACC. Part of our PTO-ISA CPU backend; pto/sim/instr.hpp describes what
// every instruction does.
#pragma once

#include "pto/sim/instr_support.hpp"

namespace pto {

// ---- matmul ------------------------------------------------------------------------------------

namespace sim {
// c (+)= a @ b; with Acc, the addend is cin's [m, n] region (cin may be c itself).
template <bool Acc, class C, class A, class B>
inline void matmul(const char* name, C& c, C& cin, A& a, B& b) noexcept {
    static_assert(C::Loc == TileType::Acc && A::Loc == TileType::Left && B::Loc == TileType::Right,
                  "TMATMUL takes (Acc, Left, Right) tiles");
    Op op(name, PIPE_M);
    const int m = vrow(a), k = vcol(a), n = vcol(b);
    if (!all_placed(op, c, cin, a, b)) return;
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
    wr(op, c, m, n);
    if (Acc && c.data() != cin.data()) copy_window(c, 0, 0, cin, 0, 0, m, n);
    auto cv = view(c, m, n);
    if (Acc)
        ::pto::sim::math::matmul_acc(cv, view(a, m, k), view(b, k, n));
    else
        ::pto::sim::math::matmul(cv, view(a, m, k), view(b, k, n));
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

}  // namespace pto
