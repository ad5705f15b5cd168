// Data movement: TLOAD, TSTORE, TMOV, TEXTRACT, TINSERT, TRESHAPE, TTRANS, TCONCAT, TGATHER,
// TSCATTER. Part of our PTO-ISA CPU backend; pto/sim/instr.hpp describes what every instruction
// does.
#pragma once

#include <cstdlib>

#include "pto/sim/comm_route.hpp"
#include "pto/sim/instr_support.hpp"
#include "pto/sim/math/copy.hpp"

namespace pto {

// ---- data movement ---------------------------------------------------------------------------

// TLOAD(dst, src): dst[r, c] = src window element (r, c) over dst's valid shape (PIPE_MTE2);
// ND, DN or NZ global tensors (for_rows / for_nz).
template <typename TileData, typename GlobalData, typename... WaitEvents>
PTO_INST RecordEvent TLOAD(TileData& dst, GlobalData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(TileData::Loc == TileType::Vec || TileData::Loc == TileType::Mat, "TLOAD writes a Vec or Mat tile");
    using T = typename TileData::DType;
    static_assert(std::is_same<T, typename GlobalData::DType>::value, "TLOAD: tile and global tensor dtypes differ");
    sim::Op op("TLOAD", PIPE_MTE2);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::placed(op, dst) || !sim::window_ok(op, src, vr, vc)) return {};
    sim::wr(op, dst, vr, vc);
    if constexpr (GlobalData::layout != Layout::NZ) {
        sim::comm::Remote at;
        if (sim::comm::remote(src.data(), &at)) {  // a peer's window on the host comm path
            unsigned char* b = static_cast<unsigned char*>(std::malloc(sizeof(T) * vr * vc + 1));
            if (b == nullptr) {
                ::simpler::report_kernel_error("TLOAD: out of memory");
                return {};
            }
            if (sim::comm::read("TLOAD", src, b))
                for (int r = 0; r < vr; ++r)
                    std::memcpy(dst.data() + r * TileData::Cols, b + sizeof(T) * r * vc, sizeof(T) * vc);
            std::free(b);
            return {};
        }
    }
    if constexpr (GlobalData::layout == Layout::NZ) {
        sim::for_nz(src, [&](int r, int c, const T* g) { dst.data()[r * TileData::Cols + c] = *g; });
    } else if (vc == TileData::Cols && sim::dense_rows(src, vc)) {  // the common case: one copy
        if (vr > 0 && vc > 0)
            ::pto::sim::math::copy_forward(dst.data(), src.data(), sizeof(T) * static_cast<std::size_t>(vr) * vc);
    } else {
        sim::for_rows(src, [&](int r, const T* g, std::int64_t cs) {
            T* d = dst.data() + r * TileData::Cols;
            if (cs == 1)
                std::memcpy(d, g, sizeof(T) * vc);
            else
                for (int c = 0; c < vc; ++c) d[c] = g[c * cs];
        });
    }
    return {};
}

// TSTORE(dst, src): the global window = src over src's valid shape. From Vec/Mat on PIPE_MTE3,
// from Acc on PIPE_FIX (an Acc tile may store into a narrower float type: converted with
// round-to-nearest-even). TSTORE<TileData, GlobalData, AtomicType::AtomicAdd> adds each element
// to the window's atomically (16-bit floats in float, rounded once). A window of another rank
// on the host comm path is written through the rank's host process (pto/sim/comm_route.hpp).
namespace sim {
template <AtomicType atomic, typename TileData, typename GlobalData>
inline void tstore(GlobalData& dst, TileData& src) noexcept {
    using T = typename TileData::DType;
    using G = typename GlobalData::DType;
    static_assert(TileData::Loc == TileType::Vec || TileData::Loc == TileType::Mat || TileData::Loc == TileType::Acc,
                  "TSTORE reads a Vec, Mat or Acc tile");
    static_assert(std::is_same<T, G>::value || TileData::Loc == TileType::Acc,
                  "TSTORE: tile and global tensor dtypes differ (only an Acc tile converts)");
    static_assert(atomic == AtomicType::AtomicNone || GlobalData::layout != Layout::NZ,
                  "TSTORE: our backend adds atomically into ND and DN global tensors only");
    Op op("TSTORE", TileData::Loc == TileType::Acc ? PIPE_FIX : PIPE_MTE3);
    const int vr = vrow(src), vc = vcol(src);
    if (!placed(op, src) || !window_ok(op, dst, vr, vc)) return;
    rd(op, src, vr, vc);
    if constexpr (GlobalData::layout == Layout::NZ) {
        for_nz(dst, [&](int r, int c, G* g) { *g = ::pto::sim::math::convert<G>(src.data()[r * TileData::Cols + c]); });
        return;
    } else {
        comm::Remote at;
        if (comm::remote(dst.data(), &at)) {
            unsigned char* b = static_cast<unsigned char*>(std::malloc(sizeof(G) * vr * vc + 1));
            if (b == nullptr) {
                ::simpler::report_kernel_error("TSTORE: out of memory");
                return;
            }
            for (int r = 0; r < vr; ++r)
                for (int c = 0; c < vc; ++c) {
                    const G v = ::pto::sim::math::convert<G>(src.data()[r * TileData::Cols + c]);
                    std::memcpy(b + sizeof(G) * (static_cast<std::size_t>(r) * vc + c), &v, sizeof(G));
                }
            comm::write("TSTORE", dst, b, atomic == AtomicType::AtomicAdd);
            std::free(b);
            return;
        }
        if (atomic == AtomicType::AtomicNone && vc == TileData::Cols && dense_rows(dst, vc)) {  // one pass
            const std::size_t n = static_cast<std::size_t>(vr) * vc;
            if (n == 0) return;
            G* g = dst.data();
            const T* s = src.data();
            if constexpr (std::is_same<T, G>::value) {
                if (sizeof(T) * n >= ::pto::sim::math::kStreamBytes)
                    ::pto::sim::math::copy_stream(g, s, sizeof(T) * n);  // a long run: streaming stores
                else
                    ::pto::sim::math::copy_forward(g, s, sizeof(T) * n);
            } else {
                for (std::size_t i = 0; i < n; ++i) g[i] = ::pto::sim::math::convert<G>(s[i]);
            }
            return;
        }
        for_rows(dst, [&](int r, G* g, std::int64_t cs) {
            const T* s = src.data() + r * TileData::Cols;
            if constexpr (atomic == AtomicType::AtomicAdd) {
                for (int c = 0; c < vc; ++c) comm::atomic_add(g + c * cs, ::pto::sim::math::convert<G>(s[c]));
                return;
            }
            if constexpr (std::is_same<T, G>::value) {
                if (cs == 1) {
                    std::memcpy(g, s, sizeof(T) * vc);
                    return;
                }
            }
            for (int c = 0; c < vc; ++c) g[c * cs] = ::pto::sim::math::convert<G>(s[c]);
        });
    }
}
}  // namespace sim

template <typename TileData, typename GlobalData, typename... WaitEvents>
PTO_INST RecordEvent TSTORE(GlobalData& dst, TileData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::tstore<AtomicType::AtomicNone>(dst, src);
    return {};
}
template <typename TileData, typename GlobalData, AtomicType atomicType, typename... WaitEvents>
PTO_INST RecordEvent TSTORE(GlobalData& dst, TileData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::tstore<atomicType>(dst, src);
    return {};
}

// TMOV(dst, src): dst = src over dst's valid shape. Mat->Left/Right/Bias (PIPE_MTE1), Acc->Vec/Mat
// (PIPE_FIX, converting float -> half/bfloat16 with round-to-nearest-even), Vec->Vec (PIPE_V).
template <typename DstTileData, typename SrcTileData, typename... WaitEvents>
PTO_INST RecordEvent TMOV(DstTileData& dst, SrcTileData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    constexpr TileType D = DstTileData::Loc, S = SrcTileData::Loc;
    static_assert((S == TileType::Mat &&
                   (D == TileType::Left || D == TileType::Right || D == TileType::Mat || D == TileType::Bias)) ||
                      (S == TileType::Vec && (D == TileType::Vec || D == TileType::Mat)) ||
                      (S == TileType::Acc && (D == TileType::Vec || D == TileType::Mat)),
                  "TMOV: unsupported tile-type pair (Mat->Left/Right/Bias, Vec->Vec/Mat, Acc->Vec/Mat)");
    static_assert(std::is_same<typename DstTileData::DType, typename SrcTileData::DType>::value || S == TileType::Acc,
                  "TMOV keeps the element type (an Acc source converts)");
    sim::Op op("TMOV", sim::move_pipe<D, S>());
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, src) || !sim::covers(op, "source", src, vr, vc)) return {};
    sim::rd(op, src, vr, vc);
    sim::wr(op, dst, vr, vc);
    sim::copy_window(dst, 0, 0, src, 0, 0, vr, vc);
    return {};
}

// TEXTRACT(dst, src, indexRow, indexCol): dst[r, c] = src[indexRow + r, indexCol + c] over dst's
// valid shape; the window must lie inside src's static shape (as the ISA checks) and its valid
// shape.
template <typename DstTileData, typename SrcTileData, typename... WaitEvents>
PTO_INST RecordEvent TEXTRACT(DstTileData& dst, SrcTileData& src, uint16_t indexRow = 0, uint16_t indexCol = 0,
                              WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(std::is_same<typename DstTileData::DType, typename SrcTileData::DType>::value ||
                      SrcTileData::Loc == TileType::Acc,
                  "TEXTRACT keeps the element type");
    sim::Op op("TEXTRACT", sim::move_pipe<DstTileData::Loc, SrcTileData::Loc>());
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, src)) return {};
    if (indexRow + vr > sim::vrow(src) || indexCol + vc > sim::vcol(src)) {
        ::simpler::report_kernel_error("TEXTRACT: window [%d, %d] at (%u, %u) leaves the source's valid shape [%d, %d]",
                                       vr, vc, indexRow, indexCol, sim::vrow(src), sim::vcol(src));
        return {};
    }
    sim::rd(op, src, vr, vc, indexRow, indexCol);
    sim::wr(op, dst, vr, vc);
    sim::copy_window(dst, 0, 0, src, indexRow, indexCol, vr, vc);
    return {};
}

// TINSERT(dst, src, indexRow, indexCol): dst[indexRow + r, indexCol + c] = src[r, c] over src's
// valid shape (inside dst's static shape). Acc->Mat converts as TMOV does.
template <typename DstTileData, typename SrcTileData, typename... WaitEvents>
PTO_INST RecordEvent TINSERT(DstTileData& dst, SrcTileData& src, uint16_t indexRow, uint16_t indexCol,
                             WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(std::is_same<typename DstTileData::DType, typename SrcTileData::DType>::value ||
                      SrcTileData::Loc == TileType::Acc,
                  "TINSERT keeps the element type (an Acc source converts)");
    sim::Op op("TINSERT", sim::move_pipe<DstTileData::Loc, SrcTileData::Loc>());
    const int vr = sim::vrow(src), vc = sim::vcol(src);
    if (!sim::all_placed(op, dst, src)) return {};
    if (indexRow + vr > DstTileData::Rows || indexCol + vc > DstTileData::Cols) {
        ::simpler::report_kernel_error("TINSERT: source [%d, %d] at (%u, %u) does not fit the destination [%d, %d]", vr,
                                       vc, indexRow, indexCol, DstTileData::Rows, DstTileData::Cols);
        return {};
    }
    sim::rd(op, src, vr, vc);
    sim::wr(op, dst, vr, vc, indexRow, indexCol);
    sim::copy_window(dst, indexRow, indexCol, src, 0, 0, vr, vc);
    return {};
}

// TRESHAPE(dst, src): src's bytes read as another tile (same tile type and byte size; a boxed
// layout only as a boxed one): dst element (r, c) is the one the ISA stores at dst's (r, c) (an
// NZ [R, C] Mat tile read as a ZN [C, R] one is its transpose). The device backends alias dst
// to src's storage and run nothing: with dst placed over src's bytes it is a declaration, on no
// pipe (the instructions that read dst are ordered against src's writers, and the first access
// through dst converts our row-major storage through the ISA's placements, sim::hold). A dst
// elsewhere is a copy on PIPE_V.
template <typename TileDataOut, typename TileDataIn, typename... WaitEvents>
PTO_INST RecordEvent TRESHAPE(TileDataOut& dst, TileDataIn& src, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(TileDataOut::Loc == TileDataIn::Loc, "TRESHAPE: tile types must match");
    static_assert(TileDataOut::GetSizeInBytes() == TileDataIn::GetSizeInBytes(), "TRESHAPE: total byte size must match");
    static_assert((TileDataOut::SFractal == SLayout::NoneBox) == (TileDataIn::SFractal == SLayout::NoneBox),
                  "TRESHAPE: cannot reshape between boxed and non-boxed layouts");
    if (static_cast<void*>(dst.data()) == static_cast<void*>(src.data()) && dst.data() != nullptr) return {};
    sim::Op op("TRESHAPE", PIPE_V);
    if (!sim::all_placed(op, dst, src)) return {};
    sim::rd(op, src, TileDataIn::Rows, TileDataIn::Cols);
    sim::wr(op, dst, TileDataOut::Rows, TileDataOut::Cols);
    sim::relayout(dst, src);
    return {};
}

// TTRANS(dst, src, tmp): dst[c, r] = src[r, c] over src's valid shape (dst must cover the
// transposed shape). tmp is not used.
template <typename TileDataDst, typename TileDataSrc, typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TTRANS(TileDataDst& dst, TileDataSrc& src, TileDataTmp& tmp, WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    sim::Op op("TTRANS", PIPE_V);
    const int vr = sim::vrow(src), vc = sim::vcol(src);
    if (!sim::all_placed(op, dst, src) || !sim::covers(op, "destination", dst, vc, vr)) return {};
    if (static_cast<void*>(dst.data()) == static_cast<void*>(src.data())) {
        ::simpler::report_kernel_error("TTRANS: destination and source must be different tiles");
        return {};
    }
    sim::rd(op, src, vr, vc);
    sim::wr(op, dst, vc, vr);
    auto d = sim::view(dst, vc, vr);
    ::pto::sim::math::transpose(d, sim::view(src, vr, vc));
    return {};
}

// TCONCAT(dst, src0, src1): dst[:, 0:c0] = src0, dst[:, c0:c0+c1] = src1 over dst's valid rows,
// c0/c1 the sources' valid columns (dst's valid columns must cover c0 + c1).
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>
PTO_INST RecordEvent TCONCAT(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::Op op("TCONCAT", PIPE_V);
    const int vr = sim::vrow(dst), c0 = sim::vcol(src0), c1 = sim::vcol(src1);
    if (!sim::all_placed(op, dst, src0, src1) || !sim::covers(op, "first source", src0, vr, c0) ||
        !sim::covers(op, "second source", src1, vr, c1) || !sim::covers(op, "destination", dst, vr, c0 + c1))
        return {};
    sim::rd(op, src0, vr, c0);
    sim::rd(op, src1, vr, c1);
    sim::wr(op, dst, vr, c0 + c1);
    auto d = sim::view(dst, vr, c0 + c1);
    ::pto::sim::math::concat(d, sim::view(src0, vr, c0), sim::view(src1, vr, c1));
    return {};
}

// TGATHER(dst, src, indices, tmp), the index form: dst[r, c] = the element of src at flat
// position indices[r, c] (row-major over src's static [Rows, Cols], as the official CPU backend
// counts), or 0 when that position lies outside it, over dst's valid shape (indices must cover
// it). Indices are int32 or uint32; int16/uint16 too with a 16-bit src (a5 takes those). tmp
// is not used.
template <typename TileDataD, typename TileDataS, typename TileDataI, typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TGATHER(TileDataD& dst, TileDataS& src, TileDataI& indices, TileDataTmp& tmp,
                             WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    using T = typename TileDataD::DType;
    using I = typename TileDataI::DType;
    static_assert(std::is_same<T, typename TileDataS::DType>::value, "TGATHER: dst and src dtypes differ");
    static_assert(std::is_integral<I>::value && (sizeof(I) == 4 || (sizeof(I) == 2 && sizeof(T) == 2)),
                  "TGATHER: indices are 32-bit integers (16-bit ones with a 16-bit src)");
    static_assert(TileDataD::Loc == TileType::Vec && TileDataS::Loc == TileType::Vec &&
                      TileDataI::Loc == TileType::Vec,
                  "TGATHER works on Vec tiles");
    sim::Op op("TGATHER", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, src, indices) || !sim::covers(op, "indices", indices, vr, vc)) return {};
    sim::rd(op, src, TileDataS::Rows, TileDataS::Cols);  // any element of src
    sim::rd(op, indices, vr, vc);
    sim::wr(op, dst, vr, vc);
    constexpr long long numel = static_cast<long long>(TileDataS::Rows) * TileDataS::Cols;
    const T* s = src.data();
    for (int r = 0; r < vr; ++r) {
        const I* ix = indices.data() + r * TileDataI::Cols;
        T* d = dst.data() + r * TileDataD::Cols;
        for (int c = 0; c < vc; ++c) {
            const long long flat = static_cast<long long>(ix[c]);
            d[c] = flat >= 0 && flat < numel ? s[flat] : T(0);
        }
    }
    return {};
}

// TGATHER<DstTileData, SrcTileData, maskPattern>(dst, src), the mask form along rows: for each
// valid row r of src, the columns c < src's valid cols the pattern keeps (P0101: c % 2 == 0,
// P1010: c % 2 == 1, P0001..P1000: c % 4 == 0..3, P1111: all), in order, are copied bit for bit
// to dst row r, columns 0, 1, ... (dst and src dtypes of one size, 2 or 4 bytes: P1010 of
// TSORT32's pairs gives the indices). The hardware packs the kept columns contiguously, so
// their count must equal dst's Cols, and dst's valid shape must cover [src valid rows, Cols].
// The official signature's GatherAxis parameter (GATHER_COL) is not implemented.
namespace sim {
// The first column a mask pattern keeps and the distance to the next.
constexpr int mask_first(MaskPattern p) noexcept {
    return p == MaskPattern::P1010 || p == MaskPattern::P0010 ? 1
           : p == MaskPattern::P0100                         ? 2
           : p == MaskPattern::P1000                         ? 3
                                                             : 0;
}
constexpr int mask_step(MaskPattern p) noexcept {
    return p == MaskPattern::P1111 ? 1 : p == MaskPattern::P0101 || p == MaskPattern::P1010 ? 2 : 4;
}
}  // namespace sim

template <typename DstTileData, typename SrcTileData, MaskPattern maskPattern = MaskPattern::P1111,
          typename... WaitEvents>
PTO_INST RecordEvent TGATHER(DstTileData& dst, SrcTileData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    constexpr std::size_t E = sizeof(typename SrcTileData::DType);
    static_assert(sizeof(typename DstTileData::DType) == E && (E == 2 || E == 4),
                  "TGATHER (mask form): dst and src elements are both 16 or both 32 bits");
    static_assert(DstTileData::Loc == TileType::Vec && SrcTileData::Loc == TileType::Vec, "TGATHER works on Vec tiles");
    static_assert(DstTileData::isRowMajor && SrcTileData::isRowMajor, "TGATHER (mask form) works on row-major tiles");
    static_assert(maskPattern >= MaskPattern::P0101 && maskPattern <= MaskPattern::P1111,
                  "TGATHER: not a MaskPattern");
    constexpr int first = sim::mask_first(maskPattern), step = sim::mask_step(maskPattern);
    sim::Op op("TGATHER", PIPE_V);
    const int vr = sim::vrow(src), vc = sim::vcol(src);
    if (!sim::all_placed(op, dst, src)) return {};
    const int n = vc > first ? (vc - first + step - 1) / step : 0;
    if (n != DstTileData::Cols) {
        ::simpler::report_kernel_error(
            "TGATHER: the mask keeps %d of src's %d valid cols, dst has %d cols (they must be equal: dst is written "
            "contiguously)",
            n, vc, DstTileData::Cols);
        return {};
    }
    if (!sim::covers(op, "destination", dst, vr, n)) return {};
    sim::rd(op, src, vr, vc);
    sim::wr(op, dst, vr, n);
    for (int r = 0; r < vr; ++r) {
        const unsigned char* s = reinterpret_cast<const unsigned char*>(src.data() + r * SrcTileData::Cols);
        unsigned char* d = reinterpret_cast<unsigned char*>(dst.data() + r * DstTileData::Cols);
        if constexpr (step == 1) {
            std::memmove(d, s, E * n);
        } else {
            for (int k = 0; k < n; ++k) std::memcpy(d + E * k, s + E * (first + k * step), E);
        }
    }
    return {};
}

// TSCATTER(dst, src, indexes), the index form: for each element (i, j) of indexes' valid shape,
// in row-major order, the element of dst at flat row-major position indexes[i, j] of its static
// [Rows, Cols] = src[i, j] (a later write to the same position wins); the rest of dst is kept.
// src must cover indexes' valid shape. A position outside dst is reported and nothing is written
// (the official CPU backend does not check it).
template <typename TileDataD, typename TileDataS, typename TileDataI, typename... WaitEvents>
PTO_INST RecordEvent TSCATTER(TileDataD& dst, TileDataS& src, TileDataI& indexes, WaitEvents&... events) {
    (void)sizeof...(events);
    using T = typename TileDataD::DType;
    using I = typename TileDataI::DType;
    static_assert(std::is_same<T, typename TileDataS::DType>::value, "TSCATTER: dst and src dtypes differ");
    static_assert(std::is_integral<I>::value, "TSCATTER: indexes are integers");
    static_assert(TileDataD::Loc == TileType::Vec && TileDataS::Loc == TileType::Vec &&
                      TileDataI::Loc == TileType::Vec,
                  "TSCATTER works on Vec tiles");
    sim::Op op("TSCATTER", PIPE_V);
    const int vr = sim::vrow(indexes), vc = sim::vcol(indexes);
    if (!sim::all_placed(op, dst, src, indexes) || !sim::covers(op, "source", src, vr, vc)) return {};
    constexpr long long numel = static_cast<long long>(TileDataD::Rows) * TileDataD::Cols;
    for (int r = 0; r < vr; ++r)
        for (int c = 0; c < vc; ++c) {
            const long long at = static_cast<long long>(indexes.data()[r * TileDataI::Cols + c]);
            if (at < 0 || at >= numel) {
                ::simpler::report_kernel_error(
                    "TSCATTER: index %lld at [%d, %d] lies outside the destination's %d x %d elements", at, r, c,
                    TileDataD::Rows, TileDataD::Cols);
                return {};
            }
        }
    sim::rd(op, src, vr, vc);
    sim::rd(op, indexes, vr, vc);
    sim::wr(op, dst, TileDataD::Rows, TileDataD::Cols);  // any element of dst
    for (int r = 0; r < vr; ++r)
        for (int c = 0; c < vc; ++c)
            dst.data()[indexes.data()[r * TileDataI::Cols + c]] = src.data()[r * TileDataS::Cols + c];
    return {};
}

}  // namespace pto
