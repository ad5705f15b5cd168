// The sorting instructions and the mask form of TGATHER, against a naive reference: TSORT32
// (32-element blocks of (value, index) pairs, sorted descending), TMRGSORT's single-source form
// (4 sorted runs merged, repeated into a full sort) and TGATHER<..., MaskPattern> (the kept
// columns of each row, bit for bit: the values or the indices of a sorted pair list). The
// multi-list TMRGSORT is test_pto_merge.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "pto_sort_util.hpp"
#include "pto_test_util.hpp"

using namespace pto;
using namespace ptosort;
using ptotest::fresh;
using ptotest::Rng;
using ptotest::take_error;
using ptotest::VecT;

TEST_CASE("TSORT32 sorts each 32-column block of each row into (value, index) pairs, descending") {
    fresh();
    constexpr int R = 4, C = 96, VR = 3;  // three blocks a row; the last row is outside the valid shape
    VecT<float, R, C> src(VR, C);
    VecT<std::uint32_t, R, C> idx(VR, C);
    VecT<float, R, 2 * C> dst(R, 2 * C);
    TASSIGN(src, 0);
    TASSIGN(idx, 0x1000);
    TASSIGN(dst, 0x2000);
    Rng rng;
    // indices: arbitrary 32-bit patterns (NaN and negative-zero bit patterns among them), distinct
    // within a row, not in column order, so a tie is resolved by the index's value
    const std::uint32_t odd[] = {0xFFFFFFFFu, 0x80000000u, 0x7FC00001u, 0xFF800001u, 0u, 0x7F800000u};
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            src.data()[r * C + c] = c % 5 == 0 ? rng.uniform(-100.0f, 100.0f) : tied_value(rng);
            idx.data()[r * C + c] =
                c < 6 ? odd[(c + r) % 6] : static_cast<std::uint32_t>((c * 37 + r) % 97) * 1000u + 7;
        }
    for (int i = 0; i < R * 2 * C; ++i) dst.data()[i] = -7.0f;
    TSORT32(dst, src, idx);
    barrier();
    CHECK(take_error() == "");
    for (int r = 0; r < R; ++r)
        for (int b = 0; b < C / 32; ++b) {
            std::vector<Pair> want;
            for (int c = 32 * b; c < 32 * b + 32; ++c) want.push_back({src.data()[r * C + c], idx.data()[r * C + c]});
            reference_sort(want);
            for (int j = 0; j < 32; ++j) {
                const Pair got = pair_at(dst, r, 32 * b + j);
                if (r < VR) {
                    CHECK(bits(got.value) == bits(want[j].value));
                    CHECK(got.index == want[j].index);
                } else {
                    CHECK(got.value == -7.0f);  // outside src's valid rows: untouched
                    CHECK(got.index == bits(-7.0f));
                }
            }
        }
    // the ties of each block come out in ascending index order; the odd bit patterns round-trip
    bool saw_tie = false;
    for (int j = 1; j < 32; ++j) {
        const Pair a = pair_at(dst, 0, j - 1), b = pair_at(dst, 0, j);
        CHECK(a.value >= b.value);
        if (a.value == b.value) {
            saw_tie = true;
            CHECK(a.index < b.index);
        }
    }
    CHECK(saw_tie);
    std::vector<std::uint32_t> row0;
    for (int j = 0; j < 32; ++j) row0.push_back(pair_at(dst, 0, j).index);
    for (std::uint32_t u : odd) CHECK(std::count(row0.begin(), row0.end(), u) == 1);
}

TEST_CASE("TSORT32 refuses valid cols that are not whole blocks and an idx of another valid shape") {
    fresh();
    constexpr int R = 2, C = 64;
    VecT<float, R, C> src(R, C);
    VecT<std::uint32_t, R, C> idx(R, C);
    VecT<float, R, 2 * C> dst(R, 2 * C);
    TASSIGN(src, 0);
    TASSIGN(idx, 0x400);
    TASSIGN(dst, 0x800);
    for (int i = 0; i < R * C; ++i) {
        src.data()[i] = static_cast<float>(i);
        idx.data()[i] = static_cast<std::uint32_t>(i);
    }
    for (int i = 0; i < R * 2 * C; ++i) dst.data()[i] = -1.0f;
    src.SetValidShape(R, 48);
    idx.SetValidShape(R, 48);
    TSORT32(dst, src, idx);
    CHECK(take_error() ==
          "TSORT32: src valid cols 48 are not a multiple of 32 (the form without tmp sorts whole 32-element blocks)");
    src.SetValidShape(R, C);
    idx.SetValidShape(1, C);
    TSORT32(dst, src, idx);
    CHECK(take_error() == "TSORT32: idx valid shape [1, 64] differs from src's [2, 64]");
    idx.SetValidShape(R, C);
    dst.SetValidShape(R, C);  // must cover [2, 128]
    TSORT32(dst, src, idx);
    CHECK(take_error() == "TSORT32: destination valid shape [2, 64] does not cover the domain [2, 128]");
    for (int i = 0; i < R * 2 * C; ++i) CHECK(dst.data()[i] == -1.0f);  // nothing written
}

TEST_CASE("TMRGSORT merges TSORT32's four 32-pair runs of 128 values into one descending list") {
    fresh();
    constexpr int N = 128;
    VecT<float, 1, N> src(1, N);
    VecT<std::uint32_t, 1, N> idx(1, N);
    VecT<float, 1, 2 * N> sorted32(1, 2 * N), merged(1, 2 * N);
    TASSIGN(src, 0);
    TASSIGN(idx, 0x200);
    TASSIGN(sorted32, 0x400);
    TASSIGN(merged, 0x800);
    Rng rng;
    std::vector<Pair> want;
    for (int c = 0; c < N; ++c) {
        src.data()[c] = rng.uniform(-1000.0f, 1000.0f);
        idx.data()[c] = static_cast<std::uint32_t>(c);
        want.push_back({src.data()[c], idx.data()[c]});
    }
    reference_sort(want);
    TSORT32(sorted32, src, idx);
    TMRGSORT(merged, sorted32, 64);  // 32 pairs = 64 floats a block, one group of four
    barrier();
    CHECK(take_error() == "");
    for (int j = 0; j < N; ++j) {
        const Pair got = pair_at(merged, 0, j);
        CHECK(got.value == want[j].value);
        CHECK(got.index == want[j].index);
    }
}

TEST_CASE("TMRGSORT in three rounds (blockLen 64, 256, 1024) fully sorts 2048 values; in place too") {
    constexpr int N = 2048;
    Rng rng;
    std::vector<float> values(N);
    for (float& v : values) v = tied_value(rng);  // many ties across blocks: the earlier block wins
    std::vector<Pair> want;
    for (int c = 0; c < N; ++c) want.push_back({values[c], static_cast<std::uint32_t>(c)});
    reference_sort(want);  // indices ascend with the blocks, so "earlier block first" is this order
    for (int in_place = 0; in_place < 2; ++in_place) {
        CAPTURE(in_place);
        fresh();
        VecT<float, 1, N> src(1, N);
        VecT<std::uint32_t, 1, N> idx(1, N);
        VecT<float, 1, 2 * N> a(1, 2 * N), b(1, 2 * N);
        TASSIGN(src, 0);
        TASSIGN(idx, 0x2000);
        TASSIGN(a, 0x4000);
        TASSIGN(b, 0x8000);
        for (int c = 0; c < N; ++c) {
            src.data()[c] = values[c];
            idx.data()[c] = static_cast<std::uint32_t>(c);
        }
        TSORT32(a, src, idx);
        if (in_place) {
            TMRGSORT(a, a, 64);
            TMRGSORT(a, a, 256);
            TMRGSORT(a, a, 1024);
        } else {
            TMRGSORT(b, a, 64);
            TMRGSORT(a, b, 256);
            TMRGSORT(b, a, 1024);
        }
        barrier();
        CHECK(take_error() == "");
        auto& out = in_place ? a : b;
        int bad = 0;
        for (int j = 0; j < N; ++j) {
            const Pair got = pair_at(out, 0, j);
            if (got.value != want[j].value || got.index != want[j].index) ++bad;
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("TMRGSORT merges each group of four blocks separately and refuses the shapes the hardware does") {
    fresh();
    constexpr int C = 512;  // two groups of 4 * 64 floats
    VecT<float, 1, C> src(1, C), dst(1, C);
    TASSIGN(src, 0);
    TASSIGN(dst, 0x800);
    // block k of group g: 32 pairs with values 100 * g + k + 4 * (31 - i) (descending), index g * 1000 + k * 100 + i
    for (int g = 0; g < 2; ++g)
        for (int k = 0; k < 4; ++k)
            for (int i = 0; i < 32; ++i) {
                float* at = src.data() + 256 * g + 64 * k + 2 * i;
                at[0] = static_cast<float>(100 * g + k + 4 * (31 - i));
                const std::uint32_t ix = static_cast<std::uint32_t>(g * 1000 + k * 100 + i);
                std::memcpy(at + 1, &ix, sizeof ix);
            }
    for (int i = 0; i < C; ++i) dst.data()[i] = -1.0f;
    TMRGSORT(dst, src, 64);
    barrier();
    CHECK(take_error() == "");
    for (int g = 0; g < 2; ++g)
        for (int j = 0; j < 128; ++j) {  // value 100g + 127 - j comes from block 3 - j % 4, pair j / 4
            const Pair got = pair_at(dst, 0, 128 * g + j);
            CHECK(got.value == static_cast<float>(100 * g + 127 - j));
            CHECK(got.index == static_cast<std::uint32_t>(g * 1000 + (3 - j % 4) * 100 + j / 4));
        }
    for (int i = 0; i < C; ++i) dst.data()[i] = -1.0f;
    TMRGSORT(dst, src, 32);
    CHECK(take_error() == "TMRGSORT: blockLen 32 is not a nonzero multiple of 64");
    TMRGSORT(dst, src, 0);
    CHECK(take_error() == "TMRGSORT: blockLen 0 is not a nonzero multiple of 64");
    TMRGSORT(dst, src, 256);  // 512 cols are not a whole number of 1024-float groups
    CHECK(take_error() == "TMRGSORT: src valid cols 512 are not 1 to 255 groups of 4 * blockLen = 1024 (blockLen 256)");
    src.SetValidShape(1, 384);
    TMRGSORT(dst, src, 64);
    CHECK(take_error() == "TMRGSORT: src valid cols 384 are not 1 to 255 groups of 4 * blockLen = 256 (blockLen 64)");
    src.SetValidShape(1, C);
    dst.SetValidShape(1, 256);
    TMRGSORT(dst, src, 64);
    CHECK(take_error() == "TMRGSORT: destination valid shape [1, 256] does not cover the domain [1, 512]");
    for (int i = 0; i < C; ++i) CHECK(dst.data()[i] == -1.0f);  // nothing written
}

namespace {

// TGATHER<..., P> on a [3, SC] src with 2 valid rows and `vc` valid cols into a [3, DC] dst:
// row r of dst = the kept columns of src row r, the third row of dst untouched.
template <class T, MaskPattern P, int DC>
void check_mask(int vc, int first, int step) {
    constexpr int SC = 32;
    fresh();
    VecT<T, 3, SC> src(2, vc);
    VecT<T, 3, DC> dst(3, DC);
    TASSIGN(src, 0);
    TASSIGN(dst, 0x200);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < SC; ++c) src.data()[r * SC + c] = static_cast<T>(r * 1000 + c - 500) + static_cast<T>(0.5);
    for (int i = 0; i < 3 * DC; ++i) dst.data()[i] = static_cast<T>(-1);
    TGATHER<decltype(dst), decltype(src), P>(dst, src);
    barrier();
    CHECK(take_error() == "");
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < DC; ++k) {
            const T want = r < 2 ? src.data()[r * SC + first + k * step] : static_cast<T>(-1);
            CHECK(dst.data()[r * DC + k] == want);
        }
}

template <class T>
void check_all_masks() {
    check_mask<T, MaskPattern::P0101, 16>(32, 0, 2);
    check_mask<T, MaskPattern::P1010, 16>(32, 1, 2);
    check_mask<T, MaskPattern::P0001, 8>(32, 0, 4);
    check_mask<T, MaskPattern::P0010, 8>(32, 1, 4);
    check_mask<T, MaskPattern::P0100, 8>(32, 2, 4);
    check_mask<T, MaskPattern::P1000, 8>(32, 3, 4);
    check_mask<T, MaskPattern::P1111, 32>(32, 0, 1);
    check_mask<T, MaskPattern::P1111, 24>(24, 0, 1);
    check_mask<T, MaskPattern::P0101, 16>(31, 0, 2);  // columns 0, 2, ..., 30 of 31
    check_mask<T, MaskPattern::P0010, 8>(30, 1, 4);   // columns 1, 5, ..., 29 of 30
}

}  // namespace

TEST_CASE("TGATHER (mask form) keeps the pattern's columns of each row, for int32 and float") {
    check_all_masks<std::int32_t>();
    check_all_masks<float>();
    // 16-bit elements: P0001 of 64 columns
    fresh();
    VecT<std::int16_t, 1, 64> src(1, 64);
    VecT<std::uint16_t, 1, 16> dst(1, 16);
    TASSIGN(src, 0);
    TASSIGN(dst, 0x100);
    for (int c = 0; c < 64; ++c) src.data()[c] = static_cast<std::int16_t>(-c);
    TGATHER<decltype(dst), decltype(src), MaskPattern::P0001>(dst, src);
    barrier();
    CHECK(take_error() == "");
    for (int k = 0; k < 16; ++k) CHECK(dst.data()[k] == static_cast<std::uint16_t>(-4 * k));
}

TEST_CASE("TGATHER (mask form) splits TSORT32's pairs into values and, bit for bit, indices") {
    fresh();
    VecT<float, 2, 32> src(2, 32);
    VecT<std::uint32_t, 2, 32> idx(2, 32);
    VecT<float, 2, 64> pairs(2, 64);
    VecT<float, 2, 32> values(2, 32);
    VecT<std::uint32_t, 2, 32> indices(2, 32);
    TASSIGN(src, 0);
    TASSIGN(idx, 0x100);
    TASSIGN(pairs, 0x200);
    TASSIGN(values, 0x400);
    TASSIGN(indices, 0x500);
    Rng rng;
    for (int i = 0; i < 64; ++i) {
        src.data()[i] = rng.uniform(-5.0f, 5.0f);
        idx.data()[i] = i == 3 ? 0x7FC00001u : static_cast<std::uint32_t>(1000 + i);  // a NaN's bits survive
    }
    TSORT32(pairs, src, idx);
    TGATHER<decltype(values), decltype(pairs), MaskPattern::P0101>(values, pairs);
    TGATHER<decltype(indices), decltype(pairs), MaskPattern::P1010>(indices, pairs);
    barrier();
    CHECK(take_error() == "");
    for (int r = 0; r < 2; ++r) {
        std::vector<Pair> want;
        for (int c = 0; c < 32; ++c) want.push_back({src.data()[r * 32 + c], idx.data()[r * 32 + c]});
        reference_sort(want);
        for (int j = 0; j < 32; ++j) {
            CHECK(values.data()[r * 32 + j] == want[j].value);
            CHECK(indices.data()[r * 32 + j] == want[j].index);
        }
    }
}

TEST_CASE("TGATHER (mask form) refuses a dst whose Cols are not the kept count or whose valid shape is short") {
    fresh();
    VecT<float, 2, 32> src(2, 32);
    VecT<float, 2, 16> dst(2, 16);
    TASSIGN(src, 0);
    TASSIGN(dst, 0x100);
    for (int i = 0; i < 64; ++i) src.data()[i] = static_cast<float>(i);
    for (int i = 0; i < 32; ++i) dst.data()[i] = -1.0f;
    TGATHER<decltype(dst), decltype(src), MaskPattern::P0001>(dst, src);  // keeps 8 columns, dst has 16
    CHECK(take_error() ==
          "TGATHER: the mask keeps 8 of src's 32 valid cols, dst has 16 cols (they must be equal: dst is written "
          "contiguously)");
    src.SetValidShape(2, 31);
    TGATHER<decltype(dst), decltype(src), MaskPattern::P1010>(dst, src);  // keeps 15 of 31
    CHECK(take_error().find("TGATHER: the mask keeps 15 of src's 31 valid cols, dst has 16 cols") == 0);
    src.SetValidShape(2, 32);
    dst.SetValidShape(1, 16);
    TGATHER<decltype(dst), decltype(src), MaskPattern::P0101>(dst, src);
    CHECK(take_error() == "TGATHER: destination valid shape [1, 16] does not cover the domain [2, 16]");
    dst.SetValidShape(2, 8);  // the hardware writes dst contiguously: its valid cols must be its Cols
    TGATHER<decltype(dst), decltype(src), MaskPattern::P0101>(dst, src);
    CHECK(take_error() == "TGATHER: destination valid shape [2, 8] does not cover the domain [2, 16]");
    for (int i = 0; i < 32; ++i) CHECK(dst.data()[i] == -1.0f);  // nothing written
}
