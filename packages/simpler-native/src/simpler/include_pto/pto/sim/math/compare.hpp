// Comparison into packed predicate masks and selection by mask, on Vec tiles.
//
// cmp(mask, a, b, mode) / cmps(mask, a, s, mode): bit c of row r of the mask is 1 where
// a[r, c] (mode) b[r, c] (or s) holds, for r, c in a's valid shape (a and b need equal valid
// shapes). mode is a CmpMode (EQ, NE, LT, LE, GT, GE; upstream PyPTO's cmp_type 0..5); NaN
// compares unequal to everything (NE true, every other mode false). The mask is a uint8 tile:
// element (r, c / 8) holds bits c % 8 (least significant first), so a row of C values takes
// ceil(C / 8) bytes; its valid shape becomes [rows, ceil(cols / 8)] and the unused high bits of
// a row's last byte are 0. An unknown mode is reported and the mask left untouched.
//
// sel(dst, mask, a, b): dst[r, c] = a[r, c] where mask bit (r, c) is 1, else b[r, c], over a's
// valid shape (b's must equal it, the mask's must cover it). sels(dst, mask, a, s): the same
// with the scalar s for b. Masks are read as cmp writes them; a mask tile of 16 or 32-bit
// integers is read as its bytes in memory order (little-endian), as the device reads a mask
// carrier of those types.
#pragma once

#include <cstdint>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/dtype.hpp"
#include "pto/sim/math/elementwise.hpp"
#include "pto/sim/math/common.hpp"

namespace pto {
namespace sim {
namespace math {

enum class CmpMode : int { EQ = 0, NE = 1, LT = 2, LE = 3, GT = 4, GE = 5 };

namespace detail {

template <class C>
inline bool compare(C x, C y, CmpMode m) noexcept {
    switch (m) {
        case CmpMode::EQ: return x == y;
        case CmpMode::NE: return x != y;
        case CmpMode::LT: return x < y;
        case CmpMode::LE: return x <= y;
        case CmpMode::GT: return x > y;
        case CmpMode::GE: return x >= y;
    }
    return false;
}

inline bool mode_ok(const char* op, CmpMode m) noexcept {
    const int v = static_cast<int>(m);
    if (v < 0 || v > 5) {
        report_kernel_error("tile %s: comparison mode %d is not one of EQ=0, NE=1, LT=2, LE=3, GT=4, GE=5", op, v);
        return false;
    }
    return true;
}

template <class Mask>
inline void require_mask() noexcept {
    static_assert(is_vec_v<Mask>, "a predicate mask is a Vec tile");
    static_assert(std::is_same<typename Mask::value_type, std::uint8_t>::value, "cmp writes a uint8 mask tile");
}

// A mask read by sel/sels: uint8 as cmp writes it, or an 8/16/32-bit integer carrier whose bytes
// (little-endian) are the mask bytes.
template <class Mask>
inline void require_mask_carrier() noexcept {
    using M = typename Mask::value_type;
    static_assert(is_vec_v<Mask>, "a predicate mask is a Vec tile");
    static_assert(is_int_v<M> && sizeof(M) <= 4, "a predicate mask is an 8, 16 or 32-bit integer tile");
}

template <class Mask>
inline const std::uint8_t* mask_bytes(const Mask& mask, int r) noexcept {
    return reinterpret_cast<const std::uint8_t*>(mask.row(r));
}

// mask bit (r, c) = pred(r, c) over [vr, vc]
template <class Mask, class P>
inline bool pack(const char* op, Mask& mask, int vr, int vc, P pred) noexcept {
    const int bytes = (vc + 7) / 8;
    if (!fits(op, mask, vr, bytes)) return false;
    for (int r = 0; r < vr; ++r) {
        std::uint8_t* m = mask.row(r);
        for (int k = 0; k < bytes; ++k) m[k] = 0;
        for (int c = 0; c < vc; ++c)
            if (pred(r, c)) m[c / 8] = static_cast<std::uint8_t>(m[c / 8] | (1u << (c % 8)));
    }
    mask.valid_rows = vr;
    mask.valid_cols = bytes;
    return true;
}

template <class Mask>
inline bool covers(const char* op, const Mask& mask, int vr, int vc) noexcept {
    const int bytes = mask.valid_cols * static_cast<int>(sizeof(typename Mask::value_type));
    if (mask.valid_rows < vr || bytes < (vc + 7) / 8) {
        report_kernel_error("tile %s: mask valid shape [%d, %d] does not cover [%d, %d] values (%d bytes a row)", op,
                            mask.valid_rows, mask.valid_cols, vr, vc, (vc + 7) / 8);
        return false;
    }
    return true;
}

inline bool bit(const std::uint8_t* row, int c) noexcept { return (row[c / 8] >> (c % 8)) & 1u; }

}  // namespace detail

template <class Mask, class A, class B, std::enable_if_t<is_tile<B>::value, int> = 0>
inline bool cmp(Mask& mask, const A& a, const B& b, CmpMode mode) noexcept {
    detail::require_mask<Mask>();
    static_assert(detail::is_vec_v<A> && detail::is_vec_v<B>, "cmp takes Vec tiles");
    static_assert(std::is_same<typename A::value_type, typename B::value_type>::value, "cmp needs one element type");
    if (!detail::mode_ok("cmp", mode) || !detail::operands_ok("cmp", a, b) || !detail::same_valid("cmp", a, b))
        return false;
    return detail::pack("cmp", mask, a.valid_rows, a.valid_cols,
                        [&](int r, int c) { return detail::compare(to_compute(a(r, c)), to_compute(b(r, c)), mode); });
}

template <class Mask, class A>
inline bool cmps(Mask& mask, const A& a, compute_t<typename A::value_type> s, CmpMode mode) noexcept {
    detail::require_mask<Mask>();
    static_assert(detail::is_vec_v<A>, "cmps takes a Vec tile");
    if (!detail::mode_ok("cmps", mode) || !detail::operands_ok("cmps", a)) return false;
    return detail::pack("cmps", mask, a.valid_rows, a.valid_cols,
                        [&](int r, int c) { return detail::compare(to_compute(a(r, c)), s, mode); });
}

template <class Dst, class Mask, class A, class B, std::enable_if_t<is_tile<B>::value, int> = 0>
inline bool sel(Dst& dst, const Mask& mask, const A& a, const B& b) noexcept {
    detail::require_mask_carrier<Mask>();
    static_assert(detail::is_vec_v<Dst> && detail::is_vec_v<A> && detail::is_vec_v<B>, "sel takes Vec tiles");
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename A::value_type>::value && std::is_same<T, typename B::value_type>::value,
                  "sel needs one element type");
    if (!detail::operands_ok("sel", mask, a, b) || !detail::same_valid("sel", a, b)) return false;
    const int vr = a.valid_rows, vc = a.valid_cols;
    if (!detail::covers("sel", mask, vr, vc) || !detail::fits("sel", dst, vr, vc)) return false;
    for (int r = 0; r < vr; ++r) {
        const std::uint8_t* m = detail::mask_bytes(mask, r);
        const T* x = a.row(r);
        const T* y = b.row(r);
        T* d = dst.row(r);
        for (int c = 0; c < vc; ++c) d[c] = detail::bit(m, c) ? x[c] : y[c];
    }
    dst.valid_rows = vr;
    dst.valid_cols = vc;
    return true;
}

template <class Dst, class Mask, class A>
inline bool sels(Dst& dst, const Mask& mask, const A& a, compute_t<typename Dst::value_type> s) noexcept {
    detail::require_mask_carrier<Mask>();
    static_assert(detail::is_vec_v<Dst> && detail::is_vec_v<A>, "sels takes Vec tiles");
    using T = typename Dst::value_type;
    static_assert(std::is_same<T, typename A::value_type>::value, "sels needs one element type");
    if (!detail::operands_ok("sels", mask, a)) return false;
    const int vr = a.valid_rows, vc = a.valid_cols;
    if (!detail::covers("sels", mask, vr, vc) || !detail::fits("sels", dst, vr, vc)) return false;
    const T v = from_compute<T>(s);
    for (int r = 0; r < vr; ++r) {
        const std::uint8_t* m = detail::mask_bytes(mask, r);
        const T* x = a.row(r);
        T* d = dst.row(r);
        for (int c = 0; c < vc; ++c) d[c] = detail::bit(m, c) ? x[c] : v;
    }
    dst.valid_rows = vr;
    dst.valid_cols = vc;
    return true;
}

}  // namespace math
}  // namespace sim
}  // namespace pto
