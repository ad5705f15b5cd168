// NZ (fractal) layout per dtype: blocks of 16 rows x C0 columns with C0 = 32 bytes / element
// size, so 16 for FP16/BF16/INT16, 32 for INT8/UINT8, 8 for FP32/INT32 and 4 for INT64. Each
// case pins C0 as a literal (not derived from sizeof) and checks the documented element order
// ((c / C0) * R + r) * C0 + c % C0 of a compact [.., C/C0, R/16, 16, C0] tensor, round trips
// through tiles with a batch dim, unaligned offsets and partial valid shapes, and that a
// descriptor with another block shape (such as 16 x 16 for a 1- or 4-byte type) is refused.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tile_test_util.hpp"

using namespace simpler::tile;
using simpler::ChipTensor;
using tiletest::compact;
using tiletest::take_error;

namespace {

template <class T, int ExpectedC0>
struct NzCase {
    using type = T;
    static constexpr int c0 = ExpectedC0;
};

using Fp16 = NzCase<simpler::half, 16>;
using Bf16 = NzCase<simpler::bfloat16, 16>;
using Int16 = NzCase<std::int16_t, 16>;
using Int8 = NzCase<std::int8_t, 32>;
using Uint8 = NzCase<std::uint8_t, 32>;
using Fp32 = NzCase<float, 8>;
using Int32 = NzCase<std::int32_t, 8>;
using Int64 = NzCase<std::int64_t, 4>;

// A value that identifies (b, r, c) as well as T's exactly representable range allows.
template <class T>
T value_at(int b, int r, int c) {
    const int v = b * 7919 + r * 131 + c * 7 + 3;
    if constexpr (std::is_same<T, simpler::half>::value) {
        return simpler::half(static_cast<float>(v % 2048));
    } else if constexpr (std::is_same<T, simpler::bfloat16>::value) {
        return simpler::bfloat16(static_cast<float>(v % 256));
    } else if constexpr (sizeof(T) == 1) {
        return static_cast<T>(v % 251);
    } else {
        return static_cast<T>(v);
    }
}

template <class T>
bool same(const T& a, const T& b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Compact element index of logical (r, c) in a [C/C0, R/16, 16, C0] block matrix.
std::size_t nz_index(int R, int C0, int r, int c) {
    return static_cast<std::size_t>(((c / C0) * R + r) * C0 + c % C0);
}

}  // namespace

#define NZ_CASES Fp16, Bf16, Int16, Int8, Uint8, Fp32, Int32, Int64

TEST_CASE_TEMPLATE("NZ block is 16 rows x (32 bytes / element size) columns", Case, NZ_CASES) {
    using T = typename Case::type;
    CHECK(kNzBlockRows == 16);
    CHECK(kNzBlockCols<T> == Case::c0);
    CHECK(kNzBlockCols<T> * static_cast<int>(sizeof(T)) == 32);
}

TEST_CASE_TEMPLATE("NZ element order: logical (r, c) is blocked index [c/C0, r/16, r%16, c%C0]", Case, NZ_CASES) {
    using T = typename Case::type;
    constexpr int C0 = Case::c0, R = 32, C = 3 * C0;
    std::vector<T> ref(R * C);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) ref[nz_index(R, C0, r, c)] = value_at<T>(0, r, c);
    const ChipTensor t = compact(ref.data(), ref.size() * sizeof(T), {C / C0, R / 16, 16, C0});
    CHECK(t.strides[0] == R * C0);
    CHECK(t.strides[1] == 16 * C0);

    VecTile<T, R, C> full;
    REQUIRE(load_nz(full, t, {0, 0}));
    CHECK(take_error().empty());
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) REQUIRE_MESSAGE(same(full(r, c), value_at<T>(0, r, c)), "r=" << r << " c=" << c);

    // store_nz of the same logical matrix writes exactly the reference bytes.
    std::vector<T> out(R * C);
    std::memset(out.data(), 0, out.size() * sizeof(T));
    const ChipTensor u = compact(out.data(), out.size() * sizeof(T), {C / C0, R / 16, 16, C0});
    REQUIRE(store_nz(u, full, {0, 0}));
    CHECK(std::memcmp(out.data(), ref.data(), ref.size() * sizeof(T)) == 0);

    // Unaligned offsets and a partial valid shape crossing row and column block boundaries.
    VecTile<T, 16, 2 * C0> part;
    const T pad = value_at<T>(9, 9, 9);
    part.fill(pad);
    const int r0 = 9, c0 = C0 / 2 + 1, vr = 15, vc = 2 * C0 - 3;
    REQUIRE(load_nz(part, t, {r0, c0}, vr, vc));
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 2 * C0; ++c) {
            const T want = (r < vr && c < vc) ? value_at<T>(0, r0 + r, c0 + c) : pad;
            REQUIRE_MESSAGE(same(part(r, c), want), "r=" << r << " c=" << c);
        }
    CHECK(take_error().empty());
}

TEST_CASE_TEMPLATE("NZ round trip with a batch dim: ND -> NZ by blocks, NZ -> ND by odd windows", Case, NZ_CASES) {
    using T = typename Case::type;
    constexpr int C0 = Case::c0, B = 2, R = 48, C = 2 * C0;
    std::vector<T> src(B * R * C);
    for (int b = 0; b < B; ++b)
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) src[static_cast<std::size_t>((b * R + r) * C + c)] = value_at<T>(b, r, c);
    const ChipTensor nd = compact(src.data(), src.size() * sizeof(T), {B, R, C});
    std::vector<T> nzbuf(B * R * C);
    std::memset(nzbuf.data(), 0, nzbuf.size() * sizeof(T));
    const ChipTensor nz = compact(nzbuf.data(), nzbuf.size() * sizeof(T), {B, C / C0, R / 16, 16, C0});

    VecTile<T, 16, C0> block;
    for (int b = 0; b < B; ++b)
        for (int r = 0; r < R; r += 16)
            for (int c = 0; c < C; c += C0) {
                REQUIRE(load(block, nd, {b, r, c}));
                REQUIRE(store_nz(nz, block, {b, r, c}));
            }
    for (int b = 0; b < B; ++b)
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c)
                REQUIRE(same(nzbuf[static_cast<std::size_t>(b * R * C) + nz_index(R, C0, r, c)], value_at<T>(b, r, c)));

    std::vector<T> back(B * R * C);
    std::memset(back.data(), 0, back.size() * sizeof(T));
    const ChipTensor nd2 = compact(back.data(), back.size() * sizeof(T), {B, R, C});
    VecTile<T, 13, 11> odd;
    for (int b = 0; b < B; ++b)
        for (int r = 0; r < R; r += 13)
            for (int c = 0; c < C; c += 11) {
                const int vr = R - r < 13 ? R - r : 13, vc = C - c < 11 ? C - c : 11;
                REQUIRE(load_nz(odd, nz, {b, r, c}, vr, vc));
                REQUIRE(store(nd2, odd, {b, r, c}));
            }
    CHECK(std::memcmp(back.data(), src.data(), src.size() * sizeof(T)) == 0);
    CHECK(take_error().empty());
}

TEST_CASE_TEMPLATE("NZ descriptors with another block shape are refused and nothing moves", Case, NZ_CASES) {
    using T = typename Case::type;
    constexpr int C0 = Case::c0;
    std::vector<T> buf(32 * 64);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = value_at<T>(0, 0, static_cast<int>(i % 64));
    const std::vector<T> before = buf;
    VecTile<T, 16, 16> tile;
    const T pad = value_at<T>(5, 5, 5);
    tile.fill(pad);
    // Only 16 x C0 is this dtype's block: 16 x 16 for a 1-, 4- or 8-byte type, 16 x 32 otherwise.
    const std::uint32_t other_cols = C0 == 16 ? 32u : 16u;
    const ChipTensor wide = compact(buf.data(), buf.size() * sizeof(T), {1, 2, 16, other_cols});
    CHECK_FALSE(load_nz(tile, wide, {0, 0}));
    const std::string e = take_error();
    CHECK(e.find("load_nz") != std::string::npos);
    CHECK(e.find("[16, " + std::to_string(C0) + "]") != std::string::npos);
    for (int i = 0; i < 16 * 16; ++i) REQUIRE(same(tile.data[i], pad));
    const ChipTensor tall = compact(buf.data(), buf.size() * sizeof(T), {1, 1, 32, static_cast<std::uint32_t>(C0)});
    CHECK_FALSE(store_nz(tall, tile, {0, 0}));
    CHECK(take_error().find("store_nz") != std::string::npos);
    CHECK(std::memcmp(buf.data(), before.data(), buf.size() * sizeof(T)) == 0);
}
