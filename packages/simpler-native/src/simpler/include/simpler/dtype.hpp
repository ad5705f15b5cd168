// Element types of kernels and orchestrations: the 16-bit float storage types simpler::half and
// simpler::bfloat16, the wire dtype code of every element type, and simpler::convert<To>(from),
// the one conversion routine that TCVT, TLOAD/TSTORE and the arithmetic of our PTO-ISA backend
// (pto/sim/) share.
//
// Consumers: our PTO-ISA headers (include_pto/pto/sim/types.hpp and the math under pto/sim/math/)
// and generated orchestrations (scalar dtype conversions).
// Everything here is plain C++17: no compiler extensions, no _Float16, so the rounding is the
// same on every host compiler (round to nearest, ties to even, as IEEE 754 and the NPU do).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "simpler/wire/data_type.hpp"

namespace simpler {

namespace float16_bits {

inline std::uint32_t float_bits(float f) noexcept {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

inline float bits_float(std::uint32_t u) noexcept {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// Branch-free select: mask arithmetic stays branch-free where a ?: would be turned back into
// control flow around floating-point operations, which blocks vectorization.
inline std::uint32_t select_u32(bool c, std::uint32_t a, std::uint32_t b) noexcept {
    const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
    return (a & m) | (b & ~m);
}

// IEEE binary32 -> binary16, round to nearest even. NaN stays a quiet NaN (top payload bits
// kept), overflow rounds to infinity, results below half the smallest subnormal round to zero.
// Written without branches (every case computed, then selected) so loops of conversions
// vectorize. The subnormal case adds 0.5f: the float addition rounds at 2^-24, the half
// subnormal step, so it relies on the default rounding mode (kernels never change it).
inline std::uint16_t float_to_half_bits(float f) noexcept {
    const std::uint32_t x = float_bits(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t ax = x & 0x7fffffffu;
    // Normal half: rebias the exponent (127 -> 15) and round the 13 dropped bits to even.
    const std::uint32_t normal = (ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13;  // 0xc8000000 = -(112 << 23)
    // Subnormal half (|f| < 2^-14): the magic addition leaves the rounded value in the low bits.
    const std::uint32_t sub = float_bits(bits_float(ax) + 0.5f) - 0x3f000000u;
    const std::uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
    std::uint32_t h = select_u32(ax < 0x38800000u, sub, normal);
    h = select_u32(ax >= 0x47800000u, 0x7c00u, h);  // >= 65536 (and inf); 65520.. carry to inf above
    h = select_u32(ax > 0x7f800000u, nan, h);
    return static_cast<std::uint16_t>(sign | h);
}

// Branch-free as well: normals and inf/NaN by rebiasing, subnormals through an exact
// int -> float conversion (m * 2^-24).
inline float half_bits_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t em = h & 0x7fffu;
    const std::uint32_t normal = (em << 13) + 0x38000000u;  // exponent + 112
    const std::uint32_t special = normal + 0x38000000u;     // inf/NaN: exponent 31 -> 255
    const std::uint32_t sub = float_bits(static_cast<float>(static_cast<std::int32_t>(em)) * 5.9604644775390625e-08f);
    std::uint32_t u = select_u32(em < 0x400u, sub, normal);
    u = select_u32(em >= 0x7c00u, special, u);
    return bits_float(sign | u);
}

// IEEE binary32 -> bfloat16 (the top half of a binary32), round to nearest even; NaN stays a
// quiet NaN.
inline std::uint16_t float_to_bf16_bits(float f) noexcept {
    const std::uint32_t x = float_bits(f);
    const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    return static_cast<std::uint16_t>(select_u32((x & 0x7fffffffu) > 0x7f800000u, (x >> 16) | 0x40u, rounded));
}

inline float bf16_bits_to_float(std::uint16_t b) noexcept {
    return bits_float(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace float16_bits

// A 16-bit float storage type: the bits, converted from float by Encode (rounding to nearest
// even) and to float by Decode (exact). Arithmetic on it goes through float.
template <std::uint16_t (*Encode)(float) noexcept, float (*Decode)(std::uint16_t) noexcept>
struct float16_storage {
    std::uint16_t bits;

    float16_storage() = default;
    explicit float16_storage(float f) noexcept : bits(Encode(f)) {}
    operator float() const noexcept { return Decode(bits); }
    static float16_storage from_bits(std::uint16_t b) noexcept {
        float16_storage h;
        h.bits = b;
        return h;
    }
};

// IEEE binary16.
using half = float16_storage<float16_bits::float_to_half_bits, float16_bits::half_bits_to_float>;
// bfloat16: the upper 16 bits of an IEEE binary32.
using bfloat16 = float16_storage<float16_bits::float_to_bf16_bits, float16_bits::bf16_bits_to_float>;

static_assert(sizeof(half) == 2 && std::is_trivially_copyable<half>::value, "half must be 2 bytes of plain data");
static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable<bfloat16>::value,
              "bfloat16 must be 2 bytes of plain data");

// The wire dtype code (WIRE.md, simpler/wire/data_type.hpp) of each element type a kernel handles.
using DType = ::simpler::DataType;

template <class T>
struct dtype_of;  // undefined for types a kernel cannot handle
#define SIMPLER_DTYPE_CODE(T, CODE) \
    template <>                     \
    struct dtype_of<T> {            \
        static constexpr DType value = DType::CODE; \
    }
SIMPLER_DTYPE_CODE(float, FLOAT32);
SIMPLER_DTYPE_CODE(::simpler::half, FLOAT16);
SIMPLER_DTYPE_CODE(::simpler::bfloat16, BFLOAT16);
SIMPLER_DTYPE_CODE(std::int8_t, INT8);
SIMPLER_DTYPE_CODE(std::int16_t, INT16);
SIMPLER_DTYPE_CODE(std::int32_t, INT32);
SIMPLER_DTYPE_CODE(std::int64_t, INT64);
SIMPLER_DTYPE_CODE(std::uint8_t, UINT8);
SIMPLER_DTYPE_CODE(std::uint16_t, UINT16);
SIMPLER_DTYPE_CODE(std::uint32_t, UINT32);
SIMPLER_DTYPE_CODE(std::uint64_t, UINT64);
SIMPLER_DTYPE_CODE(bool, BOOL);
#undef SIMPLER_DTYPE_CODE

template <class T>
inline constexpr DType dtype_v = dtype_of<T>::value;

template <class T>
inline constexpr bool is_half_like_v = std::is_same<T, half>::value || std::is_same<T, bfloat16>::value;

template <class T>
inline constexpr bool is_float_like_v = std::is_floating_point<T>::value || is_half_like_v<T>;

template <class T>
inline constexpr bool is_int_v = std::is_integral<T>::value && !std::is_same<T, bool>::value;

// The type arithmetic on T is carried out in: float for the 16-bit floats, T otherwise.
template <class T>
using compute_t = std::conditional_t<is_half_like_v<T>, float, T>;

template <class T>
inline compute_t<T> to_compute(T v) noexcept {
    return static_cast<compute_t<T>>(v);
}

template <class T>
inline T from_compute(compute_t<T> v) noexcept {
    return static_cast<T>(v);
}

// Rounding of a narrowing float conversion (float -> integer, FP32 -> FP16/BF16, FP16 <-> BF16).
// The values are the cast-mode codes of pl.cast (0-6):
//   None  = the default conversion: nearest, ties to even (as Rint);
//   Rint  = nearest, ties to even;      Round = nearest, ties away from zero;
//   Floor = toward -inf;  Ceil = toward +inf;  Trunc = toward zero;
//   Odd   = round to odd: an inexact result takes the neighbour whose last bit is 1.
enum class RoundMode : std::uint8_t { None = 0, Rint = 1, Round = 2, Floor = 3, Ceil = 4, Trunc = 5, Odd = 6 };

namespace dtype_detail {

// Whether a value between the neighbours `lo` (toward zero) and `lo + 1` (away from zero) rounds
// away from zero. `frac` in [0, 1) is the distance from `lo` in units of the last place, `neg` the
// sign, `lo_odd` whether `lo`'s last bit is 1. An exact value (frac == 0) never moves.
inline bool round_away(double frac, bool neg, bool lo_odd, RoundMode mode) noexcept {
    if (frac == 0.0) return false;
    switch (mode) {
        case RoundMode::Trunc: return false;
        case RoundMode::Floor: return neg;
        case RoundMode::Ceil: return !neg;
        case RoundMode::Round: return frac >= 0.5;
        case RoundMode::Odd: return !lo_odd;
        case RoundMode::None:
        case RoundMode::Rint: break;
    }
    return frac > 0.5 || (frac == 0.5 && lo_odd);
}

template <class F>
inline F round_float(F x, RoundMode mode) noexcept {
    const F t = std::trunc(x);
    const F diff = x - t;  // exact
    const F a = diff < 0 ? -diff : diff;
    const bool odd = std::fmod(t, F(2)) != 0;
    return round_away(static_cast<double>(a), x < 0, odd, mode) ? t + (x < 0 ? F(-1) : F(1)) : t;
}

// float -> binary16 bits rounded by `mode`. Finite values beyond the largest half (65504) become
// infinity when the mode rounds away from zero there and 65504 when it rounds toward zero (IEEE
// directed rounding); NaN stays a quiet NaN.
inline std::uint16_t float_to_half_bits(float f, RoundMode mode) noexcept {
    if (mode == RoundMode::Rint || mode == RoundMode::None) return float16_bits::float_to_half_bits(f);
    if (f != f) return float16_bits::float_to_half_bits(f);
    const bool neg = std::signbit(f);
    const double ax = std::fabs(static_cast<double>(f));
    const std::uint16_t sign = neg ? 0x8000u : 0u;
    if (std::isinf(ax)) return static_cast<std::uint16_t>(sign | 0x7c00u);
    // The spacing of halves around ax: 2^-24 below 2^-14 (subnormals), else 2^(e - 10), at most 32.
    int e = ax == 0.0 ? -15 : std::ilogb(ax);
    if (e < -14) e = -14;
    if (e > 15) e = 15;
    const double ulp = std::ldexp(1.0, e - 10);
    const double q = ax / ulp;  // exact: a power-of-two scaling
    const double lo = std::floor(q);
    const bool odd = std::fmod(lo, 2.0) != 0;
    const double m = (round_away(q - lo, neg, odd, mode) ? lo + 1.0 : lo) * ulp;
    if (m > 65504.0) {  // beyond the largest half: infinity unless this mode rounds toward zero
        const bool away = mode == RoundMode::Round || (mode == RoundMode::Floor && neg) || (mode == RoundMode::Ceil && !neg);
        return static_cast<std::uint16_t>(sign | (away ? 0x7c00u : 0x7bffu));
    }
    return static_cast<std::uint16_t>(sign | float16_bits::float_to_half_bits(static_cast<float>(m)));  // exact
}

// float -> bfloat16 bits rounded by `mode` (the 16 dropped bits decide); NaN stays a quiet NaN.
inline std::uint16_t float_to_bf16_bits(float f, RoundMode mode) noexcept {
    if (mode == RoundMode::Rint || mode == RoundMode::None || f != f) return float16_bits::float_to_bf16_bits(f);
    const std::uint32_t x = float16_bits::float_bits(f);
    const std::uint32_t lo = x >> 16;  // toward zero; lo + 1 is the neighbour away from zero
    const double frac = static_cast<double>(x & 0xffffu) / 65536.0;
    const bool up = round_away(frac, (x >> 31) != 0, (lo & 1u) != 0, mode);
    return static_cast<std::uint16_t>(lo + (up ? 1u : 0u));  // carries into the exponent, max -> inf
}

// Float -> integer: rounded by `mode`, saturated to the integer's range, NaN -> 0.
template <class I, class F>
inline I float_to_int(F x, RoundMode mode) noexcept {
    if (x != x) return I(0);
    const double r = static_cast<double>(round_float(x, mode));
    constexpr int digits = std::numeric_limits<I>::digits;  // value bits (63 for int64)
    const double hi = std::ldexp(1.0, digits);
    if (r >= hi) return std::numeric_limits<I>::max();
    if (std::is_signed<I>::value) {
        if (r < -hi) return std::numeric_limits<I>::min();
    } else if (r < 0) {
        return I(0);
    }
    return static_cast<I>(r);
}

// Integer -> integer, saturating.
template <class To, class From>
inline To int_to_int(From v) noexcept {
    using L = std::numeric_limits<To>;
    if (std::is_signed<From>::value) {
        const auto sv = static_cast<std::int64_t>(v);
        if (std::is_signed<To>::value) {
            if (sv < static_cast<std::int64_t>(L::min())) return L::min();
            if (sv > static_cast<std::int64_t>(L::max())) return L::max();
        } else {
            if (sv < 0) return To(0);
            if (static_cast<std::uint64_t>(sv) > static_cast<std::uint64_t>(L::max())) return L::max();
        }
        return static_cast<To>(v);
    }
    const auto uv = static_cast<std::uint64_t>(v);
    if (uv > static_cast<std::uint64_t>(L::max())) return L::max();
    return static_cast<To>(v);
}

// Integer -> bfloat16 rounded once (nearest even) directly from the integer, so large values
// are not rounded twice through float.
template <class I>
inline bfloat16 int_to_bf16(I v) noexcept {
    const bool neg = std::is_signed<I>::value && v < 0;
    std::uint64_t u = neg ? (~static_cast<std::uint64_t>(v) + 1u) : static_cast<std::uint64_t>(v);
    if (u == 0) return bfloat16::from_bits(0);
    int p = 63;
    while (!((u >> p) & 1u)) --p;  // position of the top set bit
    if (p > 7) {
        const int shift = p - 7;
        std::uint64_t m = u >> shift;
        const std::uint64_t rem = u & ((std::uint64_t(1) << shift) - 1u);
        const std::uint64_t halfway = std::uint64_t(1) << (shift - 1);
        if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
        if (m == 256u) {
            m = 128u;
            ++p;
        }
        const std::uint32_t bits = (neg ? 0x8000u : 0u) | (static_cast<std::uint32_t>(p + 127) << 7) |
                                   static_cast<std::uint32_t>(m & 0x7fu);
        return bfloat16::from_bits(static_cast<std::uint16_t>(bits));
    }
    return bfloat16(neg ? -static_cast<float>(u) : static_cast<float>(u));  // exact
}

}  // namespace dtype_detail

// convert<To>(v): the conversion every instruction and orchestration uses.
//  - float-like -> float-like: exact when widening; narrowing (float -> half/bfloat16, half <->
//    bfloat16) rounds by `mode` (nearest even by default). NaN, inf, subnormals kept.
//  - float-like -> integer: rounded by `mode` (nearest even by default), saturating, NaN -> 0.
//  - integer -> float-like: nearest even (integer -> half/bfloat16 rounded once).
//  - integer -> integer: saturating.  anything -> bool: v != 0.  bool -> anything: 0 or 1.
template <class To, class From>
inline To convert(From v, RoundMode mode = RoundMode::Rint) noexcept {
    if constexpr (std::is_same<To, From>::value) {
        (void)mode;
        return v;
    } else if constexpr (std::is_same<To, bool>::value) {
        (void)mode;
        if constexpr (is_float_like_v<From>) {
            return static_cast<float>(to_compute(v)) != 0.0f;  // NaN -> true
        } else {
            return v != From(0);
        }
    } else if constexpr (std::is_same<From, bool>::value) {
        (void)mode;
        return static_cast<To>(v ? 1.0f : 0.0f);
    } else if constexpr (is_float_like_v<From> && is_float_like_v<To>) {
        const float f = static_cast<float>(to_compute(v));  // exact: every float-like fits a float
        if constexpr (std::is_same<To, half>::value) {
            return half::from_bits(dtype_detail::float_to_half_bits(f, mode));
        } else if constexpr (std::is_same<To, bfloat16>::value) {
            return bfloat16::from_bits(dtype_detail::float_to_bf16_bits(f, mode));
        } else {
            (void)mode;
            return static_cast<To>(f);
        }
    } else if constexpr (is_float_like_v<From>) {  // -> integer
        return dtype_detail::float_to_int<To>(to_compute(v), mode);
    } else if constexpr (std::is_same<To, bfloat16>::value) {  // integer -> bf16
        (void)mode;
        return dtype_detail::int_to_bf16(v);
    } else if constexpr (std::is_same<To, half>::value) {  // integer -> half
        (void)mode;
        // |v| > 65520 is inf either way; below 2^24 the float is exact, so one rounding.
        if constexpr (sizeof(From) > 2) {
            if (v > From(70000)) return half::from_bits(0x7c00u);
            if (std::is_signed<From>::value && v < From(-70000)) return half::from_bits(0xfc00u);
        }
        return half(static_cast<float>(v));
    } else if constexpr (is_float_like_v<To>) {  // integer -> float
        (void)mode;
        return static_cast<To>(v);
    } else {
        (void)mode;
        return dtype_detail::int_to_int<To>(v);
    }
}

}  // namespace simpler
