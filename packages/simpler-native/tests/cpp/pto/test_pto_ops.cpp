// Each instruction family of our PTO-ISA implementation against a naive reference: bitwise for
// data movement and integer ops, to float rounding (one conversion) for float math.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pto_test_util.hpp"

using namespace pto;
using ptotest::fresh;
using ptotest::Gt;
using ptotest::take_error;
using ptotest::VecT;

namespace {

void barrier() { pipe_barrier(PIPE_ALL); }

template <class TileT, class T>
void load(TileT& t, const T* src) {
    Gt<T, TileT::Rows, TileT::Cols> g(const_cast<T*>(src));
    TLOAD(t, g);
    barrier();
}

template <class TileT, class T>
void store(T* dst, TileT& t) {
    Gt<T, TileT::Rows, TileT::Cols> g(dst);
    TSTORE(g, t);
    barrier();
}

}  // namespace

TEST_CASE("TLOAD/TSTORE move bits through a strided window and touch only the valid region") {
    fresh();
    std::vector<float> gm(8 * 40);
    for (std::size_t i = 0; i < gm.size(); ++i) gm[i] = static_cast<float>(i) * 0.5f - 3.0f;
    // A [5, 6] window at (2, 3) of an [8, 40] row-major tensor.
    using W = GlobalTensor<float, Shape<1, 1, 1, DYNAMIC, DYNAMIC>, Stride<1, 1, 1, DYNAMIC, 1>>;
    W src(gm.data() + 2 * 40 + 3, Shape<1, 1, 1, DYNAMIC, DYNAMIC>(5, 6), Stride<1, 1, 1, DYNAMIC, 1>(40));
    VecT<float, 8, 16> t(5, 6);
    TASSIGN(t, 0x100);
    t.SetValidShape(8, 16);
    TEXPANDS(t, 99.0f);
    t.SetValidShape(5, 6);
    barrier();
    TLOAD(t, src);
    barrier();
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 16; ++c)
            CHECK(t.data()[r * 16 + c] == ((r < 5 && c < 6) ? gm[(2 + r) * 40 + 3 + c] : 99.0f));
    std::vector<float> out(8 * 40, -1.0f);
    W dst(out.data() + 40 + 1, Shape<1, 1, 1, DYNAMIC, DYNAMIC>(5, 6), Stride<1, 1, 1, DYNAMIC, 1>(40));
    TSTORE(dst, t);
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 40; ++c) {
            const bool in = r >= 1 && r < 6 && c >= 1 && c < 7;
            CHECK(out[r * 40 + c] == (in ? gm[(r + 1) * 40 + c + 2] : -1.0f));
        }
    CHECK(take_error() == "");
}

// Rows of a window laid out one after another (4-D, 16 KiB: one copy in 2 KiB blocks), with a
// gap between two row groups (a copy per row), and dense rows into a wider tile: the same bits.
template <std::int64_t S2, int TC>
void check_window_copy() {
    fresh();
    using G = GlobalTensor<float, Shape<1, 1, 2, 32, 64>, Stride<1, 1, S2, 64, 1>>;
    std::vector<float> gm(S2 + 32 * 64 + 16), out(gm.size(), -1.0f), ref(gm.size(), -1.0f);
    for (std::size_t i = 0; i < gm.size(); ++i) gm[i] = static_cast<float>(i) * 0.25f - 7.0f;
    for (int g = 0; g < 2; ++g)
        for (int i = 0; i < 32 * 64; ++i) ref[g * S2 + i] = gm[g * S2 + i];
    VecT<float, 64, TC> t(64, 64), u(64, 64), d(64, 64);
    TASSIGN(t, 0);
    TASSIGN(u, 0x10000);
    TASSIGN(d, 0x20000);
    G src(gm.data()), dst(out.data());
    TLOAD(t, src);
    TLOAD(u, src);
    barrier();
    TADD(d, t, u);
    barrier();
    for (int r = 0; r < 64; ++r)
        for (int c = 0; c < 64; ++c) {
            const float want = gm[(r / 32) * S2 + (r % 32) * 64 + c];
            CHECK(t.data()[r * TC + c] == want);
            CHECK(d.data()[r * TC + c] == want + want);
        }
    TSTORE(dst, t);
    barrier();
    CHECK(std::memcmp(out.data(), ref.data(), sizeof(float) * out.size()) == 0);
    CHECK(take_error() == "");
}

TEST_CASE("TLOAD/TSTORE of dense, gapped and narrower-than-tile windows move the same bits") {
    check_window_copy<32 * 64, 64>();      // dense, full-width tile: one copy
    check_window_copy<32 * 64 + 8, 64>();  // a gap between the two row groups: per row
    check_window_copy<32 * 64, 80>();      // tile rows wider than the window's: per row
}

TEST_CASE("TLOAD reports a global window that does not match the tile's valid shape") {
    fresh();
    std::vector<float> gm(64);
    Gt<float, 4, 16> g(gm.data());
    VecT<float, 8, 16> t(8, 16);
    TASSIGN(t, 0);
    TLOAD(t, g);
    CHECK(take_error().find("does not match the tile's valid shape [8, 16]") != std::string::npos);
}

TEST_CASE("element-wise float instructions: tile-tile, tile-scalar and unary") {
    fresh();
    constexpr int R = 4, C = 16;
    float a[R * C], b[R * C], o[R * C];
    for (int i = 0; i < R * C; ++i) {
        a[i] = 0.25f * static_cast<float>(i + 1);
        b[i] = 1.5f - 0.125f * static_cast<float>(i);
    }
    VecT<float, R, C> ta(R, C), tb(R, C), td(R, C);
    TASSIGN(ta, 0);
    TASSIGN(tb, 0x1000);
    TASSIGN(td, 0x2000);
    load(ta, a);
    load(tb, b);
    auto run = [&](auto op, auto ref) {
        op();
        barrier();
        store(o, td);
        for (int i = 0; i < R * C; ++i) {
            const float want = ref(a[i], b[i]);
            if (std::isfinite(want))
                CHECK(o[i] == doctest::Approx(want).epsilon(1e-6));
            else
                CHECK(std::isnan(o[i]) == std::isnan(want));  // inf of the right sign, or NaN
            if (std::isinf(want)) CHECK(o[i] == want);
        }
    };
    run([&] { TADD(td, ta, tb); }, [](float x, float y) { return x + y; });
    run([&] { TSUB(td, ta, tb); }, [](float x, float y) { return x - y; });
    run([&] { TMUL(td, ta, tb); }, [](float x, float y) { return x * y; });
    run([&] { TDIV(td, ta, tb); }, [](float x, float y) { return x / y; });
    run([&] { TMAX(td, ta, tb); }, [](float x, float y) { return x > y ? x : y; });
    run([&] { TMIN(td, ta, tb); }, [](float x, float y) { return x < y ? x : y; });
    run([&] { TADDS(td, ta, 2.0f); }, [](float x, float) { return x + 2.0f; });
    run([&] { TSUBS(td, ta, 2.0f); }, [](float x, float) { return x - 2.0f; });
    run([&] { TMULS(td, ta, 2.0f); }, [](float x, float) { return x * 2.0f; });
    run([&] { TDIVS(td, ta, 2.0f); }, [](float x, float) { return x / 2.0f; });
    run([&] { TDIVS(td, 2.0f, ta); }, [](float x, float) { return 2.0f / x; });
    run([&] { TMAXS(td, ta, 2.0f); }, [](float x, float) { return x > 2.0f ? x : 2.0f; });
    run([&] { TMINS(td, ta, 2.0f); }, [](float x, float) { return x < 2.0f ? x : 2.0f; });
    run([&] { TEXP(td, ta); }, [](float x, float) { return std::exp(x); });
    run([&] { TLOG(td, ta); }, [](float x, float) { return std::log(x); });
    run([&] { TSQRT(td, ta); }, [](float x, float) { return std::sqrt(x); });
    run([&] { TRSQRT(td, ta); }, [](float x, float) { return 1.0f / std::sqrt(x); });
    run([&] { TRECIP(td, ta); }, [](float x, float) { return 1.0f / x; });
    run([&] { TABS(td, tb); }, [](float, float y) { return std::fabs(y); });
    run([&] { TNEG(td, tb); }, [](float, float y) { return -y; });
    run([&] { TRELU(td, tb); }, [](float, float y) { return y < 0 ? 0.0f : y; });
    run([&] { TLRELU(td, tb, 0.5f); }, [](float, float y) { return y > 0 ? y : 0.5f * y; });
    run([&] { TPRELU(td, tb, ta, td); }, [](float x, float y) { return y > 0 ? y : x * y; });
    run([&] { TFMOD(td, ta, tb); }, [](float x, float y) { return std::fmod(x, y); });
    run([&] { TFMODS(td, ta, 0.75f); }, [](float x, float) { return std::fmod(x, 0.75f); });
    CHECK(take_error() == "");
}

TEST_CASE("integer arithmetic wraps and bitwise instructions are bit-exact") {
    fresh();
    constexpr int R = 2, C = 8;
    std::int32_t a[R * C], b[R * C], o[R * C];
    for (int i = 0; i < R * C; ++i) {
        a[i] = (i % 2 ? -1 : 1) * (0x7ffffff0 + i);
        b[i] = i % 5;
    }
    VecT<std::int32_t, R, C> ta(R, C), tb(R, C), td(R, C);
    TASSIGN(ta, 0);
    TASSIGN(tb, 0x100);
    TASSIGN(td, 0x200);
    load(ta, a);
    load(tb, b);
    auto run = [&](auto op, auto ref) {
        op();
        barrier();
        store(o, td);
        for (int i = 0; i < R * C; ++i) CHECK(o[i] == ref(a[i], b[i]));
    };
    auto wrap = [](std::int64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); };
    run([&] { TADD(td, ta, ta); }, [&](std::int32_t x, std::int32_t) { return wrap(2ll * x); });
    run([&] { TMUL(td, ta, tb); }, [&](std::int32_t x, std::int32_t y) { return wrap(static_cast<std::int64_t>(x) * y); });
    run([&] { TAND(td, ta, tb); }, [](std::int32_t x, std::int32_t y) { return x & y; });
    run([&] { TOR(td, ta, tb); }, [](std::int32_t x, std::int32_t y) { return x | y; });
    run([&] { TXOR(td, ta, tb, td); }, [](std::int32_t x, std::int32_t y) { return x ^ y; });
    run([&] { TANDS(td, ta, 0xff); }, [](std::int32_t x, std::int32_t) { return x & 0xff; });
    run([&] { TORS(td, ta, 0xff); }, [](std::int32_t x, std::int32_t) { return x | 0xff; });
    run([&] { TXORS(td, ta, 0xff, td); }, [](std::int32_t x, std::int32_t) { return x ^ 0xff; });
    run([&] { TNOT(td, ta); }, [](std::int32_t x, std::int32_t) { return ~x; });
    run([&] { TSHL(td, ta, tb); }, [](std::int32_t x, std::int32_t y) {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << y);
    });
    run([&] { TSHR(td, ta, tb); }, [](std::int32_t x, std::int32_t y) { return x >> y; });
    run([&] { TSHLS(td, ta, 3); }, [](std::int32_t x, std::int32_t) {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << 3);
    });
    run([&] { TSHRS(td, ta, 3); }, [](std::int32_t x, std::int32_t) { return x >> 3; });
    CHECK(take_error() == "");
    TDIVS(td, ta, 0);
    CHECK(take_error().find("TDIVS: integer division by zero") != std::string::npos);
}

TEST_CASE("TCMP/TCMPS pack a bit mask that TSEL/TSELS read") {
    fresh();
    constexpr int R = 2, C = 16;
    float a[R * C], b[R * C], o[R * C];
    for (int i = 0; i < R * C; ++i) {
        a[i] = static_cast<float>(i % 7);
        b[i] = static_cast<float>(i % 5);
    }
    a[3] = NAN;
    VecT<float, R, C> ta(R, C), tb(R, C), td(R, C);
    Tile<TileType::Vec, std::uint8_t, R, 32, BLayout::RowMajor, -1, -1> mask(R, 2);
    TASSIGN(ta, 0);
    TASSIGN(tb, 0x100);
    TASSIGN(td, 0x200);
    TASSIGN(mask, 0x300);
    load(ta, a);
    load(tb, b);
    TCMP(mask, ta, tb, CmpMode::GT);
    barrier();
    TSEL(td, mask, ta, tb, td);
    barrier();
    store(o, td);
    for (int i = 0; i < R * C; ++i) {
        const bool bit = (mask.data()[(i / C) * 32 + (i % C) / 8] >> (i % 8)) & 1;
        CHECK(bit == (a[i] > b[i]));
        CHECK(std::memcmp(&o[i], a[i] > b[i] ? &a[i] : &b[i], 4) == 0);
    }
    TCMPS(mask, ta, 3.0f, CmpMode::LE);
    barrier();
    TSELS(td, mask, ta, td, -1.0f);
    barrier();
    store(o, td);
    for (int i = 0; i < R * C; ++i) {
        if (i == 3) continue;  // NaN <= 3 is false: -1
        CHECK(o[i] == (a[i] <= 3.0f ? a[i] : -1.0f));
    }
    CHECK(o[3] == -1.0f);
    CHECK(take_error() == "");
}

TEST_CASE("row and column reductions, with the tmp operand of the row forms") {
    fresh();
    constexpr int R = 4, C = 16;
    float a[R * C];
    for (int i = 0; i < R * C; ++i) a[i] = static_cast<float>((i * 7) % 11) - 5.0f;
    VecT<float, R, C> ta(R, 13), tmp(R, C);
    Tile<TileType::Vec, float, 8, 1, BLayout::ColMajor, -1, -1> rowv(R, 1);  // [R, 1] valid: Rows * 4 bytes % 32 == 0
    VecT<float, 1, C> colv(1, 13);
    Tile<TileType::Vec, std::int32_t, 8, 1, BLayout::ColMajor, -1, -1> rowi(R, 1);
    VecT<std::int32_t, 1, C> coli(1, 13);
    TASSIGN(ta, 0);
    TASSIGN(tmp, 0x400);
    TASSIGN(rowv, 0x800);
    TASSIGN(colv, 0x900);
    TASSIGN(rowi, 0xa00);
    TASSIGN(coli, 0xb00);
    ta.SetValidShape(R, C);
    load(ta, a);
    ta.SetValidShape(R, 13);  // reduce over the first 13 columns only
    auto row_ref = [&](int r, int k) {
        float s = k == 1 ? 1.0f : (k == 2 ? -INFINITY : (k == 3 ? INFINITY : 0.0f));
        for (int c = 0; c < 13; ++c) {
            const float x = a[r * C + c];
            s = k == 0 ? s + x : k == 1 ? s * x : k == 2 ? (x > s ? x : s) : (x < s ? x : s);
        }
        return s;
    };
    TROWSUM(rowv, ta, tmp);
    barrier();
    for (int r = 0; r < R; ++r) CHECK(rowv.GetValue(r) == doctest::Approx(row_ref(r, 0)));
    barrier();
    TROWPROD(rowv, ta, tmp);
    barrier();
    for (int r = 0; r < R; ++r) CHECK(rowv.GetValue(r) == doctest::Approx(row_ref(r, 1)));
    barrier();
    TROWMAX(rowv, ta, tmp);
    barrier();
    for (int r = 0; r < R; ++r) CHECK(rowv.GetValue(r) == row_ref(r, 2));
    barrier();
    TROWMIN(rowv, ta, tmp);
    barrier();
    for (int r = 0; r < R; ++r) CHECK(rowv.GetValue(r) == row_ref(r, 3));
    TROWARGMAX(rowi, ta, tmp);
    barrier();
    for (int r = 0; r < R; ++r) CHECK(a[r * C + rowi.GetValue(r)] == row_ref(r, 2));
    barrier();
    TROWARGMIN(rowi, ta, tmp);
    barrier();
    for (int r = 0; r < R; ++r) CHECK(a[r * C + rowi.GetValue(r)] == row_ref(r, 3));
    TCOLSUM(colv, ta);
    barrier();
    for (int c = 0; c < 13; ++c) CHECK(colv.GetValue(c) == a[c] + a[C + c] + a[2 * C + c] + a[3 * C + c]);
    barrier();
    TCOLMAX(colv, ta);
    barrier();
    for (int c = 0; c < 13; ++c) CHECK(colv.GetValue(c) == std::fmax(std::fmax(a[c], a[C + c]), std::fmax(a[2 * C + c], a[3 * C + c])));
    barrier();
    TCOLMIN(colv, ta);
    barrier();
    for (int c = 0; c < 13; ++c) CHECK(colv.GetValue(c) == std::fmin(std::fmin(a[c], a[C + c]), std::fmin(a[2 * C + c], a[3 * C + c])));
    barrier();
    TCOLPROD(colv, ta);
    barrier();
    for (int c = 0; c < 13; ++c) CHECK(colv.GetValue(c) == doctest::Approx(a[c] * a[C + c] * a[2 * C + c] * a[3 * C + c]));
    TCOLARGMAX(coli, ta, tmp);
    barrier();
    for (int c = 0; c < 13; ++c) CHECK(a[coli.GetValue(c) * C + c] == std::fmax(std::fmax(a[c], a[C + c]), std::fmax(a[2 * C + c], a[3 * C + c])));
    CHECK(take_error() == "");
    // dst valid rows must equal src's.
    rowv.SetValidShape(2, 1);
    barrier();
    TROWSUM(rowv, ta, tmp);
    CHECK(take_error().find("TROWSUM: destination valid shape [2, 1]") != std::string::npos);
}

TEST_CASE("row and column expands, including the fused forms with either operand full") {
    fresh();
    constexpr int R = 4, C = 8;
    float a[R * C], o[R * C];
    for (int i = 0; i < R * C; ++i) a[i] = 0.5f * static_cast<float>(i) + 1.0f;
    VecT<float, R, C> ta(R, C), td(R, C);
    Tile<TileType::Vec, float, 8, 1, BLayout::ColMajor, -1, -1> rv(R, 1);
    VecT<float, 1, C> cv(1, C);
    TASSIGN(ta, 0);
    TASSIGN(td, 0x200);
    TASSIGN(rv, 0x400);
    TASSIGN(cv, 0x500);
    load(ta, a);
    for (int r = 0; r < R; ++r) rv.SetValue(r, static_cast<float>(r + 2));
    for (int c = 0; c < C; ++c) cv.SetValue(c, static_cast<float>(c + 1));
    barrier();
    auto run = [&](auto op, auto ref) {
        op();
        barrier();
        store(o, td);
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c)
                CHECK(o[r * C + c] == doctest::Approx(ref(a[r * C + c], static_cast<float>(r + 2), static_cast<float>(c + 1))));
    };
    run([&] { TROWEXPAND(td, rv); }, [](float, float s, float) { return s; });
    run([&] { TCOLEXPAND(td, cv); }, [](float, float, float s) { return s; });
    run([&] { TROWEXPANDADD(td, ta, rv); }, [](float x, float s, float) { return x + s; });
    run([&] { TROWEXPANDSUB(td, ta, rv); }, [](float x, float s, float) { return x - s; });
    run([&] { TROWEXPANDSUB(td, rv, ta); }, [](float x, float s, float) { return s - x; });
    run([&] { TROWEXPANDMUL(td, ta, rv); }, [](float x, float s, float) { return x * s; });
    run([&] { TROWEXPANDDIV(td, ta, rv); }, [](float x, float s, float) { return x / s; });
    run([&] { TROWEXPANDMAX(td, ta, rv); }, [](float x, float s, float) { return x > s ? x : s; });
    run([&] { TROWEXPANDMIN(td, ta, rv); }, [](float x, float s, float) { return x < s ? x : s; });
    run([&] { TROWEXPANDEXPDIF(td, ta, rv); }, [](float x, float s, float) { return std::exp(x - s); });
    run([&] { TCOLEXPANDADD(td, ta, cv); }, [](float x, float, float s) { return x + s; });
    run([&] { TCOLEXPANDSUB(td, ta, cv); }, [](float x, float, float s) { return x - s; });
    run([&] { TCOLEXPANDMUL(td, ta, cv); }, [](float x, float, float s) { return x * s; });
    run([&] { TCOLEXPANDDIV(td, ta, cv); }, [](float x, float, float s) { return x / s; });
    run([&] { TCOLEXPANDMAX(td, ta, cv); }, [](float x, float, float s) { return x > s ? x : s; });
    run([&] { TCOLEXPANDMIN(td, ta, cv); }, [](float x, float, float s) { return x < s ? x : s; });
    run([&] { TCOLEXPANDEXPDIF(td, ta, cv); }, [](float x, float, float s) { return std::exp(x - s); });
    CHECK(take_error() == "");
}

TEST_CASE("TCVT rounds by its mode and saturates; TEXPANDS, TFILLPAD and TFILLPAD_EXPAND fill") {
    fresh();
    constexpr int C = 8;
    float a[C] = {1.5f, 2.5f, -1.5f, -2.5f, 3.7f, -3.7f, 1e10f, -1e10f};
    VecT<float, 1, C> ta(1, C);
    VecT<std::int32_t, 1, C> ti(1, C);
    VecT<half, 1, 16> th(1, C);
    TASSIGN(ta, 0);
    TASSIGN(ti, 0x100);
    TASSIGN(th, 0x200);
    load(ta, a);
    auto ints = [&](RoundMode m, std::initializer_list<std::int32_t> want) {
        barrier();  // the previous check's GetValue (PIPE_S) read ti
        TCVT(ti, ta, m);
        barrier();
        int i = 0;
        for (std::int32_t w : want) CHECK(ti.GetValue(i++) == w);
    };
    ints(RoundMode::CAST_RINT, {2, 2, -2, -2, 4, -4, 2147483647, -2147483647 - 1});
    ints(RoundMode::CAST_ROUND, {2, 3, -2, -3, 4, -4, 2147483647, -2147483647 - 1});
    ints(RoundMode::CAST_FLOOR, {1, 2, -2, -3, 3, -4, 2147483647, -2147483647 - 1});
    ints(RoundMode::CAST_CEIL, {2, 3, -1, -2, 4, -3, 2147483647, -2147483647 - 1});
    ints(RoundMode::CAST_TRUNC, {1, 2, -1, -2, 3, -3, 2147483647, -2147483647 - 1});
    TCVT(th, ta, RoundMode::CAST_RINT);
    barrier();
    CHECK(static_cast<float>(th.GetValue(4)) == static_cast<float>(half(3.7f)));
    CHECK(std::isinf(static_cast<float>(th.GetValue(6))));

    // TEXPANDS fills the valid region only.
    VecT<float, 2, C> tf(2, C);
    TASSIGN(tf, 0x400);
    TEXPANDS(tf, 0.0f);
    tf.SetValidShape(1, 3);
    barrier();
    TEXPANDS(tf, 7.0f);
    barrier();
    for (int i = 0; i < 2 * C; ++i) CHECK(tf.data()[i] == (i < 3 ? 7.0f : 0.0f));
    // TFILLPAD: the valid region of src, dst's PadVal elsewhere.
    Tile<TileType::Vec, float, 2, C, BLayout::RowMajor, -1, -1, SLayout::NoneBox, 512, PadValue::Min> tp(2, C);
    TASSIGN(tp, 0x600);
    TFILLPAD(tp, tf);
    barrier();
    for (int i = 0; i < 2 * C; ++i) CHECK(tp.data()[i] == (i < 3 ? 7.0f : -INFINITY));
    // TFILLPAD_EXPAND: the same into a larger tile (4 x 16), padded past src's static shape too.
    Tile<TileType::Vec, float, 4, 2 * C, BLayout::RowMajor, -1, -1, SLayout::NoneBox, 512, PadValue::Max> te(4, 2 * C);
    TASSIGN(te, 0x800);
    TFILLPAD_EXPAND(te, tf);
    barrier();
    for (int i = 0; i < 4 * 2 * C; ++i) CHECK(te.data()[i] == (i < 3 ? 7.0f : INFINITY));
    CHECK(take_error() == "");
}

TEST_CASE("TREM / TREMS take the divisor's sign (torch.remainder), integer division by zero reported") {
    fresh();
    VecT<std::int32_t, 1, 8> a(1, 8), b(1, 8), d(1, 8), tmp(1, 8);
    VecT<float, 1, 8> fa(1, 8), fb(1, 8), fd(1, 8);
    TASSIGN(a, 0);
    TASSIGN(b, 0x20);
    TASSIGN(d, 0x40);
    TASSIGN(tmp, 0x60);
    TASSIGN(fa, 0x80);
    TASSIGN(fb, 0xa0);
    TASSIGN(fd, 0xc0);
    const std::int32_t x[8] = {7, -7, 7, -7, 6, 0, INT32_MIN, -1};
    const std::int32_t y[8] = {3, 3, -3, -3, -3, -5, -1, 4};
    const std::int32_t want[8] = {1, 2, -2, -1, 0, 0, 0, 3};
    const float fx[8] = {5.5f, -5.5f, 5.5f, -5.5f, 4.0f, 0.25f, -0.25f, 1e-3f};
    const float fy[8] = {2.0f, 2.0f, -2.0f, -2.0f, -2.0f, 1.0f, 1.0f, -1.0f};
    const float fwant[8] = {1.5f, 0.5f, -0.5f, -1.5f, 0.0f, 0.25f, 0.75f, 1e-3f - 1.0f};
    for (int i = 0; i < 8; ++i) {
        a.data()[i] = x[i];
        b.data()[i] = y[i];
        fa.data()[i] = fx[i];
        fb.data()[i] = fy[i];
    }
    TREM(d, a, b, tmp);
    TREM(fd, fa, fb, tmp);
    barrier();
    for (int i = 0; i < 8; ++i) {
        CHECK(d.data()[i] == want[i]);
        CHECK(fd.data()[i] == fwant[i]);
    }
    TREMS(d, a, -3, tmp);
    barrier();
    for (int i = 0; i < 8; ++i) {
        const std::int64_t m = ((static_cast<std::int64_t>(x[i]) % -3) + -3) % -3;  // Python's x % -3
        CHECK(d.data()[i] == m);
    }
    CHECK(take_error() == "");
    TREMS(d, a, 0, tmp);
    CHECK(take_error().find("TREMS: integer division by zero") != std::string::npos);
}

TEST_CASE("TPARTADD/MUL/MAX/MIN combine sources of different valid shapes: the op, the one source, or 0") {
    fresh();
    constexpr int R = 4, C = 8;
    VecT<float, R, C> a(R, 5), b(2, C), d(R, C);
    VecT<std::int16_t, R, 16> ia(3, 16), ib(R, 4), id(R, 16);
    TASSIGN(a, 0);
    TASSIGN(b, 0x80);
    TASSIGN(d, 0x100);
    TASSIGN(ia, 0x180);
    TASSIGN(ib, 0x200);
    TASSIGN(id, 0x280);
    for (int i = 0; i < R * C; ++i) {
        a.data()[i] = static_cast<float>(i + 1);
        b.data()[i] = static_cast<float>(-2 * i);
    }
    for (int i = 0; i < R * 16; ++i) {
        ia.data()[i] = static_cast<std::int16_t>(i % 7);
        ib.data()[i] = static_cast<std::int16_t>(5 - i % 11);
    }
    auto check = [&](auto op, auto f) {
        op();
        barrier();
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) {
                const bool in_a = c < 5, in_b = r < 2;
                const float x = a.data()[r * C + c], y = b.data()[r * C + c];
                CHECK(d.data()[r * C + c] == (in_a && in_b ? f(x, y) : in_a ? x : in_b ? y : 0.0f));
            }
    };
    check([&] { TPARTADD(d, a, b); }, [](float x, float y) { return x + y; });
    check([&] { TPARTMUL(d, a, b); }, [](float x, float y) { return x * y; });
    check([&] { TPARTMAX(d, a, b); }, [](float x, float y) { return std::max(x, y); });
    check([&] { TPARTMIN(d, a, b); }, [](float x, float y) { return std::min(x, y); });
    TPARTMAX(id, ia, ib);
    barrier();
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < 16; ++c) {
            const bool in_a = r < 3, in_b = c < 4;
            const int x = ia.data()[r * 16 + c], y = ib.data()[r * 16 + c];
            CHECK(id.data()[r * 16 + c] == (in_a && in_b ? std::max(x, y) : in_a ? x : in_b ? y : 0));
        }
    CHECK(take_error() == "");
}

TEST_CASE("TADDC/TSUBC/TADDSC/TSUBSC: src0 +- src1 (or a scalar) + src2, left to right") {
    fresh();
    VecT<float, 1, 8> a(1, 8), b(1, 8), c(1, 8), d(1, 8);
    VecT<std::int32_t, 1, 8> ia(1, 8), ib(1, 8), ic(1, 8), id(1, 8);
    TASSIGN(a, 0);
    TASSIGN(b, 0x20);
    TASSIGN(c, 0x40);
    TASSIGN(d, 0x60);
    TASSIGN(ia, 0x80);
    TASSIGN(ib, 0xa0);
    TASSIGN(ic, 0xc0);
    TASSIGN(id, 0xe0);
    for (int i = 0; i < 8; ++i) {
        a.data()[i] = 1.5f * i;
        b.data()[i] = 0.25f - i;
        c.data()[i] = 4.0f;
        ia.data()[i] = i == 0 ? INT32_MAX : 10 * i;
        ib.data()[i] = 3 - i;
        ic.data()[i] = i == 0 ? 1 : -7;
    }
    auto check = [&](auto op, auto f, auto fi, auto opi) {
        op();
        opi();
        barrier();
        for (int i = 0; i < 8; ++i) {
            CHECK(d.data()[i] == f(a.data()[i], b.data()[i], c.data()[i]));
            CHECK(id.data()[i] == fi(ia.data()[i], ib.data()[i], ic.data()[i]));
        }
    };
    // integers wrap (INT32_MAX + 3 + 1 in lane 0): compared through uint32
    auto wrap = [](std::int64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); };
    check([&] { TADDC(d, a, b, c); }, [](float x, float y, float z) { return x + y + z; },
          [&](std::int64_t x, std::int64_t y, std::int64_t z) { return wrap(x + y + z); }, [&] { TADDC(id, ia, ib, ic); });
    check([&] { TSUBC(d, a, b, c); }, [](float x, float y, float z) { return x - y + z; },
          [&](std::int64_t x, std::int64_t y, std::int64_t z) { return wrap(x - y + z); }, [&] { TSUBC(id, ia, ib, ic); });
    check([&] { TADDSC(d, a, 2.5f, c); }, [](float x, float, float z) { return x + 2.5f + z; },
          [&](std::int64_t x, std::int64_t, std::int64_t z) { return wrap(x + 5 + z); }, [&] { TADDSC(id, ia, 5, ic); });
    check([&] { TSUBSC(d, a, 2.5f, c); }, [](float x, float, float z) { return x - 2.5f + z; },
          [&](std::int64_t x, std::int64_t, std::int64_t z) { return wrap(x - 5 + z); }, [&] { TSUBSC(id, ia, 5, ic); });
    CHECK(take_error() == "");
}

TEST_CASE("the cube path: TLOAD to Mat, TMOV/TEXTRACT to Left/Right, TMATMUL(_ACC), TMOV Acc->Vec, TSTORE from Acc") {
    fresh();
    constexpr int M = 16, K = 16, N = 16;
    float a[M * K], b[K * N], o[M * N];
    for (int i = 0; i < M * K; ++i) a[i] = static_cast<float>((i % 13) - 6) * 0.25f;
    for (int i = 0; i < K * N; ++i) b[i] = static_cast<float>((i % 7) - 3) * 0.5f;
    Tile<TileType::Mat, float, M, K, BLayout::ColMajor, M, K, SLayout::RowMajor> ma;
    Tile<TileType::Mat, float, K, N, BLayout::ColMajor, K, N, SLayout::RowMajor> mb;
    TileLeft<float, M, K> la;
    TileRight<float, K, N> rb;
    TileAcc<float, M, N> acc;
    VecT<float, M, N> out(M, N);
    TASSIGN(ma, 0);
    TASSIGN(mb, 0x400);
    TASSIGN(la, 0);
    TASSIGN(rb, 0);
    TASSIGN(acc, 0);
    TASSIGN(out, 0);
    Gt<float, M, K> ga(a);
    Gt<float, K, N> gb(b);
    TLOAD(ma, ga);
    TLOAD(mb, gb);
    ptotest::sync(PIPE_MTE2, PIPE_MTE1);
    TMOV(la, ma);
    TEXTRACT(rb, mb, 0, 0);
    ptotest::sync(PIPE_MTE1, PIPE_M);
    TMATMUL(acc, la, rb);
    TMATMUL_ACC(acc, la, rb);
    ptotest::sync(PIPE_M, PIPE_FIX);
    TMOV(out, acc);
    ptotest::sync(PIPE_FIX, PIPE_MTE3);
    Gt<float, M, N> go(o);
    TSTORE(go, out);
    CHECK(take_error() == "");
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float s = 0;
            for (int k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
            CHECK(o[i * N + j] == doctest::Approx(2 * s));
        }
    // TSTORE straight from Acc into half global memory (converted on the FIX pipe).
    std::vector<half> oh(M * N);
    Gt<half, M, N> gh(oh.data());
    TSTORE(gh, acc);
    CHECK(take_error() == "");
    CHECK(static_cast<float>(oh[5]) == static_cast<float>(half(o[5])));
}

TEST_CASE("TEXTRACT/TINSERT windows, TTRANS, TRESHAPE and TCONCAT are bit-exact") {
    fresh();
    constexpr int R = 8, C = 8;
    float a[R * C];
    for (int i = 0; i < R * C; ++i) a[i] = static_cast<float>(i);
    VecT<float, R, C> ta(R, C), tt(R, C), tw(R, C);
    VecT<float, 4, 8> small(3, 5);
    TASSIGN(ta, 0);
    TASSIGN(tt, 0x100);
    TASSIGN(tw, 0x200);
    TASSIGN(small, 0x300);
    load(ta, a);
    TEXTRACT(small, ta, 2, 1);
    barrier();
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 5; ++c) CHECK(small.data()[r * 8 + c] == a[(2 + r) * C + 1 + c]);
    TEXPANDS(tw, -1.0f);
    barrier();
    TINSERT(tw, small, 4, 3);
    barrier();
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            const bool in = r >= 4 && r < 7 && c >= 3 && c < 8;
            CHECK(tw.data()[r * C + c] == (in ? a[(r - 2) * C + c - 2] : -1.0f));
        }
    TTRANS(tt, ta, tw);
    barrier();
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) CHECK(tt.data()[c * C + r] == a[r * C + c]);
    VecT<float, 2, 32> flat(2, 32);
    TASSIGN(flat, 0x100);  // reuses tt's bytes: tt is dead from here on
    TRESHAPE(flat, ta);
    barrier();
    for (int i = 0; i < R * C; ++i) CHECK(flat.data()[i] == a[i]);
    VecT<float, 8, 16> cat(8, 16);
    TASSIGN(cat, 0x400);
    TCONCAT(cat, ta, ta);
    barrier();
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < 16; ++c) CHECK(cat.data()[r * 16 + c] == a[r * C + c % 8]);
    CHECK(take_error() == "");
}

TEST_CASE("TRESHAPE of an NZ Mat tile as ZN over its own bytes is its transpose, on no pipe") {
    fresh();
    // FP32: NZ boxes are 16 x 8, ZN boxes 8 x 16, so the transposed grid is not the same shape.
    constexpr int R = 32, C = 16;
    float a[R * C];
    for (int i = 0; i < R * C; ++i) a[i] = static_cast<float>(i) - 100.0f;
    Tile<TileType::Mat, float, R, C, BLayout::ColMajor, -1, -1, SLayout::RowMajor, 512> nz(R, C);
    Tile<TileType::Mat, float, C, R, BLayout::RowMajor, -1, -1, SLayout::ColMajor, 512> zn(C, R);
    TileRight<float, C, R> right;
    TileLeft<float, R, C> left;
    TASSIGN(nz, 0x200);
    TASSIGN(zn, 0x200);
    TASSIGN(right, 0);
    TASSIGN(left, 0);
    Gt<float, R, C> ga(a);
    TLOAD(nz, ga);
    TRESHAPE(zn, nz);  // a declaration: nothing to order against the load
    ptotest::sync(PIPE_MTE2, PIPE_MTE1);
    TMOV(right, zn);
    CHECK(take_error() == "");
    for (int r = 0; r < C; ++r)
        for (int c = 0; c < R; ++c) CHECK(right.data()[r * R + c] == a[c * C + r]);
    // both tiles stay readable: the same bytes, each in its own layout
    TMOV(left, nz);
    for (int i = 0; i < R * C; ++i) CHECK(left.data()[i] == a[i]);
    TMOV(right, zn);
    for (int r = 0; r < C; ++r)
        for (int c = 0; c < R; ++c) CHECK(right.data()[r * R + c] == a[c * C + r]);
    CHECK(take_error() == "");
    // the ISA's placement: NZ (r, c) in box (c / 8) * (R / 16) + r / 16, at (r % 16) * 8 + c % 8
    CHECK(sim::isa_offset<decltype(nz)>(17, 9) == (1 * 2 + 1) * 128 + 1 * 8 + 1);
    CHECK(sim::isa_offset<decltype(zn)>(9, 17) == sim::isa_offset<decltype(nz)>(17, 9));
    // a square tile: NZ and ZN of one shape are two tiles, not one
    Tile<TileType::Mat, float, C, C, BLayout::ColMajor, -1, -1, SLayout::RowMajor, 512> sq(C, C);
    Tile<TileType::Mat, float, C, C, BLayout::RowMajor, -1, -1, SLayout::ColMajor, 512> sqt(C, C);
    TileRight<float, C, C> rsq;
    TASSIGN(sq, 0x1000);
    TASSIGN(sqt, 0x1000);
    TASSIGN(rsq, 0x1000);
    Gt<float, C, C> gs(a);
    TLOAD(sq, gs);
    TRESHAPE(sqt, sq);
    ptotest::sync(PIPE_MTE2, PIPE_MTE1);
    TMOV(rsq, sqt);
    for (int r = 0; r < C; ++r)
        for (int c = 0; c < C; ++c) CHECK(rsq.data()[r * C + c] == a[c * C + r]);
    CHECK(take_error() == "");
}

TEST_CASE("valid shapes: dst's valid shape is the domain; a smaller source is reported") {
    fresh();
    VecT<float, 4, 8> a(4, 8), b(4, 8), d(4, 8);
    TASSIGN(a, 0);
    TASSIGN(b, 0x100);
    TASSIGN(d, 0x200);
    TEXPANDS(a, 1.0f);
    TEXPANDS(b, 2.0f);
    TEXPANDS(d, 0.0f);
    barrier();
    d.SetValidShape(2, 3);
    TADD(d, a, b);
    barrier();
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 8; ++c) CHECK(d.data()[r * 8 + c] == ((r < 2 && c < 3) ? 3.0f : 0.0f));
    CHECK(d.GetValidRow() == 2);
    CHECK(d.GetValidCol() == 3);
    CHECK(take_error() == "");
    a.SetValidShape(1, 8);
    TADD(d, a, b);
    CHECK(take_error() == "TADD: src0 valid shape [1, 8] does not cover the domain [2, 3]");
    d.SetValidShape(5, 3);
    CHECK(take_error() == "SetValidShape: valid shape [5, 3] exceeds the tile's [4, 8]");
    // Static valid shapes are constants.
    Tile<TileType::Vec, float, 4, 8, BLayout::RowMajor, 2, 8> s;
    CHECK(s.GetValidRow() == 2);
    CHECK(s.GetValidCol() == 8);
}

TEST_CASE("GetValue/SetValue offsets follow the tile's BLayout") {
    fresh();
    Tile<TileType::Vec, float, 8, 4, BLayout::ColMajor, -1, -1> t(8, 4);
    TASSIGN(t, 0);
    for (unsigned i = 0; i < 32; ++i) t.SetValue(i, static_cast<float>(i));
    // Offset c * Rows + r is logical element (r, c).
    CHECK(t.GetValue(1 * 8 + 3) == 11.0f);
    CHECK(t.data()[3 * 4 + 1] == 11.0f);
    CHECK(take_error() == "");
    t.GetValue(32);
    CHECK(take_error() == "GetValue: offset 32 outside the tile's 32 elements");
}

TEST_CASE("TLOAD/TSTORE of an NZ (fractal) global tensor: logical (r, c) at ((c / C0) * R + r) * C0 + c % C0") {
    fresh();
    constexpr int R = 32, C = 16, C0 = 8;  // float: C0 * 4 bytes = 32
    std::vector<float> nz(R * C), back(R * C, -1.0f);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) nz[((c / C0) * R + r) * C0 + c % C0] = static_cast<float>(r * 100 + c);
    using NzShape = Shape<1, C / C0, R / 16, 16, C0>;
    using NzStride = Stride<R * C, R * C0, 16 * C0, C0, 1>;
    GlobalTensor<float, NzShape, NzStride, Layout::NZ> g(nz.data()), gb(back.data());
    Tile<TileType::Mat, float, R, C, BLayout::ColMajor, R, C, SLayout::RowMajor> m;
    TASSIGN(m, 0);
    TLOAD(m, g);
    pipe_barrier(PIPE_ALL);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) CHECK(m.data()[r * C + c] == static_cast<float>(r * 100 + c));
    TSTORE(gb, m);
    CHECK(back == nz);
    CHECK(take_error() == "");
    // A window that is not [1, C / C0, R / 16, 16, C0] is reported.
    GlobalTensor<float, Shape<1, 2, 2, 8, 8>, NzStride, Layout::NZ> bad(nz.data());
    TLOAD(m, bad);
    CHECK(take_error().find("an NZ global tensor is [1, C / C0, R / 16, 16, C0]") != std::string::npos);
}

TEST_CASE("Acc -> Mat moves convert (TMOV, TINSERT) on PIPE_FIX; TMOV Vec -> Vec keeps bits") {
    fresh();
    TileAcc<float, 16, 16> acc;
    Tile<TileType::Mat, half, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor> mh;
    Tile<TileType::Mat, half, 32, 32, BLayout::ColMajor, 32, 32, SLayout::RowMajor> big;
    TASSIGN(acc, 0);
    TASSIGN(mh, 0);
    TASSIGN(big, 0x400);
    for (int i = 0; i < 256; ++i) acc.data()[i] = 1.0f + static_cast<float>(i) / 3.0f;
    // acc was written outside the instructions: the checks see no writer, so no hazard either.
    TMOV(mh, acc);
    for (int i = 0; i < 256; ++i) CHECK(mh.data()[i].bits == half(acc.data()[i]).bits);
    TINSERT(big, acc, 16, 16);
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) CHECK(big.data()[(16 + r) * 32 + 16 + c].bits == half(acc.data()[r * 16 + c]).bits);
    CHECK(take_error() == "");
    // Acc -> Vec runs on PIPE_FIX: a vector instruction reading its result needs FIX -> V.
    VecT<float, 16, 16> v(16, 16), w(16, 16);
    TASSIGN(v, 0);
    TASSIGN(w, 0x400);
    TMOV(v, acc);  // Acc -> Vec on PIPE_FIX
    TMOV(w, v);    // Vec -> Vec on PIPE_V
    CHECK(take_error().find("TMOV reads tile Vec FLOAT32 [16, 16] at UB+0x0 (bytes at UB+0x0) written by TMOV on PIPE_FIX") == 0);
    ptotest::sync(PIPE_FIX, PIPE_V);
    TMOV(w, v);
    CHECK(take_error() == "");
    CHECK(std::memcmp(w.data(), acc.data(), 1024) == 0);
}
