// Bitwise, compare/select, the max/min/expdif broadcasts and the product reductions against
// per-element references.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "math_test_util.hpp"

using namespace pto::sim::math;
using namespace mathtest;

namespace {

constexpr int R = 6, C = 21;  // 21 columns: a mask row is 3 bytes, the last one partly used

template <class T>
void fill_ints(VecTile<T, R, C>& t, mathtest::Rng& rng, int lo, int hi) {
    for (auto& v : t.data) v = static_cast<T>(lo + rng.below(hi - lo + 1));
}

template <class T>
void bitwise_suite(int lo, int hi) {
    mathtest::Rng rng;
    VecTile<T, R, C> a, b, d;
    fill_ints(a, rng, lo, hi);
    fill_ints(b, rng, lo, hi);
    a.set_valid(5, 19);
    b.set_valid(5, 19);
    auto check = [&](auto ref, const char* name) {
        INFO(name);
        REQUIRE(d.valid_rows == 5);
        REQUIRE(d.valid_cols == 19);
        for (int r = 0; r < 5; ++r)
            for (int c = 0; c < 19; ++c) REQUIRE(d(r, c) == static_cast<T>(ref(a(r, c), b(r, c))));
        CHECK(take_error().empty());
    };
    REQUIRE(and_(d, a, b));
    check([](T x, T y) { return x & y; }, "and_");
    REQUIRE(or_(d, a, b));
    check([](T x, T y) { return x | y; }, "or_");
    REQUIRE(xor_(d, a, b));
    check([](T x, T y) { return x ^ y; }, "xor_");
    REQUIRE(not_(d, a));
    check([](T x, T) { return ~x; }, "not_");
    REQUIRE(ands(d, a, T(0x35)));
    check([](T x, T) { return x & T(0x35); }, "ands");
    REQUIRE(ors(d, a, T(0x11)));
    check([](T x, T) { return x | T(0x11); }, "ors");
    REQUIRE(xors(d, a, T(0x7f)));
    check([](T x, T) { return x ^ T(0x7f); }, "xors");
    REQUIRE(shls(d, a, T(3)));
    check([](T x, T) { return static_cast<T>(static_cast<std::make_unsigned_t<T>>(x) << 3); }, "shls");
    REQUIRE(shrs(d, a, T(2)));
    check([](T x, T) { return static_cast<T>(x >> 2); }, "shrs");
    VecTile<T, R, C> n;
    for (int i = 0; i < R * C; ++i) n.data[i] = static_cast<T>(i % 5);
    n.set_valid(5, 19);
    REQUIRE(shl(d, a, n));
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 19; ++c)
            REQUIRE(d(r, c) == static_cast<T>(static_cast<std::make_unsigned_t<T>>(a(r, c)) << n(r, c)));
    REQUIRE(shr(d, a, n));
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 19; ++c) REQUIRE(d(r, c) == static_cast<T>(a(r, c) >> n(r, c)));
    CHECK(take_error().empty());
}

}  // namespace

TEST_CASE("bitwise ops match the reference in signed and unsigned types") {
    bitwise_suite<std::int32_t>(-100000, 100000);
    bitwise_suite<std::int16_t>(-3000, 3000);
    bitwise_suite<std::uint8_t>(0, 255);
}

TEST_CASE("shifts: per-element amounts, arithmetic right shift, out-of-range amounts reported") {
    VecTile<std::int32_t, 2, 4> a, n, d;
    const std::int32_t av[] = {1, -8, 0x40000000, -1, 5, -1024, 7, 123456};
    const std::int32_t nv[] = {0, 1, 1, 31, 4, 3, 2, 16};
    for (int i = 0; i < 8; ++i) {
        a.data[i] = av[i];
        n.data[i] = nv[i];
    }
    REQUIRE(shl(d, a, n));
    for (int i = 0; i < 8; ++i)
        CHECK(d.data[i] == static_cast<std::int32_t>(static_cast<std::uint32_t>(av[i]) << nv[i]));
    REQUIRE(shr(d, a, n));
    CHECK(d.data[1] == -4);
    CHECK(d.data[3] == -1);
    CHECK(d.data[5] == -128);
    CHECK(take_error().empty());
    VecTile<std::uint16_t, 1, 2> u, ud;
    u.data[0] = 0x8000;
    u.data[1] = 0xffff;
    REQUIRE(shrs(ud, u, std::uint16_t(15)));
    CHECK(ud.data[0] == 1);  // logical for unsigned
    CHECK(ud.data[1] == 1);
    n.data[2] = 32;
    REQUIRE(shl(d, a, n));
    CHECK(d.data[2] == 0);
    CHECK(take_error().find("shl: shift amount outside [0, 32)") != std::string::npos);
    REQUIRE(shrs(d, a, -1));
    CHECK(take_error().find("shrs: shift amount outside [0, 32)") != std::string::npos);
}

TEST_CASE("cmp packs one bit per value, low bit first; sel and sels read it") {
    VecTile<float, R, C> a, b, d;
    mathtest::Rng rng;
    for (int i = 0; i < R * C; ++i) {
        a.data[i] = rng.uniform(-1, 1);
        b.data[i] = (i % 4 == 0) ? a.data[i] : rng.uniform(-1, 1);
    }
    a.data[5] = std::numeric_limits<float>::quiet_NaN();
    a.set_valid(5, 19);
    b.set_valid(5, 19);
    VecTile<std::uint8_t, R, 32> mask;
    const CmpMode modes[] = {CmpMode::EQ, CmpMode::NE, CmpMode::LT, CmpMode::LE, CmpMode::GT, CmpMode::GE};
    auto holds = [](float x, float y, CmpMode m) {
        switch (m) {
            case CmpMode::EQ: return x == y;
            case CmpMode::NE: return x != y;
            case CmpMode::LT: return x < y;
            case CmpMode::LE: return x <= y;
            case CmpMode::GT: return x > y;
            case CmpMode::GE: return x >= y;
        }
        return false;
    };
    for (CmpMode m : modes) {
        INFO(static_cast<int>(m));
        mask.fill(0xAA);
        REQUIRE(cmp(mask, a, b, m));
        CHECK(mask.valid_rows == 5);
        CHECK(mask.valid_cols == 3);
        for (int r = 0; r < 5; ++r) {
            for (int c = 0; c < 19; ++c) CHECK(((mask(r, c / 8) >> (c % 8)) & 1) == (holds(a(r, c), b(r, c), m) ? 1 : 0));
            CHECK((mask(r, 2) >> 3) == 0);  // bits past the valid columns are 0
            CHECK(mask(r, 3) == 0xAA);      // bytes past the mask's valid shape untouched
        }
        REQUIRE(sel(d, mask, a, b));
        for (int r = 0; r < 5; ++r)
            for (int c = 0; c < 19; ++c) {
                const float want = holds(a(r, c), b(r, c), m) ? a(r, c) : b(r, c);
                CHECK((d(r, c) == want || (d(r, c) != d(r, c) && want != want)));
            }
        REQUIRE(cmps(mask, a, 0.25f, m));
        REQUIRE(sels(d, mask, b, -9.0f));
        for (int r = 0; r < 5; ++r)
            for (int c = 0; c < 19; ++c) CHECK(d(r, c) == (holds(a(r, c), 0.25f, m) ? b(r, c) : -9.0f));
    }
    CHECK(take_error().empty());
    CHECK_FALSE(cmp(mask, a, b, static_cast<CmpMode>(7)));
    CHECK(take_error().find("comparison mode 7") != std::string::npos);
    VecTile<std::uint8_t, R, 32> narrow;
    narrow.set_valid(5, 2);  // covers 16 values, the rows need 19
    CHECK_FALSE(sel(d, narrow, a, b));
    CHECK(take_error().find("does not cover") != std::string::npos);
}

TEST_CASE("max/min/expdif broadcasts and the product reductions") {
    VecTile<float, R, C> a, d;
    VecTile<float, R, 1> row;
    VecTile<float, 1, C> col;
    mathtest::Rng rng;
    for (auto& v : a.data) v = rng.uniform(0.5f, 1.5f);
    a.set_valid(5, 19);
    REQUIRE(row_prod(row, a));
    REQUIRE(col_prod(col, a));
    for (int r = 0; r < 5; ++r) {
        float p = 1;
        for (int c = 0; c < 19; ++c) p *= a(r, c);
        CHECK(row(r, 0) == doctest::Approx(p).epsilon(1e-5));
    }
    for (int c = 0; c < 19; ++c) {
        float p = 1;
        for (int r = 0; r < 5; ++r) p *= a(r, c);
        CHECK(col(0, c) == doctest::Approx(p).epsilon(1e-5));
    }
    REQUIRE(row_expand_max(d, a, row));
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 19; ++c) CHECK(d(r, c) == std::fmax(a(r, c), row(r, 0)));
    REQUIRE(col_expand_min(d, a, col));
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 19; ++c) CHECK(d(r, c) == std::fmin(a(r, c), col(0, c)));
    REQUIRE(row_expand_expdif(d, a, row));
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 19; ++c) CHECK(d(r, c) == detail::exp_one(a(r, c) - row(r, 0)));
    REQUIRE(col_expand_expdif(d, a, col));
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 19; ++c) CHECK(d(r, c) == detail::exp_one(a(r, c) - col(0, c)));
    VecTile<std::int32_t, 2, 3> ia;
    VecTile<std::int32_t, 2, 1> ip;
    const std::int32_t iv[] = {2, -3, 4, 100000, 100000, 3};
    for (int i = 0; i < 6; ++i) ia.data[i] = iv[i];
    REQUIRE(row_prod(ip, ia));
    CHECK(ip(0, 0) == -24);
    CHECK(take_error().empty());
}

TEST_CASE("arg reductions: first extreme, NaN counts as the extreme, valid shape") {
    VecTile<float, 3, 5> a;
    const float v[] = {1, 7, 7, -2, 0, /**/ 4, -1, -1, 9, std::numeric_limits<float>::quiet_NaN(), /**/ 5, 5, 5, 5, 5};
    for (int i = 0; i < 15; ++i) a.data[i] = v[i];
    VecTile<std::int32_t, 3, 1> rmax, rmin;
    REQUIRE(row_argmax(rmax, a));
    REQUIRE(row_argmin(rmin, a));
    CHECK(rmax(0, 0) == 1);
    CHECK(rmin(0, 0) == 3);
    CHECK(rmax(1, 0) == 4);  // the NaN
    CHECK(rmin(1, 0) == 4);
    CHECK(rmax(2, 0) == 0);  // all equal: the first
    a.set_valid(2, 4);      // the NaN column is outside
    REQUIRE(row_argmax(rmax, a));
    CHECK(rmax.valid_rows == 2);
    CHECK(rmax(1, 0) == 3);
    VecTile<std::int32_t, 1, 5> cmax, cmin;
    REQUIRE(col_argmax(cmax, a));
    REQUIRE(col_argmin(cmin, a));
    CHECK(cmax.valid_cols == 4);
    CHECK(cmax(0, 0) == 1);
    CHECK(cmin(0, 1) == 1);
    CHECK(cmax(0, 3) == 1);
    CHECK(take_error().empty());
}

TEST_CASE("row_expand_add with a packed block a row; sel/sels with 16/32-bit mask carriers") {
    VecTile<float, 2, 20> a, d;
    VecTile<float, 2, 8> block;
    for (int i = 0; i < 40; ++i) a.data[i] = static_cast<float>(i);
    for (int i = 0; i < 16; ++i) block.data[i] = static_cast<float>(100 * (i + 1));
    REQUIRE(row_expand_add(d, a, block));
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 20; ++c) CHECK(d(r, c) == a(r, c) + block(r, c % 8));
    VecTile<std::int32_t, 2, 1> m32;
    m32.data[0] = 0x00000005;  // bits 0 and 2
    m32.data[1] = static_cast<std::int32_t>(0x80000000u);  // bit 31
    VecTile<float, 2, 20> b;
    b.fill(-1.0f);
    VecTile<float, 2, 20> wide;
    for (auto& v : wide.data) v = 7.0f;
    REQUIRE(sel(d, m32, wide, b));
    for (int c = 0; c < 20; ++c) {
        CHECK(d(0, c) == ((c == 0 || c == 2) ? 7.0f : -1.0f));
        CHECK(d(1, c) == -1.0f);  // bit 31 is past the 20 values
    }
    VecTile<std::uint16_t, 2, 2> m16;
    m16.data[0] = 0x0100;  // byte 0 = 0x00, byte 1 = 0x01: value 8
    m16.data[1] = 0;
    m16.data[2] = 0xFFFF;
    m16.data[3] = 0x000F;  // values 16..19 of row 1
    REQUIRE(sels(d, m16, wide, 0.5f));
    for (int c = 0; c < 20; ++c) {
        CHECK(d(0, c) == (c == 8 ? 7.0f : 0.5f));
        CHECK(d(1, c) == 7.0f);
    }
    CHECK(take_error().empty());
}

TEST_CASE("lrelu and prelu: x > 0 ? x : slope * x") {
    VecTile<float, 1, 4> a, s, d;
    const float av[] = {-2.0f, 0.0f, 3.0f, -0.5f};
    const float sv[] = {0.5f, 2.0f, 9.0f, 3.0f};
    for (int i = 0; i < 4; ++i) {
        a.data[i] = av[i];
        s.data[i] = sv[i];
    }
    REQUIRE(lrelu(d, a, 2.0f));
    CHECK(d.data[0] == -4.0f);
    CHECK(d.data[1] == 0.0f);
    CHECK(d.data[2] == 3.0f);
    CHECK(d.data[3] == -1.0f);
    REQUIRE(prelu(d, a, s));
    CHECK(d.data[0] == -1.0f);
    CHECK(d.data[2] == 3.0f);
    CHECK(d.data[3] == -1.5f);
    CHECK(take_error().empty());
}

TEST_CASE("fmod and fmods keep the sign of the dividend") {
    VecTile<float, 1, 3> a, b, d;
    a.data[0] = 7.5f;
    a.data[1] = -7.5f;
    a.data[2] = 1.0f;
    b.data[0] = -2.0f;
    b.data[1] = 2.0f;
    b.data[2] = 0.25f;
    REQUIRE(fmod(d, a, b));
    CHECK(d.data[0] == 1.5f);
    CHECK(d.data[1] == -1.5f);
    CHECK(d.data[2] == 0.0f);
    REQUIRE(fmods(d, a, 2.0f));
    CHECK(d.data[1] == -1.5f);
    CHECK(take_error().empty());
}
