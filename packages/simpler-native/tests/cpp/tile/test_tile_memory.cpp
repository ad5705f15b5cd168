// load/store: ND round trips with offsets, valid shapes, strides and leading dims; NZ with padded
// block strides; rejected accesses reported through the kernel error channel and not performed.
// The NZ element order per dtype is pinned in test_tile_nz.cpp.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tile_test_util.hpp"

using namespace simpler::tile;
using simpler::ChipTensor;
using tiletest::compact;
using tiletest::make_tensor;
using tiletest::take_error;

namespace {

std::vector<float> iota(std::size_t n, float start = 0.0f) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
    return v;
}

}  // namespace

TEST_CASE("ND load reads the last two dims at the offsets; store writes them back") {
    // Tensor [2, 40, 50], compact; tile 16 x 32 with valid [13, 27] at {1, 5, 9}.
    std::vector<float> x = iota(2 * 40 * 50);
    const ChipTensor t = compact(x.data(), x.size() * 4, {2, 40, 50});
    VecTile<float, 16, 32> tile;
    tile.fill(-1.0f);
    REQUIRE(load(tile, t, {1, 5, 9}, 13, 27));
    CHECK(take_error().empty());
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 32; ++c) {
            const float want = (r < 13 && c < 27) ? x[static_cast<std::size_t>(1 * 2000 + (5 + r) * 50 + 9 + c)] : -1.0f;
            REQUIRE_MESSAGE(tile(r, c) == want, "r=" << r << " c=" << c);  // padding untouched
        }
    // Store into a second tensor at other offsets: only the valid region changes.
    std::vector<float> y(2 * 40 * 50, 7.0f);
    const ChipTensor u = compact(y.data(), y.size() * 4, {2, 40, 50});
    REQUIRE(store(u, tile, {0, 20, 3}));
    for (int i = 0; i < 40; ++i)
        for (int j = 0; j < 50; ++j) {
            const bool in = i >= 20 && i < 33 && j >= 3 && j < 30;
            const float want = in ? x[static_cast<std::size_t>(2000 + (5 + i - 20) * 50 + 9 + j - 3)] : 7.0f;
            REQUIRE(y[static_cast<std::size_t>(i * 50 + j)] == want);
        }
    for (std::size_t i = 2000; i < y.size(); ++i) REQUIRE(y[i] == 7.0f);
}

TEST_CASE("ND with start_offset and non-unit strides (a transposed view)") {
    // Base storage [30, 20]; view = its transpose [20, 30] with strides [1, 20], start 0; and a
    // column-sliced view with start_offset.
    std::vector<std::int32_t> x(30 * 20);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>(i * 3 + 1);
    const ChipTensor tview = make_tensor(x.data(), x.size() * 4, {20, 30}, {1, 20});
    VecTile<std::int32_t, 8, 8> tile;
    REQUIRE(load(tile, tview, {4, 10}));
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) REQUIRE(tile(r, c) == x[static_cast<std::size_t>((10 + c) * 20 + 4 + r)]);
    const ChipTensor sliced = make_tensor(x.data(), x.size() * 4, {30, 12}, {20, 1}, 5);
    REQUIRE(load(tile, sliced, {22, 4}));
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) REQUIRE(tile(r, c) == x[static_cast<std::size_t>(5 + (22 + r) * 20 + 4 + c)]);
    // Store through the transposed view and read it back through the base layout.
    VecTile<std::int32_t, 8, 8> v;
    for (int i = 0; i < 64; ++i) v.data[i] = -i;
    REQUIRE(store(tview, v, {0, 0}));
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) REQUIRE(x[static_cast<std::size_t>(c * 20 + r)] == -(r * 8 + c));
    CHECK(take_error().empty());
}

TEST_CASE("ND rank 5 with padded strides: every leading offset selects one index") {
    // Logical [2, 3, 2, 10, 12] inside storage padded to [2, 3, 2, 11, 16] (row stride 16).
    const std::uint32_t st[5] = {3 * 2 * 11 * 16, 2 * 11 * 16, 11 * 16, 16, 1};
    std::vector<std::int32_t> x(2 * st[0]);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>(i);
    const ChipTensor t = make_tensor(x.data(), x.size() * 4, {2, 3, 2, 10, 12}, {st[0], st[1], st[2], st[3], st[4]}, 0);
    VecTile<std::int32_t, 4, 8> tile;
    REQUIRE(load(tile, t, {1, 2, 1, 6, 4}, 4, 8));
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 8; ++c)
            REQUIRE(tile(r, c) == static_cast<std::int32_t>(1 * st[0] + 2 * st[1] + 1 * st[2] + (6 + r) * st[3] + 4 + c));
    CHECK_FALSE(load(tile, t, {2, 0, 0, 0, 0}));  // leading offset past its dim
    CHECK(take_error().find("dim 0") != std::string::npos);
    CHECK_FALSE(load(tile, t, {0, 0, 0, 7, 0}));  // rows 7..10 past 10
    CHECK_FALSE(take_error().empty());
    // A store through the same view touches only its rectangle.
    std::vector<std::int32_t> before = x;
    for (auto& v : tile.data) v = -v;
    REQUIRE(store(t, tile, {0, 1, 0, 2, 3}));
    std::size_t changed = 0;
    for (std::size_t i = 0; i < x.size(); ++i) changed += x[i] != before[i];
    CHECK(changed == 32);
    CHECK(x[st[1] + 2 * st[3] + 3] == -static_cast<std::int32_t>(1 * st[0] + 2 * st[1] + 1 * st[2] + 6 * st[3] + 4));
}

TEST_CASE("NZ with padded block strides") {
    // FP32 logical [32, 32]: blocks of 16 x 8 (C0 = 32 bytes / 4), blocked [4, 2, 16, 8]; each
    // column band padded to 3 row blocks (384 elements), blocks compact.
    std::vector<float> buf(4 * 384, -1.0f);
    const ChipTensor t = make_tensor(buf.data(), buf.size() * 4, {4, 2, 16, 8}, {384, 128, 8, 1});
    VecTile<float, 32, 32> tile;
    for (int r = 0; r < 32; ++r)
        for (int c = 0; c < 32; ++c) tile(r, c) = static_cast<float>(r * 32 + c);
    REQUIRE(store_nz(t, tile));
    for (int r = 0; r < 32; ++r)
        for (int c = 0; c < 32; ++c) REQUIRE(buf[static_cast<std::size_t>((c / 8) * 384 + r * 8 + c % 8)] == r * 32.0f + c);
    for (int band = 0; band < 4; ++band)
        for (int i = 256; i < 384; ++i) REQUIRE(buf[static_cast<std::size_t>(band * 384 + i)] == -1.0f);  // padding untouched
    VecTile<float, 32, 32> back;
    REQUIRE(load_nz(back, t));
    for (int i = 0; i < 32 * 32; ++i) REQUIRE(back.data[i] == tile.data[i]);
}

TEST_CASE("ND 1-D tensor is a single row") {
    std::vector<float> x = iota(100);
    const ChipTensor t = compact(x.data(), x.size() * 4, {100});
    VecTile<float, 1, 64> tile;
    REQUIRE(load(tile, t, {30}, 1, 50));
    for (int c = 0; c < 50; ++c) REQUIRE(tile(0, c) == 30.0f + c);
    VecTile<float, 2, 64> two;
    CHECK_FALSE(load(two, t, {0}, 2, 10));
    CHECK(take_error().find("load") != std::string::npos);
}

TEST_CASE("round trips in every dtype and space") {
    std::vector<simpler::half> hx(64 * 64);
    for (std::size_t i = 0; i < hx.size(); ++i) hx[i] = simpler::half(static_cast<float>(i % 2000) * 0.25f);
    std::vector<simpler::half> hy(64 * 64, simpler::half(0.0f));
    const ChipTensor a = compact(hx.data(), hx.size() * 2, {64, 64});
    const ChipTensor b = compact(hy.data(), hy.size() * 2, {64, 64});
    MatTile<simpler::half, 32, 32> m;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            REQUIRE(load(m, a, {i * 32, j * 32}));
            REQUIRE(store(b, m, {i * 32, j * 32}));
        }
    for (std::size_t i = 0; i < hx.size(); ++i) REQUIRE(hx[i].bits == hy[i].bits);

    std::vector<std::int8_t> cx(48 * 48), cy(48 * 48, 0);
    for (std::size_t i = 0; i < cx.size(); ++i) cx[i] = static_cast<std::int8_t>(i * 7);
    const ChipTensor c = compact(cx.data(), cx.size(), {48, 48});
    const ChipTensor d = compact(cy.data(), cy.size(), {48, 48});
    AccTile<std::int8_t, 48, 48> acc;
    REQUIRE(load(acc, c));
    REQUIRE(store(d, acc));
    CHECK(cx == cy);

    std::vector<std::uint8_t> bx(10 * 10, 1);
    bool bools[100];
    for (int i = 0; i < 100; ++i) bools[i] = (i % 3) == 0;
    const ChipTensor bt = compact(bools, sizeof bools, {10, 10});
    VecTile<bool, 16, 16> bt_tile;
    REQUIRE(load(bt_tile, bt, {}, 10, 10));
    for (int r = 0; r < 10; ++r)
        for (int col = 0; col < 10; ++col) REQUIRE(bt_tile(r, col) == ((r * 10 + col) % 3 == 0));
    CHECK(take_error().empty());
}

TEST_CASE("out-of-bounds and mismatched accesses are reported and not performed") {
    std::vector<float> x = iota(20 * 20);
    const ChipTensor t = compact(x.data(), x.size() * 4, {20, 20});
    VecTile<float, 8, 8> tile;
    tile.fill(-1.0f);

    SUBCASE("rows past the shape") {
        CHECK_FALSE(load(tile, t, {15, 0}));
        CHECK(take_error().find("outside the tensor") != std::string::npos);
        for (float v : tile.data) CHECK(v == -1.0f);
        CHECK_FALSE(store(t, tile, {0, 13}));
        CHECK(take_error().find("store") != std::string::npos);
        for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(x[i] == static_cast<float>(i));
    }
    SUBCASE("negative or huge offset") {
        CHECK_FALSE(load(tile, t, {-1, 0}));
        CHECK_FALSE(take_error().empty());
        CHECK_FALSE(load(tile, t, {0, INT64_MAX - 2}));  // must not overflow while checking
        CHECK(take_error().find("outside the tensor") != std::string::npos);
        CHECK_FALSE(store_nz(t, tile, {INT64_MAX, 0}));
        CHECK_FALSE(take_error().empty());
    }
    SUBCASE("backing smaller than the shape claims") {
        const ChipTensor small = compact(x.data(), 10 * 20 * 4, {20, 20});  // only 10 rows backed
        CHECK(load(tile, small, {2, 2}));  // rows 2..9: inside
        CHECK(take_error().empty());
        tile.fill(-1.0f);
        CHECK_FALSE(load(tile, small, {3, 0}));  // row 10 is past the backing
        const std::string e = take_error();
        CHECK(e.find("backing") != std::string::npos);
        for (float v : tile.data) CHECK(v == -1.0f);
        CHECK_FALSE(store(small, tile, {5, 5}));
        CHECK(take_error().find("backing") != std::string::npos);
        for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(x[i] == static_cast<float>(i));
    }
    SUBCASE("start_offset pushes the region past the backing") {
        const ChipTensor shifted = make_tensor(x.data(), x.size() * 4, {20, 20}, {20, 1}, 1);
        CHECK_FALSE(load(tile, shifted, {12, 12}));
        CHECK(take_error().find("backing") != std::string::npos);
    }
    SUBCASE("dtype, rank and offset count") {
        VecTile<std::int32_t, 8, 8> itile;
        CHECK_FALSE(load(itile, t, {0, 0}));
        CHECK(take_error().find("dtype") != std::string::npos);
        CHECK_FALSE(load(tile, t, {0, 0, 0}));
        CHECK(take_error().find("offsets") != std::string::npos);
        CHECK_FALSE(load_nz(tile, t, {0, 0}));
        CHECK(take_error().find("rank") != std::string::npos);
        ChipTensor bad = t;
        bad.ndims = 6;
        CHECK_FALSE(load(tile, bad));
        CHECK_FALSE(take_error().empty());
        ChipTensor null = t;
        null.buffer.addr = 0;
        CHECK_FALSE(load(tile, null));
        CHECK(take_error().find("null") != std::string::npos);
    }
    SUBCASE("NZ past the logical matrix or with a wrong block") {
        std::vector<float> nzb(32 * 32);
        const ChipTensor nz = compact(nzb.data(), nzb.size() * 4, {4, 2, 16, 8});  // FP32: 16 x 8 blocks
        CHECK_FALSE(load_nz(tile, nz, {28, 0}));
        CHECK_FALSE(take_error().empty());
        const ChipTensor wrong = compact(nzb.data(), nzb.size() * 4, {2, 2, 16, 16});  // 16 x 16 is not FP32's block
        CHECK_FALSE(load_nz(tile, wrong, {0, 0}));
        CHECK(take_error().find("must end in [16, 8] blocks") != std::string::npos);
        const ChipTensor small = compact(nzb.data(), 900 * 4, {4, 2, 16, 8});  // short backing
        CHECK_FALSE(store_nz(small, tile, {20, 20}));
        CHECK(take_error().find("backing") != std::string::npos);
    }
    SUBCASE("index overflow") {
        const ChipTensor huge = make_tensor(x.data(), x.size() * 4, {20, 20}, {20, 1}, ~std::uint64_t{0} - 5);
        CHECK_FALSE(load(tile, huge, {0, 0}));
        CHECK(take_error().find("overflow") != std::string::npos);
    }
    SUBCASE("empty valid region touches nothing") {
        ChipTensor null = t;
        null.buffer.addr = 0;
        CHECK(load(tile, null, {0, 0}, 0, 8));
        CHECK(take_error().empty());
    }
    SUBCASE("valid shape beyond the static shape") {
        CHECK_FALSE(load(tile, t, {0, 0}, 9, 8));
        CHECK(take_error().find("valid shape") != std::string::npos);
        CHECK(tile.valid_rows == 8);
        tile.valid_cols = 9;  // written directly
        CHECK_FALSE(store(t, tile, {0, 0}));
        CHECK(take_error().find("outside its static shape") != std::string::npos);
        for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(x[i] == static_cast<float>(i));
    }
}

TEST_CASE("kernel argument helpers") {
    std::vector<float> x = iota(4);
    ChipTensor t = compact(x.data(), 16, {4});
    CHECK(&tensor_arg(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(&t))) == &t);
    CHECK(scalar_arg<float>(0x3fc00000) == 1.5f);
    CHECK(scalar_arg<std::int32_t>(-7) == -7);
    CHECK(scalar_arg<std::int8_t>(-7) == -7);
    CHECK(scalar_arg<simpler::half>(0x3c00).bits == 0x3c00);
    CHECK(scalar_arg<bool>(2) == true);
}
