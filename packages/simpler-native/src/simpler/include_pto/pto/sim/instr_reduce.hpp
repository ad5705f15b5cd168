// Row/column reductions and broadcasts (expands). Part of our PTO-ISA CPU backend;
// pto/sim/instr.hpp describes what every instruction does.
#pragma once

#include "pto/sim/instr_support.hpp"

namespace pto {

// ---- reductions ------------------------------------------------------------------------------

namespace sim {
enum class Red { Sum, Max, Min, Prod, ArgMax, ArgMin };

// Row reductions: dst[r, 0] = reduce(src[r, 0 : src.validCol]) for r < src.validRow, which must
// equal dst's valid rows. Sums accumulate in float (floating tiles) or 64-bit integers.
template <Red K, class D, class S>
inline void row_reduce(const char* name, D& dst, S& src) noexcept {
    static_assert(D::Loc == TileType::Vec && S::Loc == TileType::Vec, "row reductions take Vec tiles");
    Op op(name, PIPE_V);
    const int vr = vrow(src), vc = vcol(src);
    if (!all_placed(op, dst, src)) return;
    if (vrow(dst) != vr || vcol(dst) < 1) {
        ::simpler::report_kernel_error("%s: destination valid shape [%d, %d] is not [src valid rows %d, >= 1]", name,
                                       vrow(dst), vcol(dst), vr);
        return;
    }
    rd(op, src, vr, vc);
    wr(op, dst, vr, 1);
    auto d = view(dst, vr, 1);
    auto s = view(src, vr, vc);
    if constexpr (K == Red::Sum) math::row_sum(d, s);
    else if constexpr (K == Red::Max) math::row_max(d, s);
    else if constexpr (K == Red::Min) math::row_min(d, s);
    else if constexpr (K == Red::Prod) math::row_prod(d, s);
    else if constexpr (K == Red::ArgMax) math::row_argmax(d, s);
    else math::row_argmin(d, s);
}

// Column reductions: dst[0, c] = reduce(src[0 : src.validRow, c]) for c < src.validCol, which
// must equal dst's valid columns.
template <Red K, class D, class S>
inline void col_reduce(const char* name, D& dst, S& src) noexcept {
    static_assert(D::Loc == TileType::Vec && S::Loc == TileType::Vec, "column reductions take Vec tiles");
    Op op(name, PIPE_V);
    const int vr = vrow(src), vc = vcol(src);
    if (!all_placed(op, dst, src)) return;
    if (vcol(dst) != vc || vrow(dst) < 1) {
        ::simpler::report_kernel_error("%s: destination valid shape [%d, %d] is not [>= 1, src valid cols %d]", name,
                                       vrow(dst), vcol(dst), vc);
        return;
    }
    rd(op, src, vr, vc);
    wr(op, dst, 1, vc);
    auto d = view(dst, 1, vc);
    auto s = view(src, vr, vc);
    if constexpr (K == Red::Sum) math::col_sum(d, s);
    else if constexpr (K == Red::Max) math::col_max(d, s);
    else if constexpr (K == Red::Min) math::col_min(d, s);
    else if constexpr (K == Red::Prod) math::col_prod(d, s);
    else if constexpr (K == Red::ArgMax) math::col_argmax(d, s);
    else math::col_argmin(d, s);
}
}  // namespace sim

#define PTO_SIM_ROW_REDUCE(NAME, KIND)                                                                          \
    template <typename TileDataOut, typename TileDataIn, typename TileDataTmp, typename... WaitEvents>          \
    PTO_INST RecordEvent NAME(TileDataOut& dst, TileDataIn& src, TileDataTmp& tmp, WaitEvents&... events) {     \
        (void)sizeof...(events);                                                                                \
        (void)tmp;                                                                                              \
        sim::row_reduce<sim::Red::KIND>(#NAME, dst, src);                                                       \
        return {};                                                                                              \
    }
PTO_SIM_ROW_REDUCE(TROWSUM, Sum)
PTO_SIM_ROW_REDUCE(TROWMAX, Max)
PTO_SIM_ROW_REDUCE(TROWMIN, Min)
PTO_SIM_ROW_REDUCE(TROWPROD, Prod)
PTO_SIM_ROW_REDUCE(TROWARGMAX, ArgMax)
PTO_SIM_ROW_REDUCE(TROWARGMIN, ArgMin)
#undef PTO_SIM_ROW_REDUCE

#define PTO_SIM_COL_REDUCE(NAME, KIND)                                                        \
    template <typename TileDataOut, typename TileDataIn, typename... WaitEvents>              \
    PTO_INST RecordEvent NAME(TileDataOut& dst, TileDataIn& src, WaitEvents&... events) {     \
        (void)sizeof...(events);                                                              \
        sim::col_reduce<sim::Red::KIND>(#NAME, dst, src);                                     \
        return {};                                                                            \
    }
PTO_SIM_COL_REDUCE(TCOLSUM, Sum)
PTO_SIM_COL_REDUCE(TCOLMAX, Max)
PTO_SIM_COL_REDUCE(TCOLMIN, Min)
PTO_SIM_COL_REDUCE(TCOLPROD, Prod)
#undef PTO_SIM_COL_REDUCE

// TCOLSUM(dst, src, tmp, isBinary): the same sum (tmp and the summation order flag are not used:
// rows are summed in order).
template <typename TileDataOut, typename TileDataIn, typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TCOLSUM(TileDataOut& dst, TileDataIn& src, TileDataTmp& tmp, bool isBinary,
                             WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    (void)isBinary;
    sim::col_reduce<sim::Red::Sum>("TCOLSUM", dst, src);
    return {};
}
template <typename TileDataOut, typename TileDataIn, typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TCOLARGMAX(TileDataOut& dst, TileDataIn& src, TileDataTmp& tmp, WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    sim::col_reduce<sim::Red::ArgMax>("TCOLARGMAX", dst, src);
    return {};
}
template <typename TileDataOut, typename TileDataIn, typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TCOLARGMIN(TileDataOut& dst, TileDataIn& src, TileDataTmp& tmp, WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    sim::col_reduce<sim::Red::ArgMin>("TCOLARGMIN", dst, src);
    return {};
}

// ---- broadcasts (expands) ------------------------------------------------------------------

// TROWEXPAND(dst, src): dst[r, c] = src[r, 0] over dst's valid shape (src valid rows must equal
// dst's). TCOLEXPAND(dst, src): dst[r, c] = src[0, c] (src valid cols must equal dst's).
template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TROWEXPAND(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::Op op("TROWEXPAND", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, src) || !sim::covers(op, "src", src, vr, 1)) return {};
    sim::rd(op, src, vr, 1);
    sim::wr(op, dst, vr, vc);
    auto d = sim::view(dst, vr, vc);
    ::pto::sim::math::row_expand(d, sim::view(src, vr, 1));
    return {};
}
template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TCOLEXPAND(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::Op op("TCOLEXPAND", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, src) || !sim::covers(op, "src", src, 1, vc)) return {};
    sim::rd(op, src, 1, vc);
    sim::wr(op, dst, vr, vc);
    auto d = sim::view(dst, vr, vc);
    ::pto::sim::math::col_expand(d, sim::view(src, 1, vc));
    return {};
}

namespace sim {
// dst[r, c] = f(full[r, c], expanded[r, 0]) (Row) or f(full[r, c], expanded[0, c]) (column),
// over dst's valid shape. The full-sized operand is the one whose valid shape equals dst's;
// when it is src1 the operands of f are swapped back (src0 (op) src1 either way). A Row
// expanded operand with 32 / sizeof(T) valid columns (a 32-byte block a row) is read as
// expanded[r, c % k].
template <bool Row, class D, class A, class B, class F>
inline void expand_binary(const char* name, D& dst, A& src0, B& src1, F f) noexcept {
    static_assert(D::Loc == TileType::Vec && A::Loc == TileType::Vec && B::Loc == TileType::Vec,
                  "expand instructions take Vec tiles");
    using T = typename D::DType;
    static_assert(std::is_same<T, typename A::DType>::value && std::is_same<T, typename B::DType>::value,
                  "expand instructions need one element type");
    Op op(name, PIPE_V);
    const int vr = vrow(dst), vc = vcol(dst);
    if (!all_placed(op, dst, src0, src1)) return;
    const bool full0 = vrow(src0) == vr && vcol(src0) == vc;
    const bool full1 = vrow(src1) == vr && vcol(src1) == vc;
    if (!full0 && !full1) {
        ::simpler::report_kernel_error("%s: neither operand has dst's valid shape [%d, %d] (src0 [%d, %d], src1 [%d, %d])",
                                       name, vr, vc, vrow(src0), vcol(src0), vrow(src1), vcol(src1));
        return;
    }
    const bool swap = !full0;
    const int er = swap ? vrow(src0) : vrow(src1), ec = swap ? vcol(src0) : vcol(src1);
    if (Row ? (er != vr || ec < 1) : (ec != vc || er < 1)) {
        ::simpler::report_kernel_error("%s: expanded operand valid shape [%d, %d] does not match [%d, %s]", name, er, ec,
                                       Row ? vr : 1, Row ? "1" : "dst cols");
        return;
    }
    rd(op, src0, swap ? er : vr, swap ? ec : vc);
    rd(op, src1, swap ? vr : er, swap ? vc : ec);
    wr(op, dst, vr, vc);
    auto d = view(dst, vr, vc);
    using C = compute_t<T>;
    if (!swap) {
        math::detail::expand_op<Row>(name, d, view(src0, vr, vc), view(src1, er, ec), f);
    } else {
        math::detail::expand_op<Row>(name, d, view(src1, vr, vc), view(src0, er, ec),
                                   [&f](C full, C e) noexcept { return f(e, full); });
    }
}
}  // namespace sim

#define PTO_SIM_EXPAND(NAME, ROW, EXPR)                                                                          \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>        \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) { \
        (void)sizeof...(events);                                                                                  \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                    \
        sim::expand_binary<ROW>(#NAME, dst, src0, src1, [](C x, C y) noexcept { return EXPR; });                 \
        return {};                                                                                                \
    }
PTO_SIM_EXPAND(TROWEXPANDADD, true, ::pto::sim::math::detail::op_add<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDSUB, true, ::pto::sim::math::detail::op_sub<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDMUL, true, ::pto::sim::math::detail::op_mul<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDMAX, true, ::pto::sim::math::detail::op_max<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDMIN, true, ::pto::sim::math::detail::op_min<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDADD, false, ::pto::sim::math::detail::op_add<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDSUB, false, ::pto::sim::math::detail::op_sub<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDMUL, false, ::pto::sim::math::detail::op_mul<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDMAX, false, ::pto::sim::math::detail::op_max<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDMIN, false, ::pto::sim::math::detail::op_min<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDEXPDIF, false, static_cast<C>(::pto::sim::math::detail::exp_one(static_cast<float>(x - y))))
#undef PTO_SIM_EXPAND

// TROWEXPANDEXPDIF: exp(src0 - src1[r, 0]) in float (math/exp.hpp: within 1 ulp), a row run at a
// time where the target allows.
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>
PTO_INST RecordEvent TROWEXPANDEXPDIF(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(::pto::sim::math::is_float_like_v<typename TileDataDst::DType>, "TROWEXPANDEXPDIF takes float tiles");
    sim::expand_binary<true>("TROWEXPANDEXPDIF", dst, src0, src1, ::pto::sim::math::detail::ExpDifFn{});
    return {};
}

// TROWEXPANDDIV / TCOLEXPANDDIV: integer division by zero gives 0 and is reported.
#define PTO_SIM_EXPAND_DIV(NAME, ROW)                                                                             \
    template <auto PrecisionType = DivAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc0,            \
              typename TileDataSrc1, typename... WaitEvents>                                                      \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) {  \
        (void)sizeof...(events);                                                                                   \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                     \
        bool zero = false;                                                                                         \
        sim::expand_binary<ROW>(#NAME, dst, src0, src1,                                                            \
                                [&zero](C x, C y) noexcept { return ::pto::sim::math::detail::op_div<C>(x, y, &zero); }); \
        if (zero) ::simpler::report_kernel_error(#NAME ": integer division by zero (result set to 0)");           \
        return {};                                                                                                 \
    }
PTO_SIM_EXPAND_DIV(TROWEXPANDDIV, true)
PTO_SIM_EXPAND_DIV(TCOLEXPANDDIV, false)
#undef PTO_SIM_EXPAND_DIV

}  // namespace pto
