// exp over runs of float elements, eight at a time, with the host libm's results bit for bit.
//
// Our backend's TEXP and the exp of the fused expands are `std::exp` in float (docs/tile-interface.md).
// A call per element keeps the loop scalar (about 10 cycles an element); this header evaluates
// the same function as glibc's expf (2.28 on, x86-64 with FMA and AVX2, where glibc picks its
// FMA variant) on eight lanes of double:
//   k = round(x * 32 / ln 2) (added to and subtracted from 1.5 * 2^52), r = x * 32 / ln 2 - k,
//   2^(k / 32) from a 32-entry table of 2^(i / 32) with k's high bits added to the exponent,
//   exp(x) = 2^(k / 32) * (1 + C2 r + (C1 + C0 r) r^2), rounded once to float,
// with the products and sums fused where glibc's FMA variant fuses them. The table is
// 2^(i / 32) rounded to double, with i / 32 subtracted from the exponent field; C0..C2 are
// glibc's polynomial coefficients (the values its FMA variant loads). Lanes whose |x| >= 88,
// infinities and NaN go to std::exp itself (overflow, underflow and the special values).
// With AVX-512F and VL the same operations use 512-bit instructions and mask registers
// (PTO_SIM_MATH_VEXP512); with AVX2 alone the table is read with 32-bit permutes (exp8). test_math_exp.cpp compares the lane forms with std::exp over a sweep
// of the float range (built with AVX2 and FMA, and for the host's CPU); on other targets and
// compilers every element calls std::exp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__FMA__) && defined(__AVX2__) && \
    defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 28))
#define PTO_SIM_MATH_VEXP 1
#else
#define PTO_SIM_MATH_VEXP 0
#endif
#if PTO_SIM_MATH_VEXP
#include <immintrin.h>
#endif

namespace pto {
namespace sim {
namespace math {
namespace detail {

#if PTO_SIM_MATH_VEXP
typedef double vexp_d __attribute__((vector_size(64)));
typedef float vexp_f __attribute__((vector_size(32)));
typedef std::uint64_t vexp_u __attribute__((vector_size(64)));
typedef std::uint32_t vexp_w __attribute__((vector_size(32)));
#if defined(__AVX512F__) && defined(__AVX512VL__)
#define PTO_SIM_MATH_VEXP512 1
typedef long long vexp_q __attribute__((vector_size(64)));
typedef int vexp_i __attribute__((vector_size(32)));
#else
#define PTO_SIM_MATH_VEXP512 0
#endif

// 2^(i / 32) rounded to double, minus i << 47 (i / 32 in the exponent field), i = 0..31.
inline constexpr std::uint64_t kExpTable[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};
#if !PTO_SIM_MATH_VEXP512
// kExpTable's entries split into their low and high 32 bits (the AVX2 lookup).
struct ExpTableHalves {
    std::uint32_t lo[32];
    std::uint32_t hi[32];
};
constexpr ExpTableHalves split_exp_table() noexcept {
    ExpTableHalves h{};
    for (int i = 0; i < 32; ++i) {
        h.lo[i] = static_cast<std::uint32_t>(kExpTable[i]);
        h.hi[i] = static_cast<std::uint32_t>(kExpTable[i] >> 32);
    }
    return h;
}
alignas(32) inline constexpr ExpTableHalves kExpTableHalves = split_exp_table();
#endif
inline constexpr double kExpInvLn2N = 0x1.71547652b82fep+5;  // 32 / ln 2
inline constexpr double kExpShift = 0x1.8p+52;
inline constexpr double kExpC0 = 0x1.c6af84b912394p-20;
inline constexpr double kExpC1 = 0x1.ebfce50fac4f3p-13;
inline constexpr double kExpC2 = 0x1.62e42ff0c52d6p-6;

// The lanes of mask (bit l: lane l): out[l] = std::exp(xf[l]). Out of line and cold, so that
// the call of libm does not make the compiler keep exp8's constants in memory around it.
__attribute__((noinline, cold)) inline void exp8_slow(float* out, vexp_f xf, unsigned mask) noexcept {
    for (int l = 0; l < 8; ++l)
        if ((mask >> l) & 1u) out[l] = std::exp(xf[l]);
}

// out[0..8) = exp(in[0..8) - sub) (Sub: the float subtraction first, as the scalar form does).
// out may be in.
template <bool Sub>
inline void exp8(float* out, const float* in, float sub) noexcept {
    vexp_f xf;
    std::memcpy(&xf, in, sizeof xf);
    if (Sub) xf = xf - sub;
#if PTO_SIM_MATH_VEXP512
    // AVX-512 forms of the same operations: GCC 12 without a 512-bit preference splits the
    // conversions of a generic vector in two, and tests the table half and the slow lanes with
    // vector compares and movmskps where mask registers take one instruction each.
    const vexp_d xd = __builtin_ia32_cvtps2pd512_mask(xf, vexp_d{}, static_cast<unsigned char>(-1), 4);
#else
    const vexp_d xd = __builtin_convertvector(xf, vexp_d);
#endif
    const vexp_d zs = kExpInvLn2N * xd + kExpShift;  // fused, as glibc's
    const vexp_u ki = (vexp_u)zs;  // a vector cast keeps the bits
    const vexp_d kd = zs - kExpShift;
    const vexp_d r = kExpInvLn2N * xd - kd;  // fused
#if PTO_SIM_MATH_VEXP512
    // The table lookup as two two-vector shuffles (each indexes 16 entries by idx mod 16) and a
    // select on bit 4.
    vexp_u q[4];
    std::memcpy(q, kExpTable, sizeof q);
    const auto lo = __builtin_ia32_vpermt2varq512_mask((vexp_q)ki, (vexp_q)q[0], (vexp_q)q[1], 0xff);
    const auto hi = __builtin_ia32_vpermt2varq512_mask((vexp_q)ki, (vexp_q)q[2], (vexp_q)q[3], 0xff);
    const unsigned char bit4 = __builtin_ia32_ptestmq512((vexp_q)ki, (vexp_q)(vexp_u{} + 16), 0xff);
    vexp_u t = (vexp_u)__builtin_ia32_blendmq_512_mask(lo, hi, bit4);  // lane l: bit l ? hi : lo
#else
    // AVX2 has no two-register 64-bit permute (GCC lowers __builtin_shuffle of these vectors to
    // a scalar extract and select per lane), and its gathers are slow on some CPUs (Zen 3: more
    // than the rest of exp8): the low and the high halves of the entries are looked up as 32-bit
    // lanes instead, four eight-entry permutes each and a select on index bits 3 and 4.
    __m256i k2[2];
    std::memcpy(k2, &ki, sizeof k2);
    // The low dword of each index lane, in the order [0 1 4 5 | 2 3 6 7] that the unpacks below
    // turn back into lanes 0..3 and 4..7.
    const __m256i idx = _mm256_castps_si256(
        _mm256_shuffle_ps(_mm256_castsi256_ps(k2[0]), _mm256_castsi256_ps(k2[1]), 0x88));
    const __m256 bit3 = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));  // as the sign bit
    const __m256 bit4 = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 27));
    const auto look = [&](const std::uint32_t* half) {
        const __m256 e0 = _mm256_permutevar8x32_ps(_mm256_load_ps(reinterpret_cast<const float*>(half)), idx);
        const __m256 e1 = _mm256_permutevar8x32_ps(_mm256_load_ps(reinterpret_cast<const float*>(half + 8)), idx);
        const __m256 e2 = _mm256_permutevar8x32_ps(_mm256_load_ps(reinterpret_cast<const float*>(half + 16)), idx);
        const __m256 e3 = _mm256_permutevar8x32_ps(_mm256_load_ps(reinterpret_cast<const float*>(half + 24)), idx);
        return _mm256_blendv_ps(_mm256_blendv_ps(e0, e1, bit3), _mm256_blendv_ps(e2, e3, bit3), bit4);
    };
    const __m256 lo = look(kExpTableHalves.lo);
    const __m256 hi = look(kExpTableHalves.hi);
    const __m256i t2[2] = {_mm256_castps_si256(_mm256_unpacklo_ps(lo, hi)),
                           _mm256_castps_si256(_mm256_unpackhi_ps(lo, hi))};
    vexp_u t;
    std::memcpy(&t, t2, sizeof t);
#endif
    t += ki << 47;
    const vexp_d s = (vexp_d)t;
    const vexp_d z = kExpC0 * r + kExpC1;  // fused
    const vexp_d r2 = r * r;
    vexp_d y = kExpC2 * r + 1.0;  // fused
    y = z * r2 + y;               // fused
    y = y * s;
    vexp_w bits;
    std::memcpy(&bits, &xf, sizeof bits);
#if PTO_SIM_MATH_VEXP512
    const vexp_f res = __builtin_ia32_cvtpd2ps512_mask(y, vexp_f{}, static_cast<unsigned char>(-1), 4);
    // |x| >= 88, inf, NaN: glibc's slow path (lane l: bit l; predicate 5: unsigned not less than).
    const unsigned mask =
        __builtin_ia32_ucmpd256_mask((vexp_i)(bits & 0x7ff00000u), (vexp_i)(vexp_w{} + 0x42b00000u), 5, 0xff);
#else
    const vexp_f res = __builtin_convertvector(y, vexp_f);
    const vexp_w big = (bits & 0x7ff00000u) >= 0x42b00000u;  // |x| >= 88, inf, NaN: glibc's slow path
    const unsigned mask = static_cast<unsigned>(__builtin_ia32_movmskps256((vexp_f)big));  // lane l: bit l
#endif
    std::memcpy(out, &res, sizeof res);
    if (mask != 0) exp8_slow(out, xf, mask);
}
#endif

// d[i] = std::exp(x[i] - sub) (Sub) or std::exp(x[i]), i in [0, n).
template <bool Sub>
inline void exp_run(float* d, const float* x, float sub, int n) noexcept {
    int i = 0;
#if PTO_SIM_MATH_VEXP
    for (; i + 8 <= n; i += 8) exp8<Sub>(d + i, x + i, sub);
#endif
    for (; i < n; ++i) d[i] = std::exp(Sub ? x[i] - sub : x[i]);
}

// The functors of exp and of the fused exp(a - s): one element (operator()), or a run of float
// elements (run) where the element loops find it (has_run_v: map1, expand_op).
struct ExpFn {
    float operator()(float x) const noexcept { return std::exp(x); }
    static void run(float* d, const float* x, int n) noexcept { exp_run<false>(d, x, 0.0f, n); }
};
struct ExpDifFn {
    float operator()(float x, float s) const noexcept { return std::exp(x - s); }
    static void run(float* d, const float* x, float s, int n) noexcept { exp_run<true>(d, x, s, n); }
};

template <class F, class = void>
struct has_run : std::false_type {};
template <class F>
struct has_run<F, std::void_t<decltype(&F::run)>> : std::true_type {};
template <class F>
inline constexpr bool has_run_v = has_run<F>::value;

}  // namespace detail
}  // namespace math
}  // namespace sim
}  // namespace pto
