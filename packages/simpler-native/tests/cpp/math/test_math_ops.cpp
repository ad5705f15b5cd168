// Vector ops against straightforward per-element references: element-wise (tile-tile and
// tile-scalar), unary, row reductions, row/col expand (plain and fused), reshape, transpose,
// concat, move and cast.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "math_test_util.hpp"

using namespace pto::sim::math;
using namespace mathtest;

namespace {

constexpr int R = 12, C = 40;  // static shape; valid shapes below are smaller

template <class Tl>
void randomize(Tl& t, mathtest::Rng& rng, float lo, float hi) {
    using T = typename Tl::value_type;
    for (auto& v : t.data) {
        if constexpr (is_int_v<T>)
            v = static_cast<T>(static_cast<int>(lo) + rng.below(static_cast<int>(hi - lo) + 1));
        else
            v = static_cast<T>(rng.uniform(lo, hi));
    }
}

// Bit-exact equality for 16-bit floats; NaN equals NaN.
template <class T>
bool same(T a, T b) {
    if constexpr (is_half_like_v<T>) {
        const float x = a, y = b;
        return a.bits == b.bits || (x != x && y != y);
    } else if constexpr (std::is_floating_point<T>::value) {
        return a == b || (a != a && b != b);
    } else {
        return a == b;
    }
}

// dst must equal ref over [vr, vc] and be untouched (sentinel) elsewhere.
template <class Tl, class F>
void check_region(const Tl& dst, int vr, int vc, typename Tl::value_type sentinel, F ref) {
    REQUIRE(dst.valid_rows == vr);
    REQUIRE(dst.valid_cols == vc);
    for (int r = 0; r < Tl::rows; ++r)
        for (int c = 0; c < Tl::cols; ++c) {
            const auto want = (r < vr && c < vc) ? ref(r, c) : sentinel;
            REQUIRE_MESSAGE(same(dst(r, c), want), "r=" << r << " c=" << c << " got=" << static_cast<double>(to_compute(dst(r, c)))
                                                        << " want=" << static_cast<double>(to_compute(want)));
        }
}

template <class T>
void binary_suite(float lo, float hi) {
    using C_ = compute_t<T>;
    mathtest::Rng rng;
    VecTile<T, R, C> a, b, d;
    randomize(a, rng, lo, hi);
    randomize(b, rng, lo, hi);
    if constexpr (is_int_v<T>)
        for (auto& v : b.data)
            if (v == 0) v = T(3);
    a.set_valid(9, 33);
    b.set_valid(9, 33);
    const T sentinel = static_cast<T>(static_cast<C_>(77));
    const C_ s = static_cast<C_>(is_int_v<T> ? 5 : 1.75f);
    auto run = [&](auto op, auto ref, const char* name) {
        INFO(name);
        d.fill(sentinel);
        REQUIRE(op(d, a, b));
        check_region(d, 9, 33, sentinel, [&](int r, int c) { return static_cast<T>(ref(to_compute(a(r, c)), to_compute(b(r, c)))); });
        CHECK(take_error().empty());
    };
    auto run_s = [&](auto op, auto ref, const char* name) {
        INFO(name);
        d.fill(sentinel);
        REQUIRE(op(d, a, s));
        check_region(d, 9, 33, sentinel, [&](int r, int c) { return static_cast<T>(ref(to_compute(a(r, c)), s)); });
    };
    auto add_ref = [](C_ x, C_ y) { return static_cast<C_>(x + y); };
    auto sub_ref = [](C_ x, C_ y) { return static_cast<C_>(x - y); };
    auto mul_ref = [](C_ x, C_ y) { return static_cast<C_>(x * y); };
    auto div_ref = [](C_ x, C_ y) { return static_cast<C_>(x / y); };
    auto max_ref = [](C_ x, C_ y) { return x > y ? x : y; };
    auto min_ref = [](C_ x, C_ y) { return x < y ? x : y; };
    run([](auto& o, auto& x, auto& y) { return add(o, x, y); }, add_ref, "add");
    run([](auto& o, auto& x, auto& y) { return sub(o, x, y); }, sub_ref, "sub");
    run([](auto& o, auto& x, auto& y) { return mul(o, x, y); }, mul_ref, "mul");
    run([](auto& o, auto& x, auto& y) { return div(o, x, y); }, div_ref, "div");
    run([](auto& o, auto& x, auto& y) { return max(o, x, y); }, max_ref, "max");
    run([](auto& o, auto& x, auto& y) { return min(o, x, y); }, min_ref, "min");
    run_s([](auto& o, auto& x, C_ y) { return adds(o, x, y); }, add_ref, "adds");
    run_s([](auto& o, auto& x, C_ y) { return subs(o, x, y); }, sub_ref, "subs");
    run_s([](auto& o, auto& x, C_ y) { return muls(o, x, y); }, mul_ref, "muls");
    run_s([](auto& o, auto& x, C_ y) { return divs(o, x, y); }, div_ref, "divs");
    run_s([](auto& o, auto& x, C_ y) { return maxs(o, x, y); }, max_ref, "maxs");
    run_s([](auto& o, auto& x, C_ y) { return mins(o, x, y); }, min_ref, "mins");
    run_s([](auto& o, auto& x, C_ y) { return add(o, x, y); }, add_ref, "add(scalar)");
    run_s([](auto& o, auto& x, C_ y) { return div(o, x, y); }, div_ref, "div(scalar)");
}

}  // namespace

TEST_CASE("element-wise binary ops match the reference in every arithmetic dtype") {
    SUBCASE("float") { binary_suite<float>(-10.0f, 10.0f); }
    SUBCASE("half") { binary_suite<half>(-10.0f, 10.0f); }
    SUBCASE("bfloat16") { binary_suite<bfloat16>(-10.0f, 10.0f); }
    SUBCASE("int32") { binary_suite<std::int32_t>(-1000.0f, 1000.0f); }
    SUBCASE("int16") { binary_suite<std::int16_t>(-100.0f, 100.0f); }
    SUBCASE("int8") { binary_suite<std::int8_t>(-11.0f, 11.0f); }
}

TEST_CASE("element-wise: in place, shape mismatch, integer edge cases, NaN") {
    VecTile<float, 4, 8> a, b;
    for (int i = 0; i < 32; ++i) {
        a.data[i] = static_cast<float>(i);
        b.data[i] = 2.0f;
    }
    REQUIRE(mul(a, a, b));
    for (int i = 0; i < 32; ++i) CHECK(a.data[i] == 2.0f * i);

    b.set_valid(3, 8);
    VecTile<float, 4, 8> d;
    d.fill(-1.0f);
    CHECK_FALSE(add(d, a, b));
    CHECK(take_error().find("valid shapes differ") != std::string::npos);
    for (float v : d.data) CHECK(v == -1.0f);

    VecTile<float, 2, 8> small;
    CHECK_FALSE(adds(small, a, 1.0f));
    CHECK(take_error().find("does not fit") != std::string::npos);

    VecTile<std::int32_t, 1, 4> i1, i2, io;
    i1(0, 0) = std::numeric_limits<std::int32_t>::max();
    i1(0, 1) = std::numeric_limits<std::int32_t>::min();
    i1(0, 2) = 7;
    i1(0, 3) = -7;
    i2(0, 0) = 1;
    i2(0, 1) = -1;
    i2(0, 2) = 0;
    i2(0, 3) = 2;
    REQUIRE(add(io, i1, i2));
    CHECK(io(0, 0) == std::numeric_limits<std::int32_t>::min());  // wraps
    REQUIRE(div(io, i1, i2));
    CHECK(io(0, 1) == std::numeric_limits<std::int32_t>::min());  // INT_MIN / -1 wraps, no trap
    CHECK(io(0, 2) == 0);                                           // division by zero -> 0 ...
    CHECK(io(0, 3) == -3);                                          // truncates toward zero
    CHECK(take_error().find("division by zero") != std::string::npos);  // ... and reported

    VecTile<float, 1, 3> n1, n2, no;
    n1(0, 0) = NAN;
    n1(0, 1) = 1.0f;
    n1(0, 2) = -0.0f;
    n2(0, 0) = 1.0f;
    n2(0, 1) = NAN;
    n2(0, 2) = 0.0f;
    REQUIRE(max(no, n1, n2));
    CHECK(std::isnan(no(0, 0)));
    CHECK(std::isnan(no(0, 1)));
    REQUIRE(min(no, n1, n2));
    CHECK(std::isnan(no(0, 0)));
    CHECK(std::isnan(no(0, 1)));
}

TEST_CASE("unary ops match the reference") {
    mathtest::Rng rng;
    VecTile<float, R, C> a, d;
    randomize(a, rng, 0.01f, 20.0f);
    a.set_valid(11, 37);
    auto check = [&](auto op, auto ref, const char* name) {
        INFO(name);
        d.fill(-3.0f);
        REQUIRE(op(d, a));
        check_region(d, 11, 37, -3.0f, [&](int r, int c) { return static_cast<float>(ref(a(r, c))); });
    };
    check([](auto& o, auto& x) { return exp(o, x); }, [](float x) { return detail::exp_one(x); }, "exp");  // test_math_exp: its error
    check([](auto& o, auto& x) { return log(o, x); }, [](float x) { return std::log(x); }, "log");
    check([](auto& o, auto& x) { return sqrt(o, x); }, [](float x) { return std::sqrt(x); }, "sqrt");
    check([](auto& o, auto& x) { return rsqrt(o, x); }, [](float x) { return 1.0f / std::sqrt(x); }, "rsqrt");
    check([](auto& o, auto& x) { return recip(o, x); }, [](float x) { return 1.0f / x; }, "recip");
    randomize(a, rng, -20.0f, 20.0f);
    a(0, 0) = -0.0f;
    check([](auto& o, auto& x) { return abs(o, x); }, [](float x) { return std::fabs(x); }, "abs");
    check([](auto& o, auto& x) { return neg(o, x); }, [](float x) { return -x; }, "neg");
    check([](auto& o, auto& x) { return relu(o, x); }, [](float x) { return x < 0 ? 0.0f : x; }, "relu");
    REQUIRE(abs(d, a));
    CHECK_FALSE(std::signbit(d(0, 0)));

    // 16-bit floats: computed in float, rounded once.
    VecTile<half, 4, 16> h, hd;
    for (int i = 0; i < 64; ++i) h.data[i] = half(0.1f + 0.37f * static_cast<float>(i));
    REQUIRE(exp(hd, h));
    for (int i = 0; i < 64; ++i) CHECK(hd.data[i].bits == half(detail::exp_one(static_cast<float>(h.data[i]))).bits);
    REQUIRE(rsqrt(hd, h));
    for (int i = 0; i < 64; ++i) CHECK(hd.data[i].bits == half(1.0f / std::sqrt(static_cast<float>(h.data[i]))).bits);
    VecTile<bfloat16, 4, 16> bf, bd;
    for (int i = 0; i < 64; ++i) bf.data[i] = bfloat16(-3.0f + 0.11f * static_cast<float>(i));
    REQUIRE(relu(bd, bf));
    for (int i = 0; i < 64; ++i) CHECK(static_cast<float>(bd.data[i]) == std::fmax(0.0f, static_cast<float>(bf.data[i])));
    REQUIRE(neg(bd, bf));
    for (int i = 0; i < 64; ++i) CHECK(bd.data[i].bits == (bf.data[i].bits ^ 0x8000u));

    VecTile<std::int8_t, 1, 4> i8, o8;
    i8(0, 0) = -128;
    i8(0, 1) = -5;
    i8(0, 2) = 0;
    i8(0, 3) = 9;
    REQUIRE(abs(o8, i8));
    CHECK(o8(0, 0) == -128);  // wraps
    CHECK(o8(0, 1) == 5);
    REQUIRE(relu(o8, i8));
    CHECK(o8(0, 1) == 0);
    CHECK(o8(0, 3) == 9);
    REQUIRE(neg(o8, i8));
    CHECK(o8(0, 3) == -9);
}

TEST_CASE("row reductions produce a [rows, 1] tile") {
    mathtest::Rng rng;
    VecTile<float, R, C> a;
    randomize(a, rng, -4.0f, 4.0f);
    for (int vc : {0, 1, 7, 8, 9, 33, 40}) {
        CAPTURE(vc);
        a.set_valid(10, vc);
        VecTile<float, 16, 1> s;
        s.fill(99.0f);
        REQUIRE(row_sum(s, a));
        CHECK(s.valid_rows == 10);
        CHECK(s.valid_cols == 1);
        for (int r = 0; r < 10; ++r) {
            double want = 0;
            for (int c = 0; c < vc; ++c) want += a(r, c);
            CHECK(s(r, 0) == doctest::Approx(want).epsilon(1e-5));
        }
        CHECK(s(10, 0) == 99.0f);
        REQUIRE(row_max(s, a));
        for (int r = 0; r < 10; ++r) {
            float want = -INFINITY;
            for (int c = 0; c < vc; ++c) want = std::fmax(want, a(r, c));
            CHECK(s(r, 0) == want);
        }
        REQUIRE(row_min(s, a));
        for (int r = 0; r < 10; ++r) {
            float want = INFINITY;
            for (int c = 0; c < vc; ++c) want = std::fmin(want, a(r, c));
            CHECK(s(r, 0) == want);
        }
    }
    // Exact sums when everything is an integer-valued float.
    VecTile<half, 4, 64> h;
    for (int i = 0; i < 256; ++i) h.data[i] = half(static_cast<float>(i % 17));
    VecTile<float, 4, 1> hs;
    REQUIRE(row_sum(hs, h));
    for (int r = 0; r < 4; ++r) {
        float want = 0;
        for (int c = 0; c < 64; ++c) want += static_cast<float>(h(r, c));
        CHECK(hs(r, 0) == want);
    }
    // int8 summed into int32 without overflow; NaN propagates through max.
    VecTile<std::int8_t, 2, 50> i8;
    for (auto& v : i8.data) v = 100;
    VecTile<std::int32_t, 2, 1> i32;
    REQUIRE(row_sum(i32, i8));
    CHECK(i32(0, 0) == 5000);
    CHECK(i32(1, 0) == 5000);
    VecTile<std::int8_t, 2, 1> sat;
    REQUIRE(row_sum(sat, i8));
    CHECK(sat(0, 0) == 127);  // converted with saturation
    REQUIRE(row_max(i32, i8));
    CHECK(i32(0, 0) == 100);
    a.set_valid(2, 20);
    a(1, 13) = NAN;
    VecTile<float, 2, 1> m;
    REQUIRE(row_max(m, a));
    CHECK(std::isnan(m(1, 0)));
    CHECK_FALSE(std::isnan(m(0, 0)));
    VecTile<float, 1, 1> tiny;
    CHECK_FALSE(row_sum(tiny, a));
    CHECK(take_error().find("does not fit") != std::string::npos);
}

// The order row_max / row_min fold a float row in: eight running partials (partial l takes
// columns l, l + 8, ...), then the partials in order, then the columns after the last whole
// group of eight; max(a, b) is a unless b > a or b is NaN and a is not.
float fold8(const float* x, int n, bool max) {
    auto step = [max](float a, float b) { return ((max ? a > b : a < b) || a != a) ? a : b; };
    const float id = max ? -INFINITY : INFINITY;
    float part[8];
    for (float& p : part) p = id;
    int c = 0;
    for (; c + 8 <= n; c += 8)
        for (int l = 0; l < 8; ++l) part[l] = step(part[l], x[c + l]);
    float acc = id;
    for (float p : part) acc = step(acc, p);
    for (; c < n; ++c) acc = step(acc, x[c]);
    return acc;
}

std::uint32_t bits(float x) {
    std::uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

TEST_CASE("float row max and min return the bits of the eight-partial fold (signed zeros, NaN payloads)") {
    mathtest::Rng rng;
    VecTile<float, 6, 100> a;
    VecTile<float, 6, 1> s;
    for (int trial = 0; trial < 300; ++trial) {
        const int vc = rng.below(101);
        CAPTURE(vc);
        a.set_valid(6, vc);
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < 100; ++c) {
                // Row r: mostly zeros of both signs (r < 2), a few NaNs of other payloads
                // (r 2-3), or plain values with a repeated extreme (r 4-5).
                const int k = rng.below(16);
                float v = rng.uniform(-4.0f, 4.0f);
                if (r < 2) v = k < 8 ? 0.0f : (k < 15 ? -0.0f : v - 8.0f);
                if ((r == 2 || r == 3) && k == 0) {
                    const std::uint32_t nan = 0x7fc00000u | static_cast<std::uint32_t>(rng.below(1 << 20)) |
                                              (rng.below(2) ? 0x80000000u : 0u);
                    std::memcpy(&v, &nan, sizeof v);
                }
                if (r >= 4 && k < 2) v = k == 0 ? 4.5f : -4.5f;
                a(r, c) = v;
            }
        for (bool max : {true, false}) {
            CAPTURE(max);
            REQUIRE(max ? row_max(s, a) : row_min(s, a));
            for (int r = 0; r < 6; ++r) {
                CAPTURE(r);
                CHECK(bits(s(r, 0)) == bits(fold8(a.row(r), vc, max)));
            }
        }
    }
}

TEST_CASE("float row sums are the eight-partial sums bit for bit, whatever the row count") {
    mathtest::Rng rng;
    VecTile<float, 7, 100> a;
    randomize(a, rng, -1000.0f, 1000.0f);
    VecTile<float, 7, 1> s;
    for (int vr : {1, 3, 4, 5, 7}) {
        for (int vc : {0, 5, 8, 31, 64, 100}) {
            CAPTURE(vr);
            CAPTURE(vc);
            a.set_valid(vr, vc);
            REQUIRE(row_sum(s, a));
            for (int r = 0; r < vr; ++r) {
                float part[8] = {};
                int c = 0;
                for (; c + 8 <= vc; c += 8)
                    for (int l = 0; l < 8; ++l) part[l] += a(r, c + l);
                float want = 0.0f;
                for (float p : part) want += p;
                for (; c < vc; ++c) want += a(r, c);
                CHECK(bits(s(r, 0)) == bits(want));
            }
        }
    }
}

TEST_CASE("column reductions produce a [1, cols] tile") {
    mathtest::Rng rng;
    VecTile<float, R, C> a;
    randomize(a, rng, -4.0f, 4.0f);
    for (int vr : {0, 1, 5, 12}) {
        CAPTURE(vr);
        a.set_valid(vr, 37);
        VecTile<float, 1, 48> s;
        s.fill(99.0f);
        REQUIRE(col_sum(s, a));
        CHECK(s.valid_rows == 1);
        CHECK(s.valid_cols == 37);
        for (int c = 0; c < 37; ++c) {
            float want = 0;  // same order: row by row
            for (int r = 0; r < vr; ++r) want += a(r, c);
            CHECK(s(0, c) == want);
        }
        CHECK(s(0, 37) == 99.0f);
        REQUIRE(col_max(s, a));
        for (int c = 0; c < 37; ++c) {
            float want = -INFINITY;
            for (int r = 0; r < vr; ++r) want = std::fmax(want, a(r, c));
            CHECK(s(0, c) == want);
        }
        REQUIRE(col_min(s, a));
        for (int c = 0; c < 37; ++c) {
            float want = INFINITY;
            for (int r = 0; r < vr; ++r) want = std::fmin(want, a(r, c));
            CHECK(s(0, c) == want);
        }
    }
    VecTile<std::int8_t, 40, 3> i8;
    for (auto& v : i8.data) v = -100;
    VecTile<std::int32_t, 1, 3> i32;
    REQUIRE(col_sum(i32, i8));
    CHECK(i32(0, 2) == -4000);
    VecTile<float, 1, 8> narrow;
    CHECK_FALSE(col_sum(narrow, a));
    CHECK(take_error().find("does not fit") != std::string::npos);
}

TEST_CASE("an operand whose valid shape was written out of range is refused, not read") {
    VecTile<float, 4, 8> a, d;
    a.fill(1.0f);
    d.fill(0.0f);
    a.valid_rows = 5;  // written directly, past the static shape
    CHECK_FALSE(adds(d, a, 1.0f));
    CHECK(take_error().find("outside its static shape") != std::string::npos);
    CHECK_FALSE(row_sum(d, a));
    CHECK_FALSE(move(d, a));
    CHECK_FALSE(transpose(d, a));
    a.valid_rows = -1;
    CHECK_FALSE(cast(d, a));
    CHECK_FALSE(take_error().empty());
    for (float v : d.data) CHECK(v == 0.0f);
}

TEST_CASE("row_expand and col_expand, plain and fused") {
    mathtest::Rng rng;
    VecTile<float, R, C> a, d;
    randomize(a, rng, -5.0f, 5.0f);
    a.set_valid(9, 30);
    VecTile<float, 16, 1> rs;
    randomize(rs, rng, 0.5f, 3.0f);
    rs.set_valid(9, 1);
    VecTile<float, 1, 48> cs;
    randomize(cs, rng, 0.5f, 3.0f);
    cs.set_valid(1, 30);

    d.fill(-9.0f);
    d.set_valid(12, 17);
    REQUIRE(row_expand(d, rs));
    check_region(d, 9, 17, -9.0f, [&](int r, int) { return rs(r, 0); });
    d.fill(-9.0f);
    d.set_valid(5, 40);
    REQUIRE(col_expand(d, cs));
    check_region(d, 5, 30, -9.0f, [&](int, int c) { return cs(0, c); });

    auto fused = [&](auto op, auto ref, bool row, const char* name) {
        INFO(name);
        d.fill(-9.0f);
        REQUIRE(op(d, a, row ? static_cast<const void*>(&rs) : static_cast<const void*>(&cs)));
        check_region(d, 9, 30, -9.0f, [&](int r, int c) { return ref(a(r, c), row ? rs(r, 0) : cs(0, c)); });
    };
    using F = VecTile<float, R, C>;
    using RS = VecTile<float, 16, 1>;
    using CS = VecTile<float, 1, 48>;
    fused([](F& o, F& x, const void* s) { return row_expand_add(o, x, *static_cast<const RS*>(s)); }, [](float x, float y) { return x + y; }, true, "row_expand_add");
    fused([](F& o, F& x, const void* s) { return row_expand_sub(o, x, *static_cast<const RS*>(s)); }, [](float x, float y) { return x - y; }, true, "row_expand_sub");
    fused([](F& o, F& x, const void* s) { return row_expand_mul(o, x, *static_cast<const RS*>(s)); }, [](float x, float y) { return x * y; }, true, "row_expand_mul");
    fused([](F& o, F& x, const void* s) { return row_expand_div(o, x, *static_cast<const RS*>(s)); }, [](float x, float y) { return x / y; }, true, "row_expand_div");
    fused([](F& o, F& x, const void* s) { return col_expand_add(o, x, *static_cast<const CS*>(s)); }, [](float x, float y) { return x + y; }, false, "col_expand_add");
    fused([](F& o, F& x, const void* s) { return col_expand_sub(o, x, *static_cast<const CS*>(s)); }, [](float x, float y) { return x - y; }, false, "col_expand_sub");
    fused([](F& o, F& x, const void* s) { return col_expand_mul(o, x, *static_cast<const CS*>(s)); }, [](float x, float y) { return x * y; }, false, "col_expand_mul");
    fused([](F& o, F& x, const void* s) { return col_expand_div(o, x, *static_cast<const CS*>(s)); }, [](float x, float y) { return x / y; }, false, "col_expand_div");

    // half, in place (softmax normalisation pattern)
    VecTile<half, 4, 16> h;
    VecTile<half, 4, 1> hs;
    for (int i = 0; i < 64; ++i) h.data[i] = half(static_cast<float>(i));
    for (int r = 0; r < 4; ++r) hs(r, 0) = half(static_cast<float>(r + 3));
    VecTile<half, 4, 16> orig = h;
    REQUIRE(row_expand_div(h, h, hs));
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 16; ++c)
            CHECK(h(r, c).bits == half(static_cast<float>(orig(r, c)) / static_cast<float>(hs(r, 0))).bits);

    rs.set_valid(8, 1);
    CHECK_FALSE(row_expand_mul(d, a, rs));
    CHECK(take_error().find("broadcast operand") != std::string::npos);
    cs.set_valid(1, 29);
    CHECK_FALSE(col_expand_add(d, a, cs));
    CHECK(take_error().find("broadcast operand") != std::string::npos);
}

TEST_CASE("reshape, transpose, concat, move") {
    VecTile<std::int32_t, 6, 8> a;
    for (int i = 0; i < 48; ++i) a.data[i] = i;
    VecTile<std::int32_t, 12, 4> b;
    REQUIRE(reshape(b, a));
    CHECK(b.valid_rows == 12);
    for (int r = 0; r < 12; ++r)
        for (int c = 0; c < 4; ++c) CHECK(b(r, c) == r * 4 + c);
    a.set_valid(5, 8);
    CHECK_FALSE(reshape(b, a));
    CHECK(take_error().find("fully valid") != std::string::npos);

    a.set_valid(5, 7);
    VecTile<std::int32_t, 8, 8> t;
    t.fill(-1);
    REQUIRE(transpose(t, a));
    check_region(t, 7, 5, -1, [&](int r, int c) { return a(c, r); });
    VecTile<float, 40, 24> big, bigt_src;
    for (int i = 0; i < 40 * 24; ++i) bigt_src.data[i] = static_cast<float>(i);
    VecTile<float, 24, 40> bigt;
    REQUIRE(transpose(bigt, bigt_src));
    REQUIRE(transpose(big, bigt));
    for (int i = 0; i < 40 * 24; ++i) REQUIRE(big.data[i] == static_cast<float>(i));
    VecTile<std::int32_t, 4, 4> too_small;
    CHECK_FALSE(transpose(too_small, a));
    CHECK_FALSE(take_error().empty());

    VecTile<std::int32_t, 5, 3> x;
    VecTile<std::int32_t, 5, 6> y;
    for (int i = 0; i < 15; ++i) x.data[i] = 100 + i;
    for (int i = 0; i < 30; ++i) y.data[i] = 200 + i;
    y.set_valid(5, 4);
    VecTile<std::int32_t, 5, 10> cat;
    cat.fill(-1);
    REQUIRE(concat(cat, x, y));
    check_region(cat, 5, 7, -1, [&](int r, int c) { return c < 3 ? x(r, c) : y(r, c - 3); });
    y.set_valid(4, 4);
    CHECK_FALSE(concat(cat, x, y));
    CHECK(take_error().find("valid rows") != std::string::npos);
    y.set_valid(5, 6);
    VecTile<std::int32_t, 5, 8> narrow;
    CHECK_FALSE(concat(narrow, x, y));
    CHECK_FALSE(take_error().empty());

    MatTile<half, 4, 4> m;
    for (int i = 0; i < 16; ++i) m.data[i] = half(static_cast<float>(i));
    m.set_valid(3, 2);
    LeftTile<half, 8, 8> l;
    l.fill(half(-1.0f));
    REQUIRE(move(l, m));
    check_region(l, 3, 2, half(-1.0f), [&](int r, int c) { return m(r, c); });
}

TEST_CASE("slice, assemble, fillpad") {
    VecTile<std::int32_t, 8, 12> src;
    for (int i = 0; i < 96; ++i) src.data[i] = i;
    src.set_valid(7, 11);
    VecTile<std::int32_t, 4, 4> win;
    REQUIRE(slice(win, src, 3, 7));
    check_region(win, 4, 4, 0, [&](int r, int c) { return src(3 + r, 7 + c); });
    win.fill(-1);
    REQUIRE(slice(win, src, 5, 1, 2, 3));
    check_region(win, 2, 3, -1, [&](int r, int c) { return src(5 + r, 1 + c); });
    CHECK_FALSE(slice(win, src, 4, 8));  // rows 4..7 past valid 7, cols 8..11 past 11
    CHECK(take_error().find("outside the source") != std::string::npos);
    CHECK_FALSE(slice(win, src, -1, 0));
    CHECK_FALSE(take_error().empty());
    CHECK_FALSE(slice(win, src, 0, INT64_MAX - 1));
    CHECK_FALSE(take_error().empty());

    VecTile<std::int32_t, 10, 10> big;
    big.fill(0);
    big.set_valid(9, 9);
    win.fill(5);
    win.set_valid(3, 2);
    REQUIRE(assemble(big, win, 6, 8));
    CHECK(big.valid_rows == 9);  // unchanged
    for (int r = 0; r < 10; ++r)
        for (int c = 0; c < 10; ++c) REQUIRE(big(r, c) == ((r >= 6 && r < 9 && c >= 8) ? 5 : 0));
    CHECK_FALSE(assemble(big, win, 8, 0));
    CHECK(take_error().find("does not fit") != std::string::npos);
    CHECK_FALSE(assemble(big, win, INT64_MAX, 0));
    CHECK_FALSE(take_error().empty());

    VecTile<float, 3, 5> f;
    f.fill(1.0f);
    f.set_valid(2, 3);
    REQUIRE(fillpad(f, Pad::Min));
    CHECK(f.valid_rows == 3);
    CHECK(f.valid_cols == 5);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 5; ++c) REQUIRE(f(r, c) == ((r < 2 && c < 3) ? 1.0f : -INFINITY));
    VecTile<std::int8_t, 2, 2> i8;
    i8.fill(0);
    i8.set_valid(1, 1);
    REQUIRE(fillpad(i8, Pad::Max));
    CHECK(i8(0, 0) == 0);
    CHECK(i8(1, 1) == 127);
    VecTile<half, 2, 20> h;
    h.fill(half(2.0f));
    h.set_valid(1, 17);
    REQUIRE(fillpad(h, half(-3.0f)));
    for (int c = 0; c < 20; ++c) {
        CHECK(static_cast<float>(h(0, c)) == (c < 17 ? 2.0f : -3.0f));
        CHECK(static_cast<float>(h(1, c)) == -3.0f);
    }
    h.set_valid(0, 0);
    REQUIRE(fillpad(h, Pad::Zero));
    for (int i = 0; i < 40; ++i) CHECK(h.data[i].bits == 0);
}

TEST_CASE("cast between FP32, FP16, BF16, INT8 and INT32 matches convert()") {
    mathtest::Rng rng;
    VecTile<float, 8, 32> f;
    for (auto& v : f.data) v = rng.uniform(-300.0f, 300.0f);
    f(0, 0) = NAN;
    f(0, 1) = INFINITY;
    f(0, 2) = -INFINITY;
    f(0, 3) = 2.5f;
    f(0, 4) = -3.5f;
    f(0, 5) = 1e-6f;
    f(0, 6) = 65520.0f;
    f(0, 7) = 1e-7f;
    f.set_valid(7, 30);
    VecTile<half, 8, 32> h;
    VecTile<bfloat16, 8, 32> bf;
    VecTile<std::int8_t, 8, 32> i8;
    VecTile<std::int32_t, 8, 32> i32;
    VecTile<float, 8, 32> back;
    REQUIRE(cast(h, f));
    REQUIRE(cast(bf, f));
    REQUIRE(cast(i8, f));
    REQUIRE(cast(i32, f));
    for (int r = 0; r < 7; ++r)
        for (int c = 0; c < 30; ++c) {
            REQUIRE(h(r, c).bits == half(f(r, c)).bits);
            REQUIRE(bf(r, c).bits == bfloat16(f(r, c)).bits);
            REQUIRE(i8(r, c) == convert<std::int8_t>(f(r, c)));
            REQUIRE(i32(r, c) == convert<std::int32_t>(f(r, c)));
        }
    CHECK(i32(0, 3) == 2);
    CHECK(i32(0, 4) == -4);
    CHECK(i8(0, 1) == 127);
    CHECK(i8(0, 0) == 0);
    CHECK(h(0, 6).bits == 0x7c00);
    REQUIRE(cast(i32, f, RoundMode::Trunc));
    CHECK(i32(0, 4) == -3);
    // Back to float and between 16-bit types, and from integers.
    REQUIRE(cast(back, h));
    for (int r = 0; r < 7; ++r)
        for (int c = 0; c < 30; ++c) REQUIRE(same(back(r, c), static_cast<float>(h(r, c))));
    REQUIRE(cast(bf, h));
    for (int r = 0; r < 7; ++r)
        for (int c = 0; c < 30; ++c) REQUIRE(bf(r, c).bits == bfloat16(static_cast<float>(h(r, c))).bits);
    REQUIRE(cast(h, i32));
    REQUIRE(cast(bf, i8));
    REQUIRE(cast(i8, i32));
    for (int r = 0; r < 7; ++r)
        for (int c = 0; c < 30; ++c) {
            REQUIRE(h(r, c).bits == convert<half>(i32(r, c)).bits);
            REQUIRE(i8(r, c) == convert<std::int8_t>(i32(r, c)));
        }
    // Acc -> Vec cast (fixpipe-style), with a partial valid shape.
    AccTile<float, 4, 4> acc;
    for (int i = 0; i < 16; ++i) acc.data[i] = 0.5f * static_cast<float>(i);
    acc.set_valid(3, 4);
    VecTile<half, 4, 4> hv;
    REQUIRE(cast(hv, acc));
    CHECK(hv.valid_rows == 3);
    for (int i = 0; i < 12; ++i) CHECK(static_cast<float>(hv.data[i]) == 0.5f * static_cast<float>(i));
}
