// The PTO-ISA instructions our CPU backend implements (docs/tile-interface.md lists them with
// their semantics). Every instruction:
//  1. is issued on its pipe (sim::Op: TLOAD MTE2; TSTORE MTE3 from Vec/Mat, FIX from Acc;
//     TMOV/TEXTRACT Mat->Left/Right MTE1, Acc->Vec/Mat FIX; TMATMUL* M; vector ops V);
//  2. checks its operands are placed (TASSIGN) and their valid shapes cover the iteration
//     domain (dst's valid shape unless the ISA page says otherwise);
//  3. records its reads and writes (the overlap and pipe-hazard checks of sim/core.hpp);
//  4. computes with simpler's tile math library (simpler/tile/*.hpp) through row-major views.
// A failed check is reported through simpler::report_kernel_error and the instruction does not
// compute (hazards are reported and the instruction still computes: the CPU order is safe).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "pto/sim/core.hpp"
#include "pto/sim/tile.hpp"
#include "pto/sim/types.hpp"
#include "simpler/tile/bitwise.hpp"
#include "simpler/tile/compare.hpp"
#include "simpler/tile/debug.hpp"
#include "simpler/tile/dtype.hpp"
#include "simpler/tile/elementwise.hpp"
#include "simpler/tile/layout.hpp"
#include "simpler/tile/matmul.hpp"
#include "simpler/tile/reduce.hpp"
#include "simpler/tile/tile.hpp"

namespace pto {
namespace sim {

// A row-major view of a placed tile with a chosen valid shape: the operand type of simpler's
// tile math (simpler/tile/*.hpp).
template <::simpler::tile::Space S, class T, int R, int C>
struct View {
    using value_type = T;
    static constexpr ::simpler::tile::Space space = S;
    static constexpr int rows = R;
    static constexpr int cols = C;
    static constexpr int numel = R * C;
    T* data;
    int valid_rows;
    int valid_cols;
    T* row(int r) const noexcept { return data + r * C; }
    T& operator()(int r, int c) const noexcept { return data[r * C + c]; }
};

}  // namespace sim
}  // namespace pto

// simpler's tile math accepts the views as tiles.
namespace simpler {
namespace tile {
template <Space S, class T, int R, int C>
struct is_tile<::pto::sim::View<S, T, R, C>> : std::true_type {};
}  // namespace tile
}  // namespace simpler

namespace pto {

// Precision selectors of the official signatures (our backend computes every one in float
// with the host libm: DEFAULT and HIGH_PRECISION give the same results).
enum class ExpAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };
enum class LogAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };
enum class SqrtAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };
enum class RsqrtAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };
enum class RecipAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };
enum class DivAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };
enum class FmodAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };
enum class FmodSAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };

namespace sim {

namespace st = ::simpler::tile;

template <TileType L>
constexpr st::Space space_of() noexcept {
    return L == TileType::Vec    ? st::Space::Vec
           : L == TileType::Mat  ? st::Space::Mat
           : L == TileType::Left ? st::Space::Left
           : L == TileType::Right ? st::Space::Right
                                 : st::Space::Acc;
}

template <class TileT>
using view_t = View<space_of<TileT::Loc>(), typename TileT::DType, TileT::Rows, TileT::Cols>;

template <class TileT>
inline view_t<TileT> view(TileT& t, int vr, int vc) noexcept {
    return view_t<TileT>{t.data(), vr, vc};
}

template <class TileT>
inline int vrow(const TileT& t) noexcept {
    return static_cast<int>(t.GetValidRow());
}
template <class TileT>
inline int vcol(const TileT& t) noexcept {
    return static_cast<int>(t.GetValidCol());
}

template <class TileT>
inline bool placed(const Op& op, const TileT& t) noexcept {
    if (t.data() != nullptr) return true;
    ::simpler::report_kernel_error("%s: an operand %s %s [%d, %d] tile was not placed by TASSIGN", op.name(),
                                   tile_type_name(TileT::Loc), dtype_name<typename TileT::DType>(), TileT::Rows,
                                   TileT::Cols);
    return false;
}

template <class... Ts>
inline bool all_placed(const Op& op, const Ts&... t) noexcept {
    return (placed(op, t) && ...);
}

// Whether `t`'s valid shape covers [vr, vc] (the instruction's domain).
template <class TileT>
inline bool covers(const Op& op, const char* what, const TileT& t, int vr, int vc) noexcept {
    if (vrow(t) >= vr && vcol(t) >= vc) return true;
    ::simpler::report_kernel_error("%s: %s valid shape [%d, %d] does not cover the domain [%d, %d]", op.name(), what,
                                   vrow(t), vcol(t), vr, vc);
    return false;
}

// Byte range of the [r0, r0 + nr) x [c0, c0 + nc) window of t (row-major storage).
template <class TileT>
inline void range(const TileT& t, int r0, int c0, int nr, int nc, std::uint32_t* lo, std::uint32_t* hi) noexcept {
    constexpr std::uint32_t s = sizeof(typename TileT::DType);
    if (nr <= 0 || nc <= 0) {
        *lo = *hi = t.sim_offset();
        return;
    }
    *lo = t.sim_offset() + static_cast<std::uint32_t>(r0 * TileT::Cols + c0) * s;
    *hi = t.sim_offset() + static_cast<std::uint32_t>((r0 + nr - 1) * TileT::Cols + c0 + nc) * s;
}

template <class TileT>
inline void rd(Op& op, const TileT& t, int nr, int nc, int r0 = 0, int c0 = 0) noexcept {
    std::uint32_t lo, hi;
    range(t, r0, c0, nr, nc, &lo, &hi);
    op.read(TileT::buf(), lo, hi, t.sim_id());
}
template <class TileT>
inline void wr(Op& op, const TileT& t, int nr, int nc, int r0 = 0, int c0 = 0) noexcept {
    std::uint32_t lo, hi;
    range(t, r0, c0, nr, nc, &lo, &hi);
    op.write(TileT::buf(), lo, hi, t.sim_id());
}

template <class T>
using compute_t = st::compute_t<T>;

// The pipe of a move between tile types (TMOV, TEXTRACT, TINSERT).
template <TileType Dst, TileType Src>
constexpr pipe_t move_pipe() noexcept {
    if (Src == TileType::Acc) return PIPE_FIX;
    if (Src == TileType::Mat && (Dst == TileType::Left || Dst == TileType::Right)) return PIPE_MTE1;
    if (Src == TileType::Vec && Dst == TileType::Mat) return PIPE_MTE3;
    if (Src == TileType::Mat && Dst == TileType::Mat) return PIPE_MTE1;
    return PIPE_V;
}

template <class D, class S>
inline void copy_window(D& dst, int dr0, int dc0, S& src, int sr0, int sc0, int nr, int nc) noexcept {
    using DT = typename D::DType;
    using ST = typename S::DType;
    for (int r = 0; r < nr; ++r) {
        DT* d = dst.data() + (dr0 + r) * D::Cols + dc0;
        const ST* s = src.data() + (sr0 + r) * S::Cols + sc0;
        if constexpr (std::is_same<DT, ST>::value) {
            if (static_cast<const void*>(d) != static_cast<const void*>(s)) std::memmove(d, s, sizeof(DT) * nc);
        } else {
            for (int c = 0; c < nc; ++c) d[c] = st::convert<DT>(s[c]);
        }
    }
}

// The value a pad mode stands for in T.
template <class T>
inline T pad_value(PadValue p) noexcept {
    using C = compute_t<T>;
    using L = std::numeric_limits<C>;
    const auto raw = static_cast<std::uint64_t>(p);
    if (raw >= static_cast<std::uint64_t>(PadValue::CustomBase)) {
        float f;
        const auto bits = static_cast<std::uint32_t>(raw >> 32);
        std::memcpy(&f, &bits, sizeof f);
        return st::convert<T>(f);
    }
    switch (p) {
        case PadValue::Max: return st::from_compute<T>(L::has_infinity ? L::infinity() : L::max());
        case PadValue::Min: return st::from_compute<T>(L::has_infinity ? -L::infinity() : L::lowest());
        default: return st::from_compute<T>(C(0));
    }
}

// Walk a GlobalTensor's window as rows x cols, calling f(row, col, element pointer) per element
// (f(row, pointer of column 0, column stride) per row for ND/DN, where a row is contiguous in
// the tile).
//  - ND / DN: row index = ((i0 * d1 + i1) * d2 + i2) * d3 + i3, column = i4 (explicit strides).
//  - NZ: the fractal layout [1, C / C0, R / 16, 16, C0]: logical (r, c) is element
//    (0, c / C0, r / 16, r % 16, c % C0); rows = d2 * d3, cols = d1 * d4.
template <class G, class F>
inline void for_rows(G& g, F f) noexcept {
    std::int64_t d[5], s[5];
    for (int i = 0; i < 5; ++i) {
        d[i] = g.GetShape(i);
        s[i] = g.GetStride(i);
    }
    int row = 0;
    for (std::int64_t i0 = 0; i0 < d[0]; ++i0)
        for (std::int64_t i1 = 0; i1 < d[1]; ++i1)
            for (std::int64_t i2 = 0; i2 < d[2]; ++i2)
                for (std::int64_t i3 = 0; i3 < d[3]; ++i3, ++row)
                    f(row, g.data() + i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3], s[4]);
}

template <class G, class F>
inline void for_nz(G& g, F f) noexcept {
    std::int64_t d[5], s[5];
    for (int i = 0; i < 5; ++i) {
        d[i] = g.GetShape(i);
        s[i] = g.GetStride(i);
    }
    for (std::int64_t i1 = 0; i1 < d[1]; ++i1)
        for (std::int64_t i2 = 0; i2 < d[2]; ++i2)
            for (std::int64_t i3 = 0; i3 < d[3]; ++i3)
                for (std::int64_t i4 = 0; i4 < d[4]; ++i4)
                    f(static_cast<int>(i2 * d[3] + i3), static_cast<int>(i1 * d[4] + i4),
                      g.data() + i1 * s[1] + i2 * s[2] + i3 * s[3] + i4 * s[4]);
}

// Check a GlobalTensor window against the tile's valid shape [vr, vc].
template <class G>
inline bool window_ok(const Op& op, G& g, int vr, int vc) noexcept {
    constexpr bool nz = G::layout == Layout::NZ;
    static_assert(G::layout == Layout::ND || G::layout == Layout::DN || nz,
                  "our backend implements ND, DN and NZ global tensors");
    for (int i = 0; i < 5; ++i) {
        if (g.GetShape(i) <= 0) {
            ::simpler::report_kernel_error("%s: global tensor dim %d is %lld, expected > 0", op.name(), i,
                                           static_cast<long long>(g.GetShape(i)));
            return false;
        }
    }
    std::int64_t rows, cols;
    if (nz) {
        using T = typename G::DType;
        if (g.GetShape(0) != 1 || g.GetShape(3) != 16 || g.GetShape(4) * static_cast<std::int64_t>(sizeof(T)) != 32) {
            ::simpler::report_kernel_error(
                "%s: an NZ global tensor is [1, C / C0, R / 16, 16, C0] with C0 * sizeof(T) = 32 bytes, got [%lld, %lld, "
                "%lld, %lld, %lld]",
                op.name(), static_cast<long long>(g.GetShape(0)), static_cast<long long>(g.GetShape(1)),
                static_cast<long long>(g.GetShape(2)), static_cast<long long>(g.GetShape(3)),
                static_cast<long long>(g.GetShape(4)));
            return false;
        }
        rows = g.GetShape(2) * g.GetShape(3);
        cols = g.GetShape(1) * g.GetShape(4);
    } else {
        rows = g.GetShape(0) * g.GetShape(1) * g.GetShape(2) * g.GetShape(3);
        cols = g.GetShape(4);
    }
    if (rows != vr || cols != vc) {
        ::simpler::report_kernel_error(
            "%s: global tensor window [%lld x %lld] (%s) does not match the tile's valid shape [%d, %d]", op.name(),
            static_cast<long long>(rows), static_cast<long long>(cols),
            nz ? "NZ: dims 2 * 3 as rows, 1 * 4 as columns" : "dims 0..3 as rows, dim 4 as columns", vr, vc);
        return false;
    }
    if (g.data() == nullptr && vr > 0 && vc > 0) {
        ::simpler::report_kernel_error("%s: global tensor has a null address", op.name());
        return false;
    }
    return true;
}

}  // namespace sim

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
    if constexpr (GlobalData::layout == Layout::NZ) {
        sim::for_nz(src, [&](int r, int c, const T* g) { dst.data()[r * TileData::Cols + c] = *g; });
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
// round-to-nearest-even).
template <typename TileData, typename GlobalData, typename... WaitEvents>
PTO_INST RecordEvent TSTORE(GlobalData& dst, TileData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using T = typename TileData::DType;
    using G = typename GlobalData::DType;
    static_assert(TileData::Loc == TileType::Vec || TileData::Loc == TileType::Mat || TileData::Loc == TileType::Acc,
                  "TSTORE reads a Vec, Mat or Acc tile");
    static_assert(std::is_same<T, G>::value || TileData::Loc == TileType::Acc,
                  "TSTORE: tile and global tensor dtypes differ (only an Acc tile converts)");
    sim::Op op("TSTORE", TileData::Loc == TileType::Acc ? PIPE_FIX : PIPE_MTE3);
    const int vr = sim::vrow(src), vc = sim::vcol(src);
    if (!sim::placed(op, src) || !sim::window_ok(op, dst, vr, vc)) return {};
    sim::rd(op, src, vr, vc);
    if constexpr (GlobalData::layout == Layout::NZ) {
        sim::for_nz(dst, [&](int r, int c, G* g) { *g = ::simpler::tile::convert<G>(src.data()[r * TileData::Cols + c]); });
        return {};
    }
    sim::for_rows(dst, [&](int r, G* g, std::int64_t cs) {
        const T* s = src.data() + r * TileData::Cols;
        if constexpr (std::is_same<T, G>::value) {
            if (cs == 1) {
                std::memcpy(g, s, sizeof(T) * vc);
                return;
            }
        }
        for (int c = 0; c < vc; ++c) g[c * cs] = ::simpler::tile::convert<G>(s[c]);
    });
    return {};
}

// TMOV(dst, src): dst = src over dst's valid shape. Mat->Left/Right (PIPE_MTE1), Acc->Vec/Mat
// (PIPE_FIX, converting float -> half/bfloat16 with round-to-nearest-even), Vec->Vec (PIPE_V).
template <typename DstTileData, typename SrcTileData, typename... WaitEvents>
PTO_INST RecordEvent TMOV(DstTileData& dst, SrcTileData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    constexpr TileType D = DstTileData::Loc, S = SrcTileData::Loc;
    static_assert((S == TileType::Mat && (D == TileType::Left || D == TileType::Right || D == TileType::Mat)) ||
                      (S == TileType::Vec && (D == TileType::Vec || D == TileType::Mat)) ||
                      (S == TileType::Acc && (D == TileType::Vec || D == TileType::Mat)),
                  "TMOV: unsupported tile-type pair (Mat->Left/Right, Vec->Vec/Mat, Acc->Vec/Mat)");
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

// TRESHAPE(dst, src): the same bytes as another tile shape (same tile type and byte size);
// element i of dst's row-major storage is element i of src's. dst becomes the tile the bytes
// belong to.
template <typename TileDataOut, typename TileDataIn, typename... WaitEvents>
PTO_INST RecordEvent TRESHAPE(TileDataOut& dst, TileDataIn& src, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(TileDataOut::Loc == TileDataIn::Loc, "TRESHAPE: tile types must match");
    static_assert(TileDataOut::GetSizeInBytes() == TileDataIn::GetSizeInBytes(), "TRESHAPE: total byte size must match");
    sim::Op op("TRESHAPE", PIPE_V);
    if (!sim::all_placed(op, dst, src)) return {};
    sim::rd(op, src, TileDataIn::Rows, TileDataIn::Cols);
    sim::wr(op, dst, TileDataOut::Rows, TileDataOut::Cols);
    if (static_cast<void*>(dst.data()) != static_cast<void*>(src.data()))
        std::memmove(dst.data(), src.data(), TileDataIn::GetSizeInBytes());
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
    ::simpler::tile::transpose(d, sim::view(src, vr, vc));
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
    ::simpler::tile::concat(d, sim::view(src0, vr, c0), sim::view(src1, vr, c1));
    return {};
}

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

// TFILLPAD(dst, src) (Vec): dst[r, c] = src[r, c] inside src's valid shape and dst's PadVal
// (Zero, Max = +inf/highest, Min = -inf/lowest, or a custom float) elsewhere, over dst's whole
// static shape.
template <TFillPadMode mode = TFillPadMode::Normal, typename DstTileData, typename SrcTileData,
          std::enable_if_t<(DstTileData::Loc == TileType::Vec) && (SrcTileData::Loc == TileType::Vec), int> = 0,
          typename... WaitEvents>
PTO_INST RecordEvent TFILLPAD(DstTileData& dst, SrcTileData& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using T = typename DstTileData::DType;
    static_assert(sizeof(T) == sizeof(typename SrcTileData::DType), "TFILLPAD: element sizes must match");
    static_assert(DstTileData::Rows == SrcTileData::Rows && DstTileData::Cols == SrcTileData::Cols,
                  "TFILLPAD: dst and src static shapes must match");
    sim::Op op("TFILLPAD", PIPE_V);
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

// TCVT(dst, src, mode): dst[r, c] = convert(src[r, c]) over dst's valid shape. Narrowing float
// conversions round by `mode` (CAST_NONE/CAST_RINT: nearest even); float -> integer and integer
// -> integer saturate; NaN -> 0 for integers (simpler::tile::convert).
template <bool NeedSetCtrl = true, typename TileDataD, typename TileDataS, typename... WaitEvents>
PTO_INST RecordEvent TCVT(TileDataD& dst, TileDataS& src, RoundMode mode, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::Op op("TCVT", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::all_placed(op, dst, src) || !sim::covers(op, "source", src, vr, vc)) return {};
    sim::rd(op, src, vr, vc);
    sim::wr(op, dst, vr, vc);
    const auto m = static_cast<::simpler::tile::RoundMode>(static_cast<std::uint8_t>(mode));
    auto d = sim::view(dst, vr, vc);
    ::simpler::tile::cast(d, sim::view(src, vr, vc), m);
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
        ::simpler::tile::matmul_acc(cv, view(a, m, k), view(b, k, n));
    else
        ::simpler::tile::matmul(cv, view(a, m, k), view(b, k, n));
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

// ---- element-wise ---------------------------------------------------------------------------

namespace sim {
template <class D, class A, class B, class F>
inline void binary(const char* name, D& dst, A& a, B& b, F f) noexcept {
    static_assert(D::Loc == TileType::Vec && A::Loc == TileType::Vec && B::Loc == TileType::Vec,
                  "vector instructions take Vec tiles");
    Op op(name, PIPE_V);
    const int vr = vrow(dst), vc = vcol(dst);
    if (!all_placed(op, dst, a, b) || !covers(op, "src0", a, vr, vc) || !covers(op, "src1", b, vr, vc)) return;
    rd(op, a, vr, vc);
    rd(op, b, vr, vc);
    wr(op, dst, vr, vc);
    auto d = view(dst, vr, vc);
    st::detail::map2(name, d, view(a, vr, vc), view(b, vr, vc), f);
}
template <class D, class A, class F>
inline void unary(const char* name, D& dst, A& a, F f) noexcept {
    static_assert(D::Loc == TileType::Vec && A::Loc == TileType::Vec, "vector instructions take Vec tiles");
    Op op(name, PIPE_V);
    const int vr = vrow(dst), vc = vcol(dst);
    if (!all_placed(op, dst, a) || !covers(op, "src", a, vr, vc)) return;
    rd(op, a, vr, vc);
    wr(op, dst, vr, vc);
    auto d = view(dst, vr, vc);
    st::detail::map1(name, d, view(a, vr, vc), f);
}
template <class T>
inline void require_float() noexcept {
    static_assert(st::is_float_like_v<T>, "this instruction needs a floating-point tile (float, half or bfloat16_t)");
}
template <class T>
inline void require_int() noexcept {
    static_assert(st::is_int_v<T>, "this instruction needs an integer tile");
}
}  // namespace sim

#define PTO_SIM_BINARY(NAME, EXPR)                                                                              \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>       \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) { \
        (void)sizeof...(events);                                                                                 \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                   \
        sim::binary(#NAME, dst, src0, src1, [](C x, C y) noexcept { return EXPR; });                             \
        return {};                                                                                               \
    }
#define PTO_SIM_SCALAR(NAME, EXPR)                                                                                 \
    template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>                                  \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType scalar,             \
                              WaitEvents&... events) {                                                             \
        (void)sizeof...(events);                                                                                   \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                     \
        const C y = ::simpler::tile::to_compute(scalar);                                                          \
        sim::unary(#NAME, dst, src0, [y](C x) noexcept { return EXPR; });                                          \
        return {};                                                                                                 \
    }

PTO_SIM_BINARY(TADD, ::simpler::tile::detail::op_add<C>(x, y))
PTO_SIM_BINARY(TSUB, ::simpler::tile::detail::op_sub<C>(x, y))
PTO_SIM_BINARY(TMUL, ::simpler::tile::detail::op_mul<C>(x, y))
PTO_SIM_BINARY(TMAX, ::simpler::tile::detail::op_max<C>(x, y))
PTO_SIM_BINARY(TMIN, ::simpler::tile::detail::op_min<C>(x, y))
PTO_SIM_SCALAR(TADDS, ::simpler::tile::detail::op_add<C>(x, y))
PTO_SIM_SCALAR(TSUBS, ::simpler::tile::detail::op_sub<C>(x, y))
PTO_SIM_SCALAR(TMULS, ::simpler::tile::detail::op_mul<C>(x, y))
PTO_SIM_SCALAR(TMAXS, ::simpler::tile::detail::op_max<C>(x, y))
PTO_SIM_SCALAR(TMINS, ::simpler::tile::detail::op_min<C>(x, y))

// TDIV / TDIVS: integer division by zero gives 0 and is reported.
template <auto PrecisionType = DivAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1,
          typename... WaitEvents>
PTO_INST RecordEvent TDIV(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    bool zero = false;
    sim::binary("TDIV", dst, src0, src1, [&zero](C x, C y) noexcept { return ::simpler::tile::detail::op_div<C>(x, y, &zero); });
    if (zero) ::simpler::report_kernel_error("TDIV: integer division by zero (result set to 0)");
    return {};
}
template <auto PrecisionType = DivAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TDIVS(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType scalar,
                           WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    const C y = ::simpler::tile::to_compute(scalar);
    bool zero = false;
    sim::unary("TDIVS", dst, src0, [y, &zero](C x) noexcept { return ::simpler::tile::detail::op_div<C>(x, y, &zero); });
    if (zero) ::simpler::report_kernel_error("TDIVS: integer division by zero (result set to 0)");
    return {};
}
// TDIVS(dst, scalar, src): dst = scalar / src.
template <auto PrecisionType = DivAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TDIVS(TileDataDst& dst, typename TileDataDst::DType scalar, TileDataSrc& src0,
                           WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    const C y = ::simpler::tile::to_compute(scalar);
    bool zero = false;
    sim::unary("TDIVS", dst, src0, [y, &zero](C x) noexcept { return ::simpler::tile::detail::op_div<C>(y, x, &zero); });
    if (zero) ::simpler::report_kernel_error("TDIVS: integer division by zero (result set to 0)");
    return {};
}

#define PTO_SIM_UNARY_F(NAME, ALG, EXPR)                                                             \
    template <auto PrecisionType = ALG::DEFAULT, typename TileDataDst, typename TileDataSrc, typename... WaitEvents> \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {           \
        (void)sizeof...(events);                                                                     \
        sim::require_float<typename TileDataDst::DType>();                                           \
        sim::unary(#NAME, dst, src, [](float x) noexcept { return EXPR; });                          \
        return {};                                                                                   \
    }
PTO_SIM_UNARY_F(TEXP, ExpAlgorithm, std::exp(x))
// log, sqrt and rsqrt are evaluated in double and rounded once to float (as the official CPU
// backend does; sqrt is correctly rounded either way).
PTO_SIM_UNARY_F(TLOG, LogAlgorithm, static_cast<float>(std::log(static_cast<double>(x))))
PTO_SIM_UNARY_F(TSQRT, SqrtAlgorithm, std::sqrt(x))
PTO_SIM_UNARY_F(TRSQRT, RsqrtAlgorithm, static_cast<float>(1.0 / std::sqrt(static_cast<double>(x))))
PTO_SIM_UNARY_F(TRECIP, RecipAlgorithm, 1.0f / x)
#undef PTO_SIM_UNARY_F

template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TABS(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    sim::unary("TABS", dst, src, [](C x) noexcept {
        if constexpr (std::is_floating_point<C>::value)
            return std::fabs(x);
        else
            return x < C(0) ? ::simpler::tile::detail::op_sub<C>(C(0), x) : x;
    });
    return {};
}
template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TNEG(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    sim::unary("TNEG", dst, src, [](C x) noexcept {
        if constexpr (std::is_floating_point<C>::value)
            return -x;
        else
            return ::simpler::tile::detail::op_sub<C>(C(0), x);
    });
    return {};
}
template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TRELU(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    sim::unary("TRELU", dst, src, [](C x) noexcept { return x < C(0) ? C(0) : x; });
    return {};
}
// TLRELU(dst, src, slope): x > 0 ? x : slope * x.
template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TLRELU(TileDataDst& dst, TileDataSrc& src, typename TileDataSrc::DType scalar,
                            WaitEvents&... events) {
    (void)sizeof...(events);
    sim::require_float<typename TileDataDst::DType>();
    const float s = static_cast<float>(::simpler::tile::to_compute(scalar));
    sim::unary("TLRELU", dst, src, [s](float x) noexcept { return x > 0.0f ? x : x * s; });
    return {};
}
// TPRELU(dst, src0, slope, tmp): x > 0 ? x : slope[r, c] * x. tmp is not used.
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename TileDataTmp,
          typename... WaitEvents>
PTO_INST RecordEvent TPRELU(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, TileDataTmp& tmp,
                            WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    sim::require_float<typename TileDataDst::DType>();
    sim::binary("TPRELU", dst, src0, src1, [](float x, float s) noexcept { return x > 0.0f ? x : x * s; });
    return {};
}
// TFMOD / TFMODS: C's fmod (the sign of the dividend), floating-point tiles.
template <auto PrecisionType = FmodAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc0,
          typename TileDataSrc1, typename... WaitEvents>
PTO_INST RecordEvent TFMOD(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::require_float<typename TileDataDst::DType>();
    sim::binary("TFMOD", dst, src0, src1, [](float x, float y) noexcept { return std::fmod(x, y); });
    return {};
}
template <auto PrecisionType = FmodSAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc,
          typename... WaitEvents>
PTO_INST RecordEvent TFMODS(TileDataDst& dst, TileDataSrc& src, typename TileDataSrc::DType scalar,
                            WaitEvents&... events) {
    (void)sizeof...(events);
    sim::require_float<typename TileDataDst::DType>();
    const float y = static_cast<float>(::simpler::tile::to_compute(scalar));
    sim::unary("TFMODS", dst, src, [y](float x) noexcept { return std::fmod(x, y); });
    return {};
}

// ---- bitwise (integer tiles) ---------------------------------------------------------------

namespace sim {
template <class T>
inline T shl(T x, T n, bool* bad) noexcept {
    return st::detail::shift_left<T>(x, n, bad);
}
template <class T>
inline T shr(T x, T n, bool* bad) noexcept {
    return st::detail::shift_right<T>(x, n, bad);
}
}  // namespace sim

#define PTO_SIM_BITWISE(NAME, EXPR)                                                                              \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>        \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) { \
        (void)sizeof...(events);                                                                                  \
        using T = typename TileDataDst::DType;                                                                    \
        sim::require_int<T>();                                                                                    \
        sim::binary(#NAME, dst, src0, src1, [](T x, T y) noexcept { return static_cast<T>(EXPR); });             \
        return {};                                                                                                \
    }
PTO_SIM_BITWISE(TAND, x & y)
PTO_SIM_BITWISE(TOR, x | y)
#undef PTO_SIM_BITWISE

// TXOR(dst, src0, src1, tmp): tmp is not used.
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename TileDataTmp,
          typename... WaitEvents>
PTO_INST RecordEvent TXOR(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, TileDataTmp& tmp,
                          WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    using T = typename TileDataDst::DType;
    sim::require_int<T>();
    sim::binary("TXOR", dst, src0, src1, [](T x, T y) noexcept { return static_cast<T>(x ^ y); });
    return {};
}

#define PTO_SIM_BITWISE_S(NAME, EXPR)                                                                          \
    template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>                              \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc& src, typename TileDataDst::DType scalar,          \
                              WaitEvents&... events) {                                                         \
        (void)sizeof...(events);                                                                               \
        using T = typename TileDataDst::DType;                                                                 \
        sim::require_int<T>();                                                                                 \
        const T y = scalar;                                                                                    \
        sim::unary(#NAME, dst, src, [y](T x) noexcept { return static_cast<T>(EXPR); });                       \
        return {};                                                                                             \
    }
PTO_SIM_BITWISE_S(TANDS, x & y)
PTO_SIM_BITWISE_S(TORS, x | y)
#undef PTO_SIM_BITWISE_S

// TXORS(dst, src, scalar, tmp): tmp is not used.
template <typename TileDataDst, typename TileDataSrc, typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TXORS(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType scalar, TileDataTmp& tmp,
                           WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    using T = typename TileDataDst::DType;
    sim::require_int<T>();
    const T y = scalar;
    sim::unary("TXORS", dst, src0, [y](T x) noexcept { return static_cast<T>(x ^ y); });
    return {};
}

template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TNOT(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using T = typename TileDataDst::DType;
    sim::require_int<T>();
    sim::unary("TNOT", dst, src, [](T x) noexcept { return static_cast<T>(~x); });
    return {};
}

// Shifts: a shift amount outside [0, bits) is reported and that element becomes 0; TSHR is
// arithmetic for signed types, logical for unsigned.
#define PTO_SIM_SHIFT(NAME, SNAME, FN)                                                                           \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>        \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) { \
        (void)sizeof...(events);                                                                                  \
        using T = typename TileDataDst::DType;                                                                    \
        sim::require_int<T>();                                                                                    \
        bool bad = false;                                                                                         \
        sim::binary(#NAME, dst, src0, src1, [&bad](T x, T n) noexcept { return FN<T>(x, n, &bad); });             \
        if (bad) ::simpler::report_kernel_error(#NAME ": shift amount outside [0, %d) (element set to 0)",       \
                                                static_cast<int>(sizeof(T) * 8));                                 \
        return {};                                                                                                \
    }                                                                                                             \
    template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>                                 \
    PTO_INST RecordEvent SNAME(TileDataDst& dst, TileDataSrc& src, typename TileDataDst::DType scalar,            \
                               WaitEvents&... events) {                                                           \
        (void)sizeof...(events);                                                                                  \
        using T = typename TileDataDst::DType;                                                                    \
        sim::require_int<T>();                                                                                    \
        bool bad = false;                                                                                         \
        const T n = scalar;                                                                                       \
        sim::unary(#SNAME, dst, src, [n, &bad](T x) noexcept { return FN<T>(x, n, &bad); });                      \
        if (bad) ::simpler::report_kernel_error(#SNAME ": shift amount outside [0, %d) (element set to 0)",      \
                                                static_cast<int>(sizeof(T) * 8));                                 \
        return {};                                                                                                \
    }
PTO_SIM_SHIFT(TSHL, TSHLS, sim::shl)
PTO_SIM_SHIFT(TSHR, TSHRS, sim::shr)
#undef PTO_SIM_SHIFT

#undef PTO_SIM_BINARY
#undef PTO_SIM_SCALAR

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
    st::detail::pack(name, m, vr, vc, pred);
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
    const auto mode = static_cast<::simpler::tile::CmpMode>(static_cast<int>(cmpMode));
    auto a = sim::view(src0, vr, vc);
    auto b = sim::view(src1, vr, vc);
    sim::cmp_into("TCMP", dst, src0, vr, vc,
                  [&](int r, int c) {
                      return ::simpler::tile::detail::compare(::simpler::tile::to_compute(a(r, c)),
                                                              ::simpler::tile::to_compute(b(r, c)), mode);
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
    const auto m = static_cast<::simpler::tile::CmpMode>(static_cast<int>(mode));
    const auto s = ::simpler::tile::to_compute(src1);
    auto a = sim::view(src0, vr, vc);
    sim::cmp_into("TCMPS", dst, src0, vr, vc,
                  [&](int r, int c) {
                      return ::simpler::tile::detail::compare(::simpler::tile::to_compute(a(r, c)), s, m);
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
    ::simpler::tile::sel(d, sim::view(selMask, vr, mcols), sim::view(src0, vr, vc), sim::view(src1, vr, vc));
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
    ::simpler::tile::sels(d, sim::view(mask, vr, mcols), sim::view(src, vr, vc), ::simpler::tile::to_compute(scalar));
    return {};
}

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
    if constexpr (K == Red::Sum) st::row_sum(d, s);
    else if constexpr (K == Red::Max) st::row_max(d, s);
    else if constexpr (K == Red::Min) st::row_min(d, s);
    else if constexpr (K == Red::Prod) st::row_prod(d, s);
    else if constexpr (K == Red::ArgMax) st::row_argmax(d, s);
    else st::row_argmin(d, s);
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
    if constexpr (K == Red::Sum) st::col_sum(d, s);
    else if constexpr (K == Red::Max) st::col_max(d, s);
    else if constexpr (K == Red::Min) st::col_min(d, s);
    else if constexpr (K == Red::Prod) st::col_prod(d, s);
    else if constexpr (K == Red::ArgMax) st::col_argmax(d, s);
    else st::col_argmin(d, s);
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
    ::simpler::tile::row_expand(d, sim::view(src, vr, 1));
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
    ::simpler::tile::col_expand(d, sim::view(src, 1, vc));
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
        st::detail::expand_op<Row>(name, d, view(src0, vr, vc), view(src1, er, ec), f);
    } else {
        st::detail::expand_op<Row>(name, d, view(src1, vr, vc), view(src0, er, ec),
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
PTO_SIM_EXPAND(TROWEXPANDADD, true, ::simpler::tile::detail::op_add<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDSUB, true, ::simpler::tile::detail::op_sub<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDMUL, true, ::simpler::tile::detail::op_mul<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDMAX, true, ::simpler::tile::detail::op_max<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDMIN, true, ::simpler::tile::detail::op_min<C>(x, y))
PTO_SIM_EXPAND(TROWEXPANDEXPDIF, true, static_cast<C>(std::exp(static_cast<float>(x - y))))
PTO_SIM_EXPAND(TCOLEXPANDADD, false, ::simpler::tile::detail::op_add<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDSUB, false, ::simpler::tile::detail::op_sub<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDMUL, false, ::simpler::tile::detail::op_mul<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDMAX, false, ::simpler::tile::detail::op_max<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDMIN, false, ::simpler::tile::detail::op_min<C>(x, y))
PTO_SIM_EXPAND(TCOLEXPANDEXPDIF, false, static_cast<C>(std::exp(static_cast<float>(x - y))))
#undef PTO_SIM_EXPAND

// TROWEXPANDDIV / TCOLEXPANDDIV: integer division by zero gives 0 and is reported.
#define PTO_SIM_EXPAND_DIV(NAME, ROW)                                                                             \
    template <auto PrecisionType = DivAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc0,            \
              typename TileDataSrc1, typename... WaitEvents>                                                      \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) {  \
        (void)sizeof...(events);                                                                                   \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                     \
        bool zero = false;                                                                                         \
        sim::expand_binary<ROW>(#NAME, dst, src0, src1,                                                            \
                                [&zero](C x, C y) noexcept { return ::simpler::tile::detail::op_div<C>(x, y, &zero); }); \
        if (zero) ::simpler::report_kernel_error(#NAME ": integer division by zero (result set to 0)");           \
        return {};                                                                                                 \
    }
PTO_SIM_EXPAND_DIV(TROWEXPANDDIV, true)
PTO_SIM_EXPAND_DIV(TCOLEXPANDDIV, false)
#undef PTO_SIM_EXPAND_DIV

// ---- debug -------------------------------------------------------------------------------------

// TPRINT(src): print src's valid region to stdout, tagged with the task and core (the NPU has
// no such channel).
template <PrintFormat Format = PrintFormat::Width8_Precision4, typename TileData>
PTO_INST void TPRINT(TileData& src) {
    sim::Op op("TPRINT", PIPE_S);
    if (!sim::placed(op, src)) return;
    const int vr = sim::vrow(src), vc = sim::vcol(src);
    sim::rd(op, src, vr, vc);
    namespace st = ::simpler::tile;
    std::string out = st::detail::kernel_tag();
    char head[128];
    std::snprintf(head, sizeof head, " TPRINT: %s %s [%d, %d], valid [%d, %d]\n", sim::tile_type_name(TileData::Loc),
                  sim::dtype_name<typename TileData::DType>(), TileData::Rows, TileData::Cols, vr, vc);
    out += head;
    for (int r = 0; r < vr; ++r) {
        out += r == 0 ? "[[" : " [";
        for (int c = 0; c < vc; ++c) st::detail::append_value(out, src.data()[r * TileData::Cols + c]);
        out += r + 1 == vr ? "]]\n" : "]\n";
    }
    st::detail::emit(out);
}

}  // namespace pto
