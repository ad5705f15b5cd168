// Fills and conversion: TEXPANDS, TTRI, TCI, TFILLPAD, TFILLPAD_EXPAND, TCVT. Part of our PTO-ISA CPU backend;
// pto/sim/instr.hpp describes what every instruction does.
#pragma once

#include "pto/sim/instr_support.hpp"

namespace pto {

// ---- fills and conversion --------------------------------------------------------------------

// TEXPANDS(dst, scalar): every element of dst's valid shape = scalar.
template <typename TileData, typename... WaitEvents>
PTO_INST RecordEvent TEXPANDS(TileData& dst, typename TileData::DType scalar, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::Op op("TEXPANDS", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::placed(op, dst)) return {};
    sim::wr(op, dst, vr, vc);
    for (int r = 0; r < vr; ++r) {
        typename TileData::DType* d = dst.data() + r * TileData::Cols;
        for (int c = 0; c < vc; ++c) d[c] = scalar;
    }
    return {};
}

// TTRI<TileData, isUpperOrLower>(dst, diagonal) (Vec, row-major): a triangular mask over dst's
// valid shape. Lower (0): dst[r, c] = 1 where c <= r + diagonal, else 0; upper (1): 1 where
// c >= r + diagonal, else 0. The elements outside the valid shape are not written.
template <typename TileData, int isUpperOrLower, typename... WaitEvents>
PTO_INST RecordEvent TTRI(TileData& dst, int diagonal, WaitEvents&... events) {
    (void)sizeof...(events);
    using T = typename TileData::DType;
    static_assert(isUpperOrLower == 0 || isUpperOrLower == 1, "TTRI: isUpperOrLower is 0 (lower) or 1 (upper)");
    static_assert(TileData::Loc == TileType::Vec && TileData::isRowMajor, "TTRI: dst must be a row-major Vec tile");
    sim::Op op("TTRI", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::placed(op, dst)) return {};
    sim::wr(op, dst, vr, vc);
    const T one = static_cast<T>(1.0f), zero = static_cast<T>(0.0f);
    for (int r = 0; r < vr; ++r) {
        T* d = dst.data() + r * TileData::Cols;
        // the first column of the row's ones (upper) or the first past them (lower), in [0, vc]
        const long long edge = static_cast<long long>(r) + diagonal + (isUpperOrLower == 0 ? 1 : 0);
        const int split = static_cast<int>(edge < 0 ? 0 : edge > vc ? vc : edge);
        for (int c = 0; c < vc; ++c) d[c] = (c < split) == (isUpperOrLower == 0) ? one : zero;
    }
    return {};
}

// TCI<TileData, T, descending>(dst, start) (a one-row Vec tile, T its element type): the integer
// sequence dst[0, k] = start + k (descending: start - k) for k below dst's valid column count,
// formed in 64 bits and converted to T (integers wrap, as the official CPU backend's `start + j`).
template <typename TileData, typename T, int descending, typename... WaitEvents>
PTO_INST RecordEvent TCI(TileData& dst, T start, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(TileData::Rows == 1, "TCI: dst must be a one-row tile");
    static_assert(std::is_same<typename TileData::DType, T>::value, "TCI: start's type must be dst's element type");
    static_assert(descending == 0 || descending == 1, "TCI: descending is 0 or 1");
    sim::Op op("TCI", PIPE_V);
    const int vc = sim::vcol(dst);
    if (!sim::placed(op, dst)) return {};
    sim::wr(op, dst, 1, vc);
    const long long first = static_cast<long long>(start);
    for (int k = 0; k < vc; ++k) {
        const long long v = descending ? first - k : first + k;
        if constexpr (std::is_integral<T>::value)
            dst.data()[k] = static_cast<T>(static_cast<unsigned long long>(v));  // modulo 2^bits
        else
            dst.data()[k] = static_cast<T>(static_cast<float>(v));
    }
    return {};
}

// TFILLPAD(dst, src) (Vec): dst[r, c] = src[r, c] inside src's valid shape and dst's PadVal
// (Zero, Max = +inf/highest, Min = -inf/lowest, or a custom float) elsewhere, over dst's whole
// static shape. With mode Expand (TFILLPAD_EXPAND) dst may be larger than src in both dimensions.
template <TFillPadMode mode = TFillPadMode::Normal, typename DstTileData, typename SrcTileData,
          std::enable_if_t<(DstTileData::Loc == TileType::Vec) && (SrcTileData::Loc == TileType::Vec), int> = 0,
          typename... WaitEvents>
PTO_INST RecordEvent TFILLPAD(DstTileData& dst, SrcTileData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using T = typename DstTileData::DType;
    static_assert(sizeof(T) == sizeof(typename SrcTileData::DType), "TFILLPAD: element sizes must match");
    static_assert(mode == TFillPadMode::Expand ||
                      (DstTileData::Rows == SrcTileData::Rows && DstTileData::Cols == SrcTileData::Cols),
                  "TFILLPAD: dst and src static shapes must match");
    static_assert(DstTileData::Rows >= SrcTileData::Rows && DstTileData::Cols >= SrcTileData::Cols,
                  "TFILLPAD_EXPAND: dst must be at least src's static shape");
    sim::Op op(mode == TFillPadMode::Expand ? "TFILLPAD_EXPAND" : "TFILLPAD", PIPE_V);
    const int vr = sim::vrow(src), vc = sim::vcol(src);
    if (!sim::all_placed(op, dst, src)) return {};
    sim::rd(op, src, vr, vc);
    sim::wr(op, dst, DstTileData::Rows, DstTileData::Cols);
    const T pad = sim::pad_value<T>(static_cast<PadValue>(DstTileData::PadVal));
    sim::copy_window(dst, 0, 0, src, 0, 0, vr, vc);
    for (int r = 0; r < DstTileData::Rows; ++r) {
        T* d = dst.data() + r * DstTileData::Cols;
        for (int c = r < vr ? vc : 0; c < DstTileData::Cols; ++c) d[c] = pad;
    }
    return {};
}

// TFILLPAD_EXPAND(dst, src) (Vec): TFILLPAD into a destination at least src's static shape.
template <typename DstTileData, typename SrcTileData, typename... WaitEvents>
PTO_INST RecordEvent TFILLPAD_EXPAND(DstTileData& dst, SrcTileData& src, WaitEvents&... events) {
    return TFILLPAD<TFillPadMode::Expand>(dst, src, events...);
}

// TCVT(dst, src, mode): dst[r, c] = convert(src[r, c]) over dst's valid shape. Narrowing float
// conversions round by `mode` (CAST_NONE/CAST_RINT: nearest even); float -> integer and integer
// -> integer saturate; NaN -> 0 for integers (simpler::convert, simpler/dtype.hpp).
template <bool NeedSetCtrl = true, typename TileDataD, typename TileDataS, typename... WaitEvents>
PTO_INST RecordEvent TCVT(TileDataD& dst, TileDataS& src, RoundMode mode, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::Op op("TCVT", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, src) || !sim::covers(op, "source", src, vr, vc)) return {};
    sim::rd(op, src, vr, vc);
    sim::wr(op, dst, vr, vc);
    const auto m = static_cast<::pto::sim::math::RoundMode>(static_cast<std::uint8_t>(mode));
    auto d = sim::view(dst, vr, vc);
    ::pto::sim::math::cast(d, sim::view(src, vr, vc), m);
    return {};
}
template <bool NeedSetCtrl = true, typename TileDataD, typename TileDataS, typename... WaitEvents>
PTO_INST RecordEvent TCVT(TileDataD& dst, TileDataS& src, RoundMode mode, SaturationMode satMode,
                          WaitEvents&... events) {
    (void)satMode;  // our conversions always saturate
    return TCVT<NeedSetCtrl>(dst, src, mode, events...);
}
template <bool NeedSetCtrl = true, typename TileDataD, typename TileDataS, typename TmpTileData, typename... WaitEvents,
          std::enable_if_t<is_tile_data_v<TmpTileData>, int> = 0>
PTO_INST RecordEvent TCVT(TileDataD& dst, TileDataS& src, TmpTileData& tmp, RoundMode mode, WaitEvents&... events) {
    (void)tmp;
    return TCVT<NeedSetCtrl>(dst, src, mode, events...);
}

}  // namespace pto
