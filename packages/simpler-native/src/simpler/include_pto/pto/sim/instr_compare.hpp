// Compare and select: TCMP, TCMPS, TSEL, TSELS. Part of our PTO-ISA CPU backend; pto/sim/instr.hpp
// describes what every instruction does.
#pragma once

#include "pto/sim/instr_support.hpp"

namespace pto {

// ---- compare and select -------------------------------------------------------------------

// TCMP(dst, src0, src1, mode) / TCMPS(dst, src0, scalar, mode): a packed predicate mask over
// dst's... domain = src0's valid shape; bit c % 8 of byte (r, c / 8) of the uint8 dst is
// src0[r, c] (mode) src1[r, c]; NaN compares unequal. dst's valid shape must cover
// [rows, ceil(cols / 8)] bytes.
namespace sim {
template <class D, class A, class P>
inline void cmp_into(const char* name, D& dst, A& a, int vr, int vc, P pred, Op& op) noexcept {
    static_assert(std::is_same<typename D::DType, std::uint8_t>::value, "TCMP writes a uint8_t mask tile");
    const int bytes = (vc + 7) / 8;
    if (!covers(op, "mask", dst, vr, bytes)) return;
    rd(op, a, vr, vc);
    wr(op, dst, vr, bytes);
    auto m = view(dst, vr, bytes);
    math::detail::pack(name, m, vr, vc, pred);
}
}  // namespace sim

template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>
PTO_INST RecordEvent TCMP(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, CmpMode cmpMode,
                          WaitEvents&... events) {
    (void)sizeof...(events);
    sim::Op op("TCMP", PIPE_V);
    const int vr = sim::vrow(src0), vc = sim::vcol(src0);
    if (!sim::all_placed(op, dst, src0, src1) || !sim::covers(op, "src1", src1, vr, vc)) return {};
    sim::rd(op, src1, vr, vc);
    const auto mode = static_cast<::pto::sim::math::CmpMode>(static_cast<int>(cmpMode));
    auto a = sim::view(src0, vr, vc);
    auto b = sim::view(src1, vr, vc);
    sim::cmp_into("TCMP", dst, src0, vr, vc,
                  [&](int r, int c) {
                      return ::pto::sim::math::detail::compare(::pto::sim::math::to_compute(a(r, c)),
                                                              ::pto::sim::math::to_compute(b(r, c)), mode);
                  },
                  op);
    return {};
}

template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TCMPS(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType src1, CmpMode mode,
                           WaitEvents&... events) {
    (void)sizeof...(events);
    sim::Op op("TCMPS", PIPE_V);
    const int vr = sim::vrow(src0), vc = sim::vcol(src0);
    if (!sim::all_placed(op, dst, src0)) return {};
    const auto m = static_cast<::pto::sim::math::CmpMode>(static_cast<int>(mode));
    const auto s = ::pto::sim::math::to_compute(src1);
    auto a = sim::view(src0, vr, vc);
    sim::cmp_into("TCMPS", dst, src0, vr, vc,
                  [&](int r, int c) {
                      return ::pto::sim::math::detail::compare(::pto::sim::math::to_compute(a(r, c)), s, m);
                  },
                  op);
    return {};
}

// TSEL(dst, mask, src0, src1, tmp): dst = mask bit ? src0 : src1 over dst's valid shape (mask as
// TCMP writes it). TSELS(dst, mask, src, tmp, scalar): src1 is the scalar. tmp is not used.
template <typename TileData, typename MaskTile, typename TmpTile, typename... WaitEvents>
PTO_INST RecordEvent TSEL(TileData& dst, MaskTile& selMask, TileData& src0, TileData& src1, TmpTile& tmp,
                          WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    sim::Op op("TSEL", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, selMask, src0, src1) || !sim::covers(op, "src0", src0, vr, vc) ||
        !sim::covers(op, "src1", src1, vr, vc))
        return {};
    const int mbytes = (vc + 7) / 8;
    const int mcols = (mbytes + static_cast<int>(sizeof(typename MaskTile::DType)) - 1) /
                      static_cast<int>(sizeof(typename MaskTile::DType));
    if (!sim::covers(op, "mask", selMask, vr, mcols)) return {};
    sim::rd(op, selMask, vr, mcols);
    sim::rd(op, src0, vr, vc);
    sim::rd(op, src1, vr, vc);
    sim::wr(op, dst, vr, vc);
    auto d = sim::view(dst, vr, vc);
    ::pto::sim::math::sel(d, sim::view(selMask, vr, mcols), sim::view(src0, vr, vc), sim::view(src1, vr, vc));
    return {};
}

template <typename TileDataDst, typename TileDataMask, typename TileDataSrc, typename TileDataTmp,
          typename... WaitEvents>
PTO_INST RecordEvent TSELS(TileDataDst& dst, TileDataMask& mask, TileDataSrc& src, TileDataTmp& tmp,
                           typename TileDataSrc::DType scalar, WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    sim::Op op("TSELS", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, mask, src) || !sim::covers(op, "src", src, vr, vc)) return {};
    const int mbytes = (vc + 7) / 8;
    const int mcols = (mbytes + static_cast<int>(sizeof(typename TileDataMask::DType)) - 1) /
                      static_cast<int>(sizeof(typename TileDataMask::DType));
    if (!sim::covers(op, "mask", mask, vr, mcols)) return {};
    sim::rd(op, mask, vr, mcols);
    sim::rd(op, src, vr, vc);
    sim::wr(op, dst, vr, vc);
    auto d = sim::view(dst, vr, vc);
    ::pto::sim::math::sels(d, sim::view(mask, vr, mcols), sim::view(src, vr, vc), ::pto::sim::math::to_compute(scalar));
    return {};
}

}  // namespace pto
