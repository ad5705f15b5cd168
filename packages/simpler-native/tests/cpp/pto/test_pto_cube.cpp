// The cube instructions with a bias row or a one-row Left operand: TMATMUL_BIAS, TGEMV, TGEMV_ACC
// and TGEMV_BIAS against a naive reference (products summed over k in order, then the bias), the
// Bias tile's buffer (BT) and what the instructions refuse.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pto_test_util.hpp"

using namespace pto;
using ptotest::fresh;
using ptotest::Gt;
using ptotest::take_error;

namespace {

template <class T, int R, int C>
using MatT = Tile<TileType::Mat, T, R, C, BLayout::ColMajor, R, C, SLayout::RowMajor>;
// A one-row operand in Mat: a whole number of boxes (16 rows), one of them valid.
template <class T, int C>
using MatRowT = Tile<TileType::Mat, T, 16, C, BLayout::ColMajor, -1, -1, SLayout::RowMajor>;
template <class T, int C>
using BiasT = Tile<TileType::Bias, T, 1, C, BLayout::RowMajor, -1, -1>;

void barrier() { pipe_barrier(PIPE_ALL); }

// a [m, k] @ b [k, n] (+ bias), each element summed over k in order in the accumulator type.
template <class Acc, class In>
std::vector<Acc> reference(const In* a, const In* b, const Acc* bias, int m, int k, int n) {
    std::vector<Acc> out(static_cast<std::size_t>(m) * n);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            Acc s = 0;
            for (int p = 0; p < k; ++p) s += static_cast<Acc>(a[i * k + p]) * static_cast<Acc>(b[p * n + j]);
            out[static_cast<std::size_t>(i) * n + j] = bias != nullptr ? s + bias[j] : s;
        }
    return out;
}

}  // namespace

TEST_CASE("TMATMUL_BIAS adds the bias row to every row of the product, from Mat through TMOV into Bias") {
    fresh();
    constexpr int M = 16, K = 32, N = 32;
    std::vector<float> a(M * K), b(K * N), bias(N), o(M * N, -1.0f);
    for (int i = 0; i < M * K; ++i) a[i] = static_cast<float>((i % 13) - 6) * 0.25f;
    for (int i = 0; i < K * N; ++i) b[i] = static_cast<float>((i % 7) - 3) * 0.5f;
    for (int j = 0; j < N; ++j) bias[j] = 100.0f + static_cast<float>(j);
    MatT<float, M, K> ma;
    MatT<float, K, N> mb;
    MatRowT<float, N> mbias(1, N);
    TileLeft<float, M, K> la;
    TileRight<float, K, N> rb;
    BiasT<float, N> bt(1, N);
    TileAcc<float, M, N> acc;
    TASSIGN(ma, 0);
    TASSIGN(mb, 0x1000);
    TASSIGN(mbias, 0x3000);
    TASSIGN(la, 0);
    TASSIGN(rb, 0);
    TASSIGN(bt, 0);
    TASSIGN(acc, 0);
    Gt<float, M, K> ga(a.data());
    Gt<float, K, N> gb(b.data());
    Gt<float, 1, N> gbias(bias.data());
    TLOAD(ma, ga);
    TLOAD(mb, gb);
    TLOAD(mbias, gbias);
    barrier();
    TMOV(la, ma);
    TMOV(rb, mb);
    TMOV(bt, mbias);
    barrier();
    TMATMUL_BIAS(acc, la, rb, bt);
    barrier();
    Gt<float, M, N> go(o.data());
    TSTORE(go, acc);
    CHECK(take_error() == "");
    const auto want = reference<float, float>(a.data(), b.data(), bias.data(), M, K, N);
    for (int i = 0; i < M * N; ++i) CHECK(o[i] == want[i]);
}

TEST_CASE("TGEMV, TGEMV_ACC and TGEMV_BIAS multiply a one-row Left tile; int8 accumulates in int32") {
    fresh();
    constexpr int K = 32, N = 32;
    std::int8_t a[K], b[K * N];
    std::int32_t bias[N], o[N];
    for (int i = 0; i < K; ++i) a[i] = static_cast<std::int8_t>((i % 9) - 4);
    for (int i = 0; i < K * N; ++i) b[i] = static_cast<std::int8_t>((i % 11) - 5);
    for (int j = 0; j < N; ++j) bias[j] = 1000 * j - 7;
    MatRowT<std::int8_t, K> ma(1, K);
    MatT<std::int8_t, K, N> mb;
    MatRowT<std::int32_t, N> mbias(1, N);
    TileLeft<std::int8_t, 32, K, -1, -1> la(1, K);  // int8 boxes are 32 rows high
    TileRight<std::int8_t, K, N> rb;
    BiasT<std::int32_t, N> bt(1, N);
    TileAcc<std::int32_t, 16, N, -1, -1> c(1, N);
    TileAcc<std::int32_t, 16, N, -1, -1> d(1, N);
    TASSIGN(ma, 0);
    TASSIGN(mb, 0x400);
    TASSIGN(mbias, 0x1000);
    TASSIGN(la, 0);
    TASSIGN(rb, 0);
    TASSIGN(bt, 0);
    TASSIGN(c, 0);
    TASSIGN(d, 0x2000);
    Gt<std::int8_t, 1, K> ga(a);
    Gt<std::int8_t, K, N> gb(b);
    Gt<std::int32_t, 1, N> gbias(bias);
    TLOAD(ma, ga);
    TLOAD(mb, gb);
    TLOAD(mbias, gbias);
    barrier();
    TMOV(la, ma);
    TMOV(rb, mb);
    TMOV(bt, mbias);
    barrier();
    const auto plain = reference<std::int32_t, std::int8_t>(a, b, nullptr, 1, K, N);
    Gt<std::int32_t, 1, N> go(o);

    TGEMV<AccPhase::Partial>(c, la, rb);
    TGEMV_ACC<AccPhase::Final>(d, c, la, rb);  // d = c + a @ b
    barrier();
    TSTORE(go, d);
    barrier();
    CHECK(take_error() == "");
    for (int j = 0; j < N; ++j) CHECK(o[j] == 2 * plain[j]);

    TGEMV_BIAS(c, la, rb, bt);
    barrier();
    TSTORE(go, c);
    CHECK(take_error() == "");
    for (int j = 0; j < N; ++j) CHECK(o[j] == plain[j] + bias[j]);
}

TEST_CASE("a GEMV of a Left tile with more than one valid row, and a bias narrower than the product, are reported") {
    fresh();
    TileLeft<float, 16, 16> la;
    TileRight<float, 16, 16> rb;
    BiasT<float, 16> bt(1, 16);
    TileAcc<float, 16, 16> c;
    TASSIGN(la, 0);
    TASSIGN(rb, 0);
    TASSIGN(bt, 0);
    TASSIGN(c, 0);
    TGEMV(c, la, rb);
    CHECK(take_error().find("TGEMV: the Left tile has 16 valid rows; a GEMV takes one") != std::string::npos);
    bt.SetValidShape(1, 8);
    TMATMUL_BIAS(c, la, rb, bt);
    CHECK(take_error().find("TMATMUL_BIAS: the bias's valid shape [1, 8] does not cover the product's 16 columns") !=
          std::string::npos);
}

TEST_CASE("a Bias tile lives in the 1 KiB BT buffer of a2a3") {
    fresh();
    BiasT<float, 64> bt(1, 64);  // 256 bytes
    TASSIGN(bt, 768);     // ends at 1 KiB: fits
    CHECK(take_error() == "");
    TASSIGN(bt, 1024);  // past a2a3's 1 KiB
    CHECK(take_error().find("(BT holds 1024 bytes)") != std::string::npos);
}
