// The instructions that make or pick elements by position, against a naive reference: TTRI and
// TCI (masks and index rows made from a scalar) and the index forms of TGATHER and TSCATTER
// (elements read or written at flat positions of a tile).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "pto_test_util.hpp"

using namespace pto;
using ptotest::fresh;
using ptotest::take_error;
using ptotest::VecT;

namespace {

void barrier() { pipe_barrier(PIPE_ALL); }

}  // namespace

TEST_CASE("TTRI writes the lower or upper triangle of ones over the valid shape only") {
    fresh();
    constexpr int R = 5, C = 16;
    VecT<float, R, C> tf(R, C);
    VecT<std::int16_t, R, C> ti(R, C);
    VecT<half, R, C> th(R, C);
    TASSIGN(tf, 0);
    TASSIGN(ti, 0x200);
    TASSIGN(th, 0x400);
    // every diagonal from past the left edge to past the right one, both sides, three dtypes
    for (int d = -R - 1; d <= C + 1; ++d) {
        for (int upper = 0; upper < 2; ++upper) {
            TEXPANDS(tf, -1.0f);
            barrier();
            tf.SetValidShape(R - 1, C - 3);  // the last row and three columns stay -1
            if (upper)
                TTRI<decltype(tf), 1>(tf, d);
            else
                TTRI<decltype(tf), 0>(tf, d);
            if (upper)
                TTRI<decltype(ti), 1>(ti, d);
            else
                TTRI<decltype(ti), 0>(ti, d);
            if (upper)
                TTRI<decltype(th), 1>(th, d);
            else
                TTRI<decltype(th), 0>(th, d);
            barrier();
            for (int r = 0; r < R; ++r)
                for (int c = 0; c < C; ++c) {
                    const bool in = upper ? c >= r + d : c <= r + d;
                    const float want = (r < R - 1 && c < C - 3) ? (in ? 1.0f : 0.0f) : -1.0f;
                    CHECK(tf.data()[r * C + c] == want);
                    CHECK(ti.data()[r * C + c] == (in ? 1 : 0));
                    CHECK(static_cast<float>(th.data()[r * C + c]) == (in ? 1.0f : 0.0f));
                }
            tf.SetValidShape(R, C);
        }
    }
    CHECK(take_error() == "");
}

TEST_CASE("TCI writes start +- k over the valid columns of a one-row tile, wrapping integers") {
    fresh();
    constexpr int C = 32;
    VecT<std::int32_t, 1, C> ti(1, C);
    VecT<std::uint16_t, 1, C> tu(1, C);
    VecT<std::int16_t, 1, C> ts(1, C);
    TASSIGN(ti, 0);
    TASSIGN(tu, 0x100);
    TASSIGN(ts, 0x200);
    TEXPANDS(ti, -7);
    barrier();
    ti.SetValidShape(1, C - 4);  // the last four columns stay -7
    TCI<decltype(ti), std::int32_t, 0>(ti, -5);
    TCI<decltype(tu), std::uint16_t, 1>(tu, static_cast<std::uint16_t>(3));
    TCI<decltype(ts), std::int16_t, 0>(ts, static_cast<std::int16_t>(32760));
    barrier();
    for (int k = 0; k < C; ++k) {
        CHECK(ti.data()[k] == (k < C - 4 ? -5 + k : -7));
        CHECK(tu.data()[k] == static_cast<std::uint16_t>((3 - k + 65536) % 65536));  // 3, 2, 1, 0, 65535, ...
        CHECK(ts.data()[k] == static_cast<std::int16_t>(k <= 7 ? 32760 + k : 32760 + k - 65536));
    }
    CHECK(take_error() == "");
}

TEST_CASE("TGATHER (index form) reads src at flat positions of its static shape, 0 outside it") {
    fresh();
    constexpr int SR = 4, SC = 8, R = 2, C = 16;
    VecT<float, SR, SC> src(SR, 3);  // a partial valid shape: gather still reads the whole tile
    VecT<std::int32_t, R, C> idx(R, C);
    VecT<float, R, C> dst(R, C);
    VecT<float, 1, 8> tmp(1, 8);
    VecT<std::int16_t, 1, 16> hsrc(1, 16);
    VecT<std::int16_t, 1, 16> hidx(1, 16);
    VecT<std::int16_t, 1, 16> hdst(1, 16);
    TASSIGN(src, 0);
    TASSIGN(idx, 0x100);
    TASSIGN(dst, 0x200);
    TASSIGN(tmp, 0x300);
    TASSIGN(hsrc, 0x340);
    TASSIGN(hidx, 0x360);
    TASSIGN(hdst, 0x380);
    for (int i = 0; i < SR * SC; ++i) src.data()[i] = 0.5f * static_cast<float>(i);
    const std::int32_t picks[R * C] = {0,  31, 5, 8, 9,  -1, 32, 1000, 7,  16, 17, 2,  3,          4, 30, 29,
                                       24, 25, 0, 0, 13, 12, 11, 10,   -32, 33, 6,  19, INT32_MIN, 1, 2,  3};
    for (int i = 0; i < R * C; ++i) idx.data()[i] = picks[i];
    for (int i = 0; i < R * C; ++i) dst.data()[i] = -9.0f;
    dst.SetValidShape(R, C - 2);  // the last two columns of each row stay -9
    for (int i = 0; i < 16; ++i) {
        hsrc.data()[i] = static_cast<std::int16_t>(100 + i);
        hidx.data()[i] = static_cast<std::int16_t>(15 - i);
    }
    TGATHER(dst, src, idx, tmp);
    TGATHER(hdst, hsrc, hidx, tmp);
    barrier();
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            const std::int32_t k = picks[r * C + c];
            const float want = c >= C - 2 ? -9.0f : (k >= 0 && k < SR * SC ? 0.5f * static_cast<float>(k) : 0.0f);
            CHECK(dst.data()[r * C + c] == want);
        }
    for (int i = 0; i < 16; ++i) CHECK(hdst.data()[i] == 115 - i);
    CHECK(take_error() == "");
    idx.SetValidShape(1, C);  // indices must cover dst's valid shape
    TGATHER(dst, src, idx, tmp);
    CHECK(take_error().find("TGATHER: indices valid shape [1, 16] does not cover the domain [2, 14]") !=
          std::string::npos);
}

TEST_CASE("TSCATTER (index form) writes src at flat positions of dst, keeps the rest, refuses a position outside") {
    fresh();
    constexpr int DR = 4, DC = 8, R = 2, C = 8;
    VecT<float, DR, DC> dst(DR, 2);  // a partial valid shape: scatter still addresses the whole tile
    VecT<float, R, C> src(R, C);
    VecT<std::int32_t, R, C> idx(R, 4);  // only the first 4 columns of each row scatter
    VecT<std::int16_t, 1, 16> hdst(1, 16);
    VecT<std::int16_t, 1, 16> hsrc(1, 16);
    VecT<std::int16_t, 1, 16> hidx(1, 16);
    TASSIGN(dst, 0);
    TASSIGN(src, 0x80);
    TASSIGN(idx, 0x100);
    TASSIGN(hdst, 0x180);
    TASSIGN(hsrc, 0x1a0);
    TASSIGN(hidx, 0x1c0);
    for (int i = 0; i < DR * DC; ++i) dst.data()[i] = -1.0f;
    for (int i = 0; i < R * C; ++i) src.data()[i] = static_cast<float>(i + 1);
    const std::int32_t at[R * C] = {31, 0, 9, 9, 99, 99, 99, 99, 17, 3, 30, 16, 99, 99, 99, 99};  // 9 twice
    for (int i = 0; i < R * C; ++i) idx.data()[i] = at[i];
    for (int i = 0; i < 16; ++i) {
        hdst.data()[i] = 0;
        hsrc.data()[i] = static_cast<std::int16_t>(100 + i);
        hidx.data()[i] = static_cast<std::int16_t>(15 - i);
    }
    TSCATTER(dst, src, idx);
    TSCATTER(hdst, hsrc, hidx);
    barrier();
    float want[DR * DC];
    for (float& w : want) w = -1.0f;
    want[31] = 1, want[0] = 2, want[9] = 4, want[17] = 9, want[3] = 10, want[30] = 11, want[16] = 12;
    for (int i = 0; i < DR * DC; ++i) CHECK(dst.data()[i] == want[i]);
    for (int i = 0; i < 16; ++i) CHECK(hdst.data()[i] == 115 - i);
    CHECK(take_error() == "");
    idx.data()[1] = 32;      // one past dst's 4 x 8 elements
    src.data()[0] = 77.0f;  // would go to position 31
    TSCATTER(dst, src, idx);
    CHECK(take_error().find("TSCATTER: index 32 at [0, 1] lies outside the destination's 4 x 8 elements") !=
          std::string::npos);
    CHECK(dst.data()[31] == 1.0f);  // nothing written, not even the positions before the bad one
}
