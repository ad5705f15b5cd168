// matmul / matmul_acc: Left [M, K] x Right [K, N] -> Acc [M, N] against a triple-loop reference,
// for float, half, bfloat16 (float accumulation) and int8 (int32 accumulation).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "math_test_util.hpp"

using namespace pto::sim::math;
using namespace mathtest;

namespace {

template <class In, class AccT>
void matmul_case(int m, int k, int n, bool integer_valued) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    mathtest::Rng rng;
    LeftTile<In, 32, 48> a;
    RightTile<In, 48, 40> b;
    AccTile<AccT, 32, 40> c;
    for (auto& v : a.data) v = static_cast<In>(integer_valued ? static_cast<float>(rng.below(9) - 4) : rng.uniform(-1, 1));
    for (auto& v : b.data) v = static_cast<In>(integer_valued ? static_cast<float>(rng.below(9) - 4) : rng.uniform(-1, 1));
    a.set_valid(m, k);
    b.set_valid(k, n);
    c.fill(AccT(-7));
    REQUIRE(matmul(c, a, b));
    CHECK(take_error().empty());
    CHECK(c.valid_rows == m);
    CHECK(c.valid_cols == n);
    for (int i = 0; i < 32; ++i)
        for (int j = 0; j < 40; ++j) {
            if (i >= m || j >= n) {
                REQUIRE(c(i, j) == AccT(-7));  // padding untouched
                continue;
            }
            double want = 0;
            for (int p = 0; p < k; ++p) want += static_cast<double>(to_compute(a(i, p))) * static_cast<double>(to_compute(b(p, j)));
            if (integer_valued)
                REQUIRE(static_cast<double>(c(i, j)) == want);
            else
                REQUIRE(static_cast<double>(c(i, j)) == doctest::Approx(want).epsilon(1e-5).scale(1.0));
        }
    // matmul_acc adds a second product.
    REQUIRE(matmul_acc(c, a, b));
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            double want = 0;
            for (int p = 0; p < k; ++p) want += static_cast<double>(to_compute(a(i, p))) * static_cast<double>(to_compute(b(p, j)));
            if (integer_valued)
                REQUIRE(static_cast<double>(c(i, j)) == 2 * want);
            else
                REQUIRE(static_cast<double>(c(i, j)) == doctest::Approx(2 * want).epsilon(1e-5).scale(1.0));
        }
}

}  // namespace

TEST_CASE("matmul float/half/bfloat16 accumulate in float") {
    for (bool exact : {true, false}) {
        matmul_case<float, float>(32, 48, 40, exact);
        matmul_case<float, float>(7, 13, 29, exact);
        matmul_case<half, float>(32, 48, 40, exact);
        matmul_case<half, float>(1, 1, 1, exact);
        matmul_case<bfloat16, float>(17, 33, 5, exact);
    }
}

TEST_CASE("matmul int8 x int8 accumulates in int32") {
    matmul_case<std::int8_t, std::int32_t>(32, 48, 40, true);
    matmul_case<std::int8_t, std::int32_t>(3, 47, 11, true);
    LeftTile<std::int8_t, 2, 64> a;
    RightTile<std::int8_t, 64, 2> b;
    AccTile<std::int32_t, 2, 2> c;
    for (auto& v : a.data) v = -128;
    for (auto& v : b.data) v = -128;
    REQUIRE(matmul(c, a, b));
    CHECK(c(1, 1) == 64 * 16384);  // beyond int16, exact in int32
}

TEST_CASE("matmul float products are summed in k order in float") {
    // 1e8 + 1 - 1e8 in float order is 0; a double or reassociated sum would give 1.
    LeftTile<float, 1, 3> a;
    RightTile<float, 3, 1> b;
    AccTile<float, 1, 1> c;
    a(0, 0) = 1e8f;
    a(0, 1) = 1.0f;
    a(0, 2) = -1e8f;
    b(0, 0) = b(1, 0) = b(2, 0) = 1.0f;
    REQUIRE(matmul(c, a, b));
    CHECK(c(0, 0) == 0.0f);
}

TEST_CASE("matmul shape errors are reported and leave the accumulator unchanged") {
    LeftTile<half, 16, 16> a;
    RightTile<half, 16, 16> b;
    AccTile<float, 8, 16> c;
    c.fill(3.0f);
    a.set_valid(8, 16);
    b.set_valid(12, 16);
    CHECK_FALSE(matmul(c, a, b));
    CHECK(take_error().find("inner dims") != std::string::npos);
    b.set_valid(16, 16);
    a.set_valid(16, 16);
    CHECK_FALSE(matmul(c, a, b));
    CHECK(take_error().find("does not fit") != std::string::npos);
    a.set_valid(8, 16);
    c.set_valid(8, 8);
    CHECK_FALSE(matmul_acc(c, a, b));
    CHECK(take_error().find("accumulator") != std::string::npos);
    for (float v : c.data) CHECK(v == 3.0f);
}

namespace {

// Every (m, k, n) of the sweep against a double reference, on tiles whose padding holds NaN
// (never read into a result) and an accumulator whose padding must stay untouched. Integer
// values keep every product and partial sum exact, so the comparison is exact whatever the
// block shape, vector width or FMA use of the build (this file is also built with -march=native).
template <class In, class AccT>
void matmul_sweep() {
    constexpr int MR = 40, KR = 72, NR = 72;
    mathtest::Rng rng;
    static LeftTile<In, MR, KR> a;
    static RightTile<In, KR, NR> b;
    static AccTile<AccT, MR, NR> c;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int m : {0, 1, 5, 8, 9, 16, 17, 25, 40})
        for (int k : {0, 1, 3, 64, 72})
            for (int n : {0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 48, 49, 64, 71, 72}) {
                CAPTURE(m);
                CAPTURE(k);
                CAPTURE(n);
                for (int i = 0; i < MR; ++i)
                    for (int p = 0; p < KR; ++p)
                        a(i, p) = i < m && p < k ? static_cast<In>(static_cast<float>(rng.below(9) - 4))
                                                 : static_cast<In>(std::is_integral<In>::value ? 99.0f : nan);
                for (int p = 0; p < KR; ++p)
                    for (int j = 0; j < NR; ++j)
                        b(p, j) = p < k && j < n ? static_cast<In>(static_cast<float>(rng.below(9) - 4))
                                                 : static_cast<In>(std::is_integral<In>::value ? 99.0f : nan);
                a.valid_rows = m;
                a.valid_cols = k;
                b.valid_rows = k;
                b.valid_cols = n;
                c.fill(AccT(-7));
                REQUIRE(matmul(c, a, b));
                REQUIRE(matmul_acc(c, a, b));
                REQUIRE(take_error().empty());
                for (int i = 0; i < MR; ++i)
                    for (int j = 0; j < NR; ++j) {
                        if (i >= m || j >= n) {
                            REQUIRE(c(i, j) == AccT(-7));
                            continue;
                        }
                        double want = 0;
                        for (int p = 0; p < k; ++p)
                            want += static_cast<double>(to_compute(a(i, p))) * static_cast<double>(to_compute(b(p, j)));
                        REQUIRE(static_cast<double>(c(i, j)) == 2 * want);
                    }
            }
}

}  // namespace

TEST_CASE("matmul over every block edge: rows, vector columns and leftover columns") {
    matmul_sweep<float, float>();
    matmul_sweep<half, float>();
    matmul_sweep<bfloat16, float>();
    matmul_sweep<std::int8_t, std::int32_t>();
}

TEST_CASE("matmul_acc keeps the k order after the accumulator's value") {
    // c = 1e8, then + 1 (k = 0) - 1e8 (k = 1): 1e8 + 1 rounds to 1e8 in float, so the result is 0.
    LeftTile<float, 2, 2> a;
    RightTile<float, 2, 40> b;
    AccTile<float, 2, 40> c;
    a(0, 0) = a(1, 0) = 1.0f;
    a(0, 1) = a(1, 1) = -1e8f;
    b.fill(1.0f);
    c.fill(1e8f);
    REQUIRE(matmul_acc(c, a, b));
    for (float v : c.data) CHECK(v == 0.0f);
}
