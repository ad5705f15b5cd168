// Data movement inside the core: move between spaces, reshape, transpose, concat, cast.
//
// move(dst, src): copy src's valid region to dst (any space to any space, same element type),
//   e.g. Mat -> Left/Right before a matmul, Acc -> Vec after it. dst's valid shape becomes src's.
// reshape(dst, src): same element type and same static element count; the row-major storage is
//   reinterpreted, so src must be fully valid; dst becomes fully valid.
// transpose(dst, src): dst[c, r] = src[r, c]; dst's valid shape is src's swapped.
// concat(dst, a, b): along columns: dst[:, 0:a.vc] = a, dst[:, a.vc:a.vc+b.vc] = b; a and b must
//   have the same valid rows. dst's valid shape becomes [rows, a.vc + b.vc].
// cast(dst, src, mode): element conversion with convert<>() (dtype.hpp): every narrowing float
//   conversion (float -> int, FP32 -> FP16/BF16, FP16 <-> BF16) rounds by `mode` (RoundMode,
//   default nearest even); float -> int and int -> int saturate.
//   dst is Vec; src is Vec or Acc. dst's valid shape becomes src's.
// slice(dst, src, row, col[, rows, cols]): dst[r, c] = src[row + r, col + c] for the window
//   [rows, cols] (default: dst's static shape), which must lie inside src's valid region; dst's
//   valid shape becomes [rows, cols].
// assemble(dst, src, row, col): dst[row + r, col + c] = src[r, c] over src's valid region, which
//   must fit dst's static shape at (row, col); dst's valid shape is unchanged. src may be in
//   another space (e.g. an Acc result into a Mat tile) and of another element type, converted
//   as cast converts (convert<>() with the default rounding).
// fillpad(t, pad): every element outside t's valid region becomes the pad value (Pad::Zero,
//   Pad::Min = lowest / -inf, Pad::Max = highest / +inf, or an explicit value); t becomes fully
//   valid.
// reshape/transpose/concat/slice need dst and sources in the same space.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/dtype.hpp"
#include "pto/sim/math/common.hpp"

namespace pto {
namespace sim {
namespace math {

template <class Dst, class Src>
inline bool move(Dst& dst, const Src& src) noexcept {
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename Src::value_type>::value, "move keeps the element type (use cast)");
    const int vr = src.valid_rows, vc = src.valid_cols;
    if (!detail::operands_ok("move", src) || !detail::fits("move", dst, vr, vc)) return false;
    if (static_cast<const void*>(&dst) == static_cast<const void*>(&src)) return true;
    for (int r = 0; r < vr; ++r) {
        T* d = dst.row(r);
        const T* s = src.row(r);
        detail::for_cols(vc, [&](int c) { d[c] = s[c]; });
    }
    dst.valid_rows = vr;
    dst.valid_cols = vc;
    return true;
}

template <class Dst, class Src>
inline bool reshape(Dst& dst, const Src& src) noexcept {
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename Src::value_type>::value, "reshape keeps the element type");
    static_assert(Dst::numel == Src::numel, "reshape keeps the static element count");
    static_assert(Dst::space == Src::space, "reshape stays in one memory space (use move)");
    if (src.valid_rows != Src::rows || src.valid_cols != Src::cols) {
        report_kernel_error("tile reshape: source must be fully valid, valid shape [%d, %d] of [%d, %d]",
                            src.valid_rows, src.valid_cols, Src::rows, Src::cols);
        return false;
    }
    if (static_cast<const void*>(&dst) != static_cast<const void*>(&src)) {
PTO_SIM_MATH_IVDEP
        for (int i = 0; i < Dst::numel; ++i) dst.data[i] = src.data[i];
    }
    dst.valid_rows = Dst::rows;
    dst.valid_cols = Dst::cols;
    return true;
}

template <class Dst, class Src>
inline bool transpose(Dst& dst, const Src& src) noexcept {
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename Src::value_type>::value, "transpose keeps the element type");
    static_assert(Dst::space == Src::space, "transpose stays in one memory space (use move)");
    const int vr = src.valid_rows, vc = src.valid_cols;
    if (!detail::operands_ok("transpose", src) || !detail::fits("transpose", dst, vc, vr)) return false;
    if (static_cast<const void*>(&dst) == static_cast<const void*>(&src)) {
        report_kernel_error("tile transpose: destination and source must be different tiles");
        return false;
    }
    // Blocked so that both sides stay in cache lines for large tiles.
    constexpr int B = 16;
    for (int r0 = 0; r0 < vr; r0 += B)
        for (int c0 = 0; c0 < vc; c0 += B) {
            const int r1 = r0 + B < vr ? r0 + B : vr;
            const int c1 = c0 + B < vc ? c0 + B : vc;
            for (int c = c0; c < c1; ++c) {
                T* d = dst.row(c);
                for (int r = r0; r < r1; ++r) d[r] = src(r, c);
            }
        }
    dst.valid_rows = vc;
    dst.valid_cols = vr;
    return true;
}

template <class Dst, class A, class B>
inline bool concat(Dst& dst, const A& a, const B& b) noexcept {
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename A::value_type>::value && std::is_same<T, typename B::value_type>::value,
                  "concat keeps the element type");
    static_assert(Dst::space == A::space && Dst::space == B::space, "concat stays in one memory space (use move)");
    if (!detail::operands_ok("concat", a, b)) return false;
    if (a.valid_rows != b.valid_rows) {
        report_kernel_error("tile concat: operands have different valid rows: %d vs %d", a.valid_rows, b.valid_rows);
        return false;
    }
    const int vr = a.valid_rows, va = a.valid_cols, vb = b.valid_cols;
    if (!detail::fits("concat", dst, vr, va + vb)) return false;
    if (static_cast<const void*>(&dst) == static_cast<const void*>(&b)) {
        report_kernel_error("tile concat: destination must not be the second operand");
        return false;
    }
    for (int r = 0; r < vr; ++r) {
        T* d = dst.row(r);
        const T* x = a.row(r);
        const T* y = b.row(r);
        if (static_cast<const void*>(&dst) != static_cast<const void*>(&a)) {
            detail::for_cols(va, [&](int c) { d[c] = x[c]; });
        }
        detail::for_cols(vb, [&](int c) { d[va + c] = y[c]; });
    }
    dst.valid_rows = vr;
    dst.valid_cols = va + vb;
    return true;
}

template <class Dst, class Src>
inline bool slice(Dst& dst, const Src& src, std::int64_t row, std::int64_t col, int rows = Dst::rows,
                  int cols = Dst::cols) noexcept {
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename Src::value_type>::value, "slice keeps the element type");
    static_assert(Dst::space == Src::space, "slice stays in one memory space (use move)");
    if (!detail::operands_ok("slice", src) || !detail::fits("slice", dst, rows, cols)) return false;
    if (row < 0 || col < 0 || row > src.valid_rows - rows || col > src.valid_cols - cols) {
        report_kernel_error("tile slice: window [%d, %d] at (%lld, %lld) outside the source's valid shape [%d, %d]", rows,
                            cols, static_cast<long long>(row), static_cast<long long>(col), src.valid_rows,
                            src.valid_cols);
        return false;
    }
    if (static_cast<const void*>(&dst) == static_cast<const void*>(&src)) {
        report_kernel_error("tile slice: destination and source must be different tiles");
        return false;
    }
    for (int r = 0; r < rows; ++r) {
        T* d = dst.row(r);
        const T* s = src.row(static_cast<int>(row) + r) + col;
        detail::for_cols(cols, [&](int c) { d[c] = s[c]; });
    }
    dst.valid_rows = rows;
    dst.valid_cols = cols;
    return true;
}

template <class Dst, class Src>
inline bool assemble(Dst& dst, const Src& src, std::int64_t row, std::int64_t col) noexcept {
    using T = typename Dst::value_type;
    using S = typename Src::value_type;
    if (!detail::operands_ok("assemble", src)) return false;
    const int vr = src.valid_rows, vc = src.valid_cols;
    if (row < 0 || col < 0 || row > Dst::rows - vr || col > Dst::cols - vc) {
        report_kernel_error("tile assemble: source [%d, %d] at (%lld, %lld) does not fit the destination [%d, %d]", vr,
                            vc, static_cast<long long>(row), static_cast<long long>(col), Dst::rows, Dst::cols);
        return false;
    }
    if (static_cast<const void*>(&dst) == static_cast<const void*>(&src)) {
        report_kernel_error("tile assemble: destination and source must be different tiles");
        return false;
    }
    for (int r = 0; r < vr; ++r) {
        T* d = dst.row(static_cast<int>(row) + r) + col;
        const S* s = src.row(r);
        if constexpr (std::is_same<T, S>::value)
            detail::for_cols(vc, [&](int c) { d[c] = s[c]; });
        else
            detail::for_cols(vc, [&](int c) { d[c] = convert<T>(s[c]); });
    }
    return true;
}

enum class Pad : std::uint8_t { Zero, Min, Max };

template <class Tl>
inline bool fillpad(Tl& t, typename Tl::value_type value) noexcept {
    using T = typename Tl::value_type;
    if (!detail::operands_ok("fillpad", t)) return false;
    const int vr = t.valid_rows, vc = t.valid_cols;
    for (int r = 0; r < Tl::rows; ++r) {
        T* d = t.row(r);
        for (int c = r < vr ? vc : 0; c < Tl::cols; ++c) d[c] = value;
    }
    t.valid_rows = Tl::rows;
    t.valid_cols = Tl::cols;
    return true;
}

template <class Tl>
inline bool fillpad(Tl& t, Pad pad) noexcept {
    using T = typename Tl::value_type;
    using C = compute_t<T>;
    using L = std::numeric_limits<C>;
    C v = C(0);
    if (pad == Pad::Min) v = L::has_infinity ? -L::infinity() : L::lowest();
    if (pad == Pad::Max) v = L::has_infinity ? L::infinity() : L::max();
    return fillpad(t, from_compute<T>(v));
}

template <class Dst, class Src>
inline bool cast(Dst& dst, const Src& src, RoundMode mode = RoundMode::Rint) noexcept {
    static_assert(Dst::space == Space::Vec, "cast writes a Vec tile");
    static_assert(Src::space == Space::Vec || Src::space == Space::Acc, "cast reads a Vec or Acc tile");
    using D = typename Dst::value_type;
    using S = typename Src::value_type;
    const int vr = src.valid_rows, vc = src.valid_cols;
    if (!detail::operands_ok("cast", src) || !detail::fits("cast", dst, vr, vc)) return false;
    if (static_cast<const void*>(&dst) == static_cast<const void*>(&src) && !std::is_same<D, S>::value) {
        report_kernel_error("tile cast: destination and source must be different tiles");
        return false;
    }
    for (int r = 0; r < vr; ++r) {
        D* d = dst.row(r);
        const S* s = src.row(r);
        detail::for_cols(vc, [&](int c) { d[c] = convert<D>(s[c], mode); });
    }
    dst.valid_rows = vr;
    dst.valid_cols = vc;
    return true;
}

}  // namespace math
}  // namespace sim
}  // namespace pto
