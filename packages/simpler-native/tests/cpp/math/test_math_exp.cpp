// exp over float runs (pto/sim/math/exp.hpp): within 1 ulp of the double exp over a sweep of the
// float range (every 241st bit pattern, both signs, NaN payloads and infinities included), the
// overflow and underflow thresholds exact, and the eight-lane form equal to the element form
// (exp_one) bit for bit: there, around the boundaries of its fast lanes, for the fused
// exp(x - s) at every tail length, and through the math (exp, row_expand_expdif) with padding
// left alone. Built at -O2, at -march=native and with AVX2 and FMA (meson.build): the last two
// exercise the eight-lane form.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "math_test_util.hpp"
#include "pto/sim/math/exp.hpp"

using namespace pto::sim::math;
using namespace mathtest;

namespace {

std::uint32_t bits_of(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}
float from_bits(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}
// Equal bits, or both NaN.
bool same(float a, float b) { return bits_of(a) == bits_of(b) || (a != a && b != b); }

// |got - exp(x)| in units of the last place of the float nearest exp(x) (the least subnormal's
// below the normals).
double ulp_error(float got, float x) {
    const double want = std::exp(static_cast<double>(x));
    const float near = static_cast<float>(want);
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(near), -126) - 23);
    return std::fabs(static_cast<double>(got) - want) / ulp;
}

}  // namespace

TEST_CASE("exp_run is within 1 ulp of exp over the float range, the same bits as exp_one") {
#if defined(__x86_64__) && defined(__FMA__) && defined(__AVX2__) && defined(__GNUC__)
    CHECK(PTO_SIM_MATH_VEXP == 1);  // the eight-lane form is the one under test here
#endif
    constexpr int kBlock = 1 << 14;
    std::vector<float> x(kBlock), y(kBlock);
    std::uint64_t differ = 0, wrong_edge = 0;
    double worst = 0.0;
    float worst_x = 0.0f;
    std::uint64_t b = 0;
    while (b < (std::uint64_t{1} << 32)) {
        int n = 0;
        for (; n < kBlock && b < (std::uint64_t{1} << 32); ++n, b += 241) x[n] = from_bits(static_cast<std::uint32_t>(b));
        detail::exp_run<false>(y.data(), x.data(), 0.0f, n);
        for (int i = 0; i < n; ++i) {
            if (!same(y[i], detail::exp_one(x[i]))) ++differ;
            const float near = static_cast<float>(std::exp(static_cast<double>(x[i])));
            if (x[i] != x[i] || std::isinf(near) || near == 0.0f || std::isinf(y[i])) {
                if (!same(y[i], near)) ++wrong_edge;  // NaN, +inf and 0 exactly where exp's are
                continue;
            }
            const double e = ulp_error(y[i], x[i]);
            if (e > worst) {
                worst = e;
                worst_x = x[i];
            }
        }
    }
    CAPTURE(worst_x);
    CHECK(differ == 0);
    CHECK(wrong_edge == 0);
    CHECK(worst < 1.0);  // 0.94 over every float (measured once, exhaustively)

    // The thresholds of the fast lanes, of overflow and of underflow, in every lane.
    const float edges[] = {87.0f, -87.0f, 86.99999f, -86.99999f, 88.0f, -88.0f, 0x1.62e42ep6f, 0x1.62e430p6f,
                           -0x1.9fe368p6f, -0x1.9fe36ap6f, -0x1.9d1d9ep6f, -0x1.9d1da0p6f, -0x1.5d589ep6f,
                           0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, 0x1.fffffep127f,
                           -0x1.fffffep127f};
    for (float e : edges) {
        for (int lane = 0; lane < 8; ++lane) {
            float in[8], out[8];
            for (int i = 0; i < 8; ++i) in[i] = 0.5f * static_cast<float>(i) - 1.0f;
            in[lane] = e;
            detail::exp_run<false>(out, in, 0.0f, 8);
            for (int i = 0; i < 8; ++i) {
                CAPTURE(in[i]);
                CHECK(same(out[i], detail::exp_one(in[i])));
                const float near = static_cast<float>(std::exp(static_cast<double>(in[i])));
                if (in[i] != in[i] || std::isinf(near) || near == 0.0f)
                    CHECK(same(out[i], near));
                else
                    CHECK(ulp_error(out[i], in[i]) < 1.0);
            }
            detail::exp_run<false>(in, in, 0.0f, 8);  // in place: the slow lanes see their inputs
            for (int i = 0; i < 8; ++i) CHECK(same(in[i], out[i]));
        }
    }
}

TEST_CASE("exp_run of x - s is exp_one(x - s), every tail length") {
    Rng rng;
    for (int n = 0; n <= 40; ++n) {
        std::vector<float> x(static_cast<std::size_t>(n) + 1), y(static_cast<std::size_t>(n) + 1, -5.0f);
        for (int rep = 0; rep < 50; ++rep) {
            const float s = static_cast<float>(rng.uniform(-100, 100));
            for (int i = 0; i < n; ++i) x[i] = static_cast<float>(rng.uniform(-120, 120));
            detail::exp_run<true>(y.data(), x.data(), s, n);
            for (int i = 0; i < n; ++i) {
                CAPTURE(x[i]);
                CAPTURE(s);
                CHECK(same(y[i], detail::exp_one(x[i] - s)));
            }
            CHECK(y[n] == -5.0f);  // nothing past the run
        }
    }
}

TEST_CASE("exp and row_expand_expdif through the math keep the padding") {
    constexpr int R = 5, C = 40;
    Rng rng;
    VecTile<float, R, C> a, s, d, e;
    for (auto& v : a.data) v = static_cast<float>(rng.uniform(-90, 90));
    for (int r = 0; r < R; ++r) s(r, 0) = static_cast<float>(rng.uniform(-5, 5));
    a.set_valid(4, 37);  // rows are not one run: every row takes a tail
    s.set_valid(4, 1);
    d.fill(7.0f);
    e.fill(7.0f);
    REQUIRE(exp(d, a));
    REQUIRE(row_expand_expdif(e, a, s));
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            CAPTURE(r);
            CAPTURE(c);
            if (r < 4 && c < 37) {
                CHECK(same(d(r, c), detail::exp_one(a(r, c))));
                CHECK(same(e(r, c), detail::exp_one(a(r, c) - s(r, 0))));
            } else {
                CHECK(d(r, c) == 7.0f);
                CHECK(e(r, c) == 7.0f);
            }
        }
}
