// exp in float for TEXP and the fused exp of the expands: within 1 ulp of the exact exp, and the
// same bits on every host, eight elements at a time where the target has AVX2 and FMA.
//
// The function (exp_one, and exp8 on eight lanes with the same operations in the same order):
//   n = round(x / ln 2) (added to and subtracted from 1.5 * 2^23), r = x - n ln 2 in two fused
//   steps (ln 2 = L_hi + L_lo, L_hi the float nearest ln 2: the first step is exact),
//   exp(r) = 1 + r (1 + r q(r)), q the degree-5 Taylor polynomial of (e^r - 1 - r) / r^2
//   (|r| <= ln 2 / 2: truncation below 0.13 ulp), all in fused multiply-adds (std::fma in the
//   element form: an instruction at -march=native on x86-64, a libm call on a target without FMA),
//   exp(x) = exp(r) * 2^n, rounded once (twice scaled by 2^(n/2) and 2^(n - n/2) where 2^n is
//   not a normal float: the first product is exact, the second rounds once, into the
//   subnormals on the way down).
// x > ln(FLT_MAX) gives +inf, x below ln of half the least subnormal 0, NaN a quiet NaN.
// test_math_exp.cpp measures the error against the double exp over a sweep of the float range
// (at most 1 ulp) and checks that the eight-lane form and the element form agree bit for bit.
//
// Not the host libm's expf: its results differ between libm versions and CPUs (glibc picks an
// FMA or a plain variant at run time), and reproducing them costs more than three times as much
// on AVX2 (its 2^(i/32) table has no cheap lookup there). Torch's CPU exp (Sleef, 1 ulp) and
// numpy's SIMD exp make the same trade; an NPU's vector exp is not libm's either.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && defined(__FMA__) && defined(__AVX2__) && (defined(__GNUC__) || defined(__clang__))
#define PTO_SIM_MATH_VEXP 1
#include <immintrin.h>
#else
#define PTO_SIM_MATH_VEXP 0
#endif

namespace pto {
namespace sim {
namespace math {
namespace detail {

inline constexpr float kExpLog2e = 0x1.715476p+0f;     // 1 / ln 2
inline constexpr float kExpShift = 0x1.8p+23f;         // 1.5 * 2^23: adding it rounds to an integer
inline constexpr float kExpLn2Hi = 0x1.62e430p-1f;     // ln 2 rounded to float
inline constexpr float kExpLn2Lo = -0x1.05c610p-29f;   // ln 2 - kExpLn2Hi
inline constexpr float kExpQ0 = 0x1.000000p-1f;        // 1 / 2!
inline constexpr float kExpQ1 = 0x1.555556p-3f;        // 1 / 3!
inline constexpr float kExpQ2 = 0x1.555556p-5f;        // 1 / 4!
inline constexpr float kExpQ3 = 0x1.111112p-7f;        // 1 / 5!
inline constexpr float kExpQ4 = 0x1.6c16c2p-10f;       // 1 / 6!
inline constexpr float kExpQ5 = 0x1.a01a02p-13f;       // 1 / 7!
inline constexpr float kExpOverflow = 0x1.62e42ep+6f;  // the largest x with exp(x) <= FLT_MAX
inline constexpr float kExpUnderflow = -0x1.9fe368p+6f;  // below it exp(x) rounds to 0
// exp8 takes lanes inside (-kExpFastBound, kExpFastBound): there n is in [-126, 126] and 2^n a
// normal float. The others (and NaN) go to exp_one.
inline constexpr float kExpFastBound = 87.0f;

inline float exp_bits_to_float(std::uint32_t b) noexcept {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

// exp(x), rounded as the header's comment says.
inline float exp_one(float x) noexcept {
    if (x != x) return x + x;  // NaN, quieted
    if (x > kExpOverflow) return std::numeric_limits<float>::infinity();
    if (x < kExpUnderflow) return 0.0f;
    const float z = std::fma(x, kExpLog2e, kExpShift);
    const float n = z - kExpShift;
    float r = std::fma(-n, kExpLn2Hi, x);
    r = std::fma(-n, kExpLn2Lo, r);
    float q = std::fma(kExpQ5, r, kExpQ4);
    q = std::fma(q, r, kExpQ3);
    q = std::fma(q, r, kExpQ2);
    q = std::fma(q, r, kExpQ1);
    q = std::fma(q, r, kExpQ0);
    const float y = std::fma(std::fma(q, r, 1.0f), r, 1.0f);
    std::uint32_t zb, sb;
    std::memcpy(&zb, &z, sizeof zb);
    std::memcpy(&sb, &kExpShift, sizeof sb);
    const std::int32_t k = static_cast<std::int32_t>(zb - sb);  // n as an integer
    if (k >= -126 && k <= 127) return y * exp_bits_to_float(static_cast<std::uint32_t>(k + 127) << 23);
    const std::int32_t k1 = k / 2, k2 = k - k1;
    return (y * exp_bits_to_float(static_cast<std::uint32_t>(k1 + 127) << 23)) *
           exp_bits_to_float(static_cast<std::uint32_t>(k2 + 127) << 23);
}

#if PTO_SIM_MATH_VEXP
// The lanes of mask (bit l: lane l): out[l] = exp_one(x[l]). Out of line and cold, so that the
// element form does not make the compiler keep exp8's constants in memory around it.
__attribute__((noinline, cold)) inline void exp8_slow(float* out, __m256 x, unsigned mask) noexcept {
    alignas(32) float xs[8];
    _mm256_store_ps(xs, x);
    for (int l = 0; l < 8; ++l)
        if ((mask >> l) & 1u) out[l] = exp_one(xs[l]);
}

// out[0..8) = exp(in[0..8) - sub) (Sub: the float subtraction first, as the element form
// does). out may be in.
template <bool Sub>
inline void exp8(float* out, const float* in, float sub) noexcept {
    __m256 x = _mm256_loadu_ps(in);
    if (Sub) x = _mm256_sub_ps(x, _mm256_set1_ps(sub));
    const __m256 shift = _mm256_set1_ps(kExpShift);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(kExpLog2e), shift);
    const __m256 n = _mm256_sub_ps(z, shift);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kExpLn2Hi), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kExpLn2Lo), r);
    __m256 q = _mm256_fmadd_ps(_mm256_set1_ps(kExpQ5), r, _mm256_set1_ps(kExpQ4));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(kExpQ3));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(kExpQ2));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(kExpQ1));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(kExpQ0));
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 y = _mm256_fmadd_ps(_mm256_fmadd_ps(q, r, one), r, one);
    // 2^n: n (z's low bits less the shift's) plus the exponent bias, in the exponent field.
    const __m256i k = _mm256_sub_epi32(_mm256_castps_si256(z), _mm256_castps_si256(shift));
    const __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23);
    _mm256_storeu_ps(out, _mm256_mul_ps(y, _mm256_castsi256_ps(scale)));
    // Lanes outside the fast range, and NaN (the ordered compare is false for it).
    const __m256 bound = _mm256_set1_ps(kExpFastBound);
    const __m256 abs_x = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    const unsigned mask =
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(abs_x, bound, _CMP_NLT_UQ)));
    if (mask != 0) exp8_slow(out, x, mask);
}
#endif

// d[i] = exp(x[i] - sub) (Sub) or exp(x[i]), i in [0, n).
template <bool Sub>
inline void exp_run(float* d, const float* x, float sub, int n) noexcept {
    int i = 0;
#if PTO_SIM_MATH_VEXP
    for (; i + 8 <= n; i += 8) exp8<Sub>(d + i, x + i, sub);
#endif
    for (; i < n; ++i) d[i] = exp_one(Sub ? x[i] - sub : x[i]);
}

// The functors of exp and of the fused exp(a - s): one element (operator()), or a run of float
// elements (run) where the element loops find it (has_run_v: map1, expand_op).
struct ExpFn {
    float operator()(float x) const noexcept { return exp_one(x); }
    static void run(float* d, const float* x, int n) noexcept { exp_run<false>(d, x, 0.0f, n); }
};
struct ExpDifFn {
    float operator()(float x, float s) const noexcept { return exp_one(x - s); }
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
