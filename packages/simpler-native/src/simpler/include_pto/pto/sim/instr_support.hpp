// Shared helpers of the PTO-ISA instruction headers (pto/sim/instr_*.hpp): row-major views of
// placed tiles, operand checks, read/write recording, global-tensor walks and the precision
// selectors of the official signatures.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "pto/sim/core.hpp"
#include "pto/sim/tile.hpp"
#include "pto/sim/types.hpp"
#include "pto/sim/math/bitwise.hpp"
#include "pto/sim/math/common.hpp"
#include "pto/sim/math/compare.hpp"
#include "pto/sim/math/debug.hpp"
#include "pto/sim/math/elementwise.hpp"
#include "pto/sim/math/layout.hpp"
#include "pto/sim/math/matmul.hpp"
#include "pto/sim/math/reduce.hpp"
#include "simpler/dtype.hpp"

namespace pto {
namespace sim {

// A row-major view of a placed tile with a chosen valid shape: the operand type of the element
// math (pto/sim/math/*.hpp).
template <math::Space S, class T, int R, int C>
struct View {
    using value_type = T;
    static constexpr math::Space space = S;
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

// The element math accepts the views as tiles.
namespace pto {
namespace sim {
namespace math {
template <Space S, class T, int R, int C>
struct is_tile<::pto::sim::View<S, T, R, C>> : std::true_type {};
}  // namespace math
}  // namespace sim
}  // namespace pto

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
enum class RemAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };
enum class RemSAlgorithm : std::uint8_t { DEFAULT, HIGH_PRECISION };

namespace sim {


template <TileType L>
constexpr math::Space space_of() noexcept {
    return L == TileType::Vec    ? math::Space::Vec
           : L == TileType::Mat  ? math::Space::Mat
           : L == TileType::Left ? math::Space::Left
           : L == TileType::Right ? math::Space::Right
                                 : math::Space::Acc;
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
    hold(op.state(), t.sim_id());
    std::uint32_t lo, hi;
    range(t, r0, c0, nr, nc, &lo, &hi);
    op.read(TileT::buf(), lo, hi, t.sim_id());
}
template <class TileT>
inline void wr(Op& op, const TileT& t, int nr, int nc, int r0 = 0, int c0 = 0) noexcept {
    hold(op.state(), t.sim_id(), r0 == 0 && c0 == 0 && nr == TileT::Rows && nc == TileT::Cols);
    std::uint32_t lo, hi;
    range(t, r0, c0, nr, nc, &lo, &hi);
    op.write(TileT::buf(), lo, hi, t.sim_id());
}

template <class T>
using compute_t = math::compute_t<T>;

// The pipe of a move between tile types (TMOV, TEXTRACT, TINSERT).
template <TileType Dst, TileType Src>
constexpr pipe_t move_pipe() noexcept {
    if (Src == TileType::Acc) return PIPE_FIX;
    if (Src == TileType::Mat && (Dst == TileType::Left || Dst == TileType::Right || Dst == TileType::Bias))
        return PIPE_MTE1;
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
            for (int c = 0; c < nc; ++c) d[c] = math::convert<DT>(s[c]);
        }
    }
}

// dst = src's bytes as the ISA lays both out (TRESHAPE's copy): dst element (r, c) is the src
// element the ISA stores at dst's (r, c).
template <class D, class S>
inline void relayout(D& dst, S& src) noexcept {
    if constexpr (plain_layout<D>() && plain_layout<S>()) {  // both stored as we store them
        std::memmove(dst.data(), src.data(), S::GetSizeInBytes());
    } else {
        std::unique_ptr<std::uint8_t[]> isa(new std::uint8_t[S::GetSizeInBytes()]);
        to_isa<S>(reinterpret_cast<const std::uint8_t*>(src.data()), isa.get());
        from_isa<D>(isa.get(), reinterpret_cast<std::uint8_t*>(dst.data()));
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
        return math::convert<T>(f);
    }
    switch (p) {
        case PadValue::Max: return math::from_compute<T>(L::has_infinity ? L::infinity() : L::max());
        case PadValue::Min: return math::from_compute<T>(L::has_infinity ? -L::infinity() : L::lowest());
        default: return math::from_compute<T>(C(0));
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

// Whether an ND/DN window's rows (dims 0..3) follow each other `cols` elements apart with
// contiguous columns: the window is then rows * cols consecutive elements from g.data(), one
// copy in row order (no two rows share an element, so the order of the per-row copies it
// replaces does not matter).
template <class G>
inline bool dense_rows(G& g, std::int64_t cols) noexcept {
    if (g.GetShape(4) > 1 && g.GetStride(4) != 1) return false;
    std::int64_t next = cols;
    for (int i = 3; i >= 0; --i) {
        if (g.GetShape(i) > 1 && g.GetStride(i) != next) return false;
        next *= g.GetShape(i);
    }
    return true;
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

}  // namespace pto
