// TMRGSORT's multi-list form against a reference merge: 2 to 4 sorted lists merged through tmp,
// cut by dst or by `exhausted`, with the executed counts; its refusals and overlap reports; each
// TMRGSORT form called as generated code calls it.
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

// ---- TMRGSORT's multi-list form (format 2): 2 to 4 sorted lists merged through tmp ------------

namespace {

// Writes the pairs of `l` to t's columns 0.. and makes them its valid cols.
template <class TileT>
void put_list(TileT& t, const std::vector<Pair>& l) {
    for (std::size_t j = 0; j < l.size(); ++j) {
        std::memcpy(t.data() + 2 * j, &l[j].value, sizeof(float));
        std::memcpy(t.data() + 2 * j + 1, &l[j].index, sizeof(std::uint32_t));
    }
    t.SetValidShape(1, static_cast<unsigned>(2 * l.size()));
}

// n pairs sorted descending with many ties (within a list and across lists), indices 1000 * list + i.
std::vector<Pair> sorted_list(Rng& rng, int list, int n) {
    std::vector<Pair> l;
    for (int i = 0; i < n; ++i)
        l.push_back({i % 3 == 0 ? rng.uniform(-6.0f, 6.0f) : tied_value(rng), static_cast<std::uint32_t>(1000 * list + i)});
    reference_sort(l);
    return l;
}

struct Merged {
    std::vector<Pair> pairs;
    std::uint16_t taken[4] = {0, 0, 0, 0};
};

// The reference: the lists concatenated in order and stable-sorted by value, descending (an
// equal value keeps the earlier list's pair first, and each list keeps its order), cut at
// `limit` pairs and, with exhausted, right after the last pair of the first list to run out
// (after the first pair if a list is empty, as the official CPU backend).
Merged reference_merge(const std::vector<std::vector<Pair>>& lists, std::size_t limit, bool exhausted) {
    struct Tagged {
        Pair p;
        int list;
    };
    std::vector<Tagged> all;
    for (std::size_t k = 0; k < lists.size(); ++k)
        for (const Pair& p : lists[k]) all.push_back({p, static_cast<int>(k)});
    std::stable_sort(all.begin(), all.end(), [](const Tagged& a, const Tagged& b) { return a.p.value > b.p.value; });
    std::size_t n = std::min(all.size(), limit);
    if (exhausted) {
        std::size_t stop = all.size();
        for (std::size_t k = 0; k < lists.size(); ++k) {
            std::size_t last = 0;  // one past the position of list k's last pair
            for (std::size_t i = 0; i < all.size(); ++i)
                if (all[i].list == static_cast<int>(k)) last = i + 1;
            stop = std::min(stop, lists[k].empty() ? std::size_t{1} : last);
        }
        n = std::min(n, stop);
    }
    Merged m;
    for (std::size_t i = 0; i < n; ++i) {
        m.pairs.push_back(all[i].p);
        ++m.taken[all[i].list];
    }
    return m;
}

constexpr float kFill = -7.0f;

template <class TileT>
void fill(TileT& t) {
    for (int i = 0; i < TileT::Cols; ++i) t.data()[i] = kFill;
}

// dst and tmp hold `want`'s pairs from column 0 and their old bytes (kFill) after them; the
// executed counts are want's.
template <class DstT, class TmpT>
void check_merged(DstT& dst, TmpT& tmp, const MrgSortExecutedNumList& ex, const Merged& want) {
    const int n = static_cast<int>(want.pairs.size());
    int bad = 0;
    for (int j = 0; j < n; ++j) {
        const Pair d = pair_at(dst, 0, j), t = pair_at(tmp, 0, j);
        if (bits(d.value) != bits(want.pairs[j].value) || d.index != want.pairs[j].index) ++bad;
        if (bits(t.value) != bits(want.pairs[j].value) || t.index != want.pairs[j].index) ++bad;
    }
    CHECK(bad == 0);
    for (int c = 2 * n; c < DstT::Cols; ++c) CHECK(dst.data()[c] == kFill);
    for (int c = 2 * n; c < TmpT::Cols; ++c) CHECK(tmp.data()[c] == kFill);
    CHECK(ex.mrgSortList0 == want.taken[0]);
    CHECK(ex.mrgSortList1 == want.taken[1]);
    CHECK(ex.mrgSortList2 == want.taken[2]);
    CHECK(ex.mrgSortList3 == want.taken[3]);
}

// TMRGSORT of 2 to 4 lists, as generated code calls it.
template <bool E, class D, class T, class S0, class S1>
void merge(D& dst, MrgSortExecutedNumList& ex, T& tmp, S0& s0, S1& s1) {
    TMRGSORT<D, T, S0, S1, E>(dst, ex, tmp, s0, s1);
}
template <bool E, class D, class T, class S0, class S1, class S2>
void merge(D& dst, MrgSortExecutedNumList& ex, T& tmp, S0& s0, S1& s1, S2& s2) {
    TMRGSORT<D, T, S0, S1, S2, E>(dst, ex, tmp, s0, s1, s2);
}
template <bool E, class D, class T, class S0, class S1, class S2, class S3>
void merge(D& dst, MrgSortExecutedNumList& ex, T& tmp, S0& s0, S1& s1, S2& s2, S3& s3) {
    TMRGSORT<D, T, S0, S1, S2, S3, E>(dst, ex, tmp, s0, s1, s2, s3);
}

// Merges random lists of the given lengths (each in a [1, 128] source tile, up to 64 pairs)
// into a [1, 256] dst with `dst_cols` valid cols and a [1, 256] tmp; checks against the reference.
template <bool E>
void check_random_merge(std::vector<int> lengths, int dst_cols, std::uint64_t seed) {
    CAPTURE(E);
    CAPTURE(dst_cols);
    CAPTURE(lengths.size());
    fresh();
    Rng rng;
    rng.s ^= seed;
    VecT<float, 1, 128> s0(1, 128), s1(1, 128), s2(1, 128), s3(1, 128);
    VecT<float, 1, 256> dst(1, dst_cols), tmp(1, 256);
    TASSIGN(s0, 0);
    TASSIGN(s1, 0x200);
    TASSIGN(s2, 0x400);
    TASSIGN(s3, 0x600);
    TASSIGN(dst, 0x800);
    TASSIGN(tmp, 0xC00);
    std::vector<std::vector<Pair>> lists;
    for (std::size_t k = 0; k < lengths.size(); ++k) lists.push_back(sorted_list(rng, static_cast<int>(k), lengths[k]));
    VecT<float, 1, 128>* srcs[4] = {&s0, &s1, &s2, &s3};
    for (std::size_t k = 0; k < lists.size(); ++k) put_list(*srcs[k], lists[k]);
    fill(dst);
    fill(tmp);
    MrgSortExecutedNumList ex{0xBEEF, 0xBEEF, 0xBEEF, 0xBEEF};
    if (lists.size() == 2) merge<E>(dst, ex, tmp, s0, s1);
    if (lists.size() == 3) merge<E>(dst, ex, tmp, s0, s1, s2);
    if (lists.size() == 4) merge<E>(dst, ex, tmp, s0, s1, s2, s3);
    barrier();
    CHECK(take_error() == "");
    check_merged(dst, tmp, ex, reference_merge(lists, static_cast<std::size_t>(dst_cols / 2), E));
}

}  // namespace

TEST_CASE("TMRGSORT (2 to 4 lists) merges TSORT32's and TMRGSORT's sorted lists into one descending list") {
    fresh();
    // list 0: 128 values sorted by TSORT32 and one single-list TMRGSORT; list 1: 32 by TSORT32;
    // list 2: 64 by TSORT32 (two runs) merged as two lists into list 2's storage in place of a
    // format-1 round; the lists' tiles have different static Cols.
    VecT<float, 1, 128> v0(1, 128);
    VecT<std::uint32_t, 1, 128> i0(1, 128);
    VecT<float, 1, 256> runs0(1, 256), list0(1, 256);
    VecT<float, 1, 32> v1(1, 32);
    VecT<std::uint32_t, 1, 32> i1(1, 32);
    VecT<float, 1, 64> list1(1, 64);
    VecT<float, 1, 64> v2(1, 64);
    VecT<float, 1, 64> runs2a(1, 64), runs2b(1, 64);
    VecT<std::uint32_t, 1, 64> i2(1, 64);
    VecT<float, 1, 128> list2(1, 128), tmp2(1, 128);
    VecT<float, 1, 512> dst(1, 512), tmp(1, 512);
    TASSIGN(v0, 0);
    TASSIGN(i0, 0x200);
    TASSIGN(runs0, 0x400);
    TASSIGN(list0, 0x800);
    TASSIGN(v1, 0xC00);
    TASSIGN(i1, 0xC80);
    TASSIGN(list1, 0xD00);
    TASSIGN(v2, 0xE00);
    TASSIGN(i2, 0xF00);
    TASSIGN(runs2a, 0x1000);
    TASSIGN(runs2b, 0x1100);
    TASSIGN(list2, 0x1200);
    TASSIGN(tmp2, 0x1400);
    TASSIGN(dst, 0x2000);
    TASSIGN(tmp, 0x3000);
    Rng rng;
    std::vector<std::vector<Pair>> lists(3);
    for (int c = 0; c < 128; ++c) {
        v0.data()[c] = tied_value(rng);
        i0.data()[c] = static_cast<std::uint32_t>(c);
        lists[0].push_back({v0.data()[c], i0.data()[c]});
    }
    for (int c = 0; c < 32; ++c) {
        v1.data()[c] = tied_value(rng);
        i1.data()[c] = static_cast<std::uint32_t>(1000 + c);
        lists[1].push_back({v1.data()[c], i1.data()[c]});
    }
    for (int c = 0; c < 64; ++c) {
        v2.data()[c] = tied_value(rng);
        i2.data()[c] = static_cast<std::uint32_t>(2000 + c);
        lists[2].push_back({v2.data()[c], i2.data()[c]});
    }
    for (auto& l : lists) reference_sort(l);
    TSORT32(runs0, v0, i0);
    TMRGSORT(list0, runs0, 64);
    TSORT32(list1, v1, i1);
    // list 2: two sorted 32-pair runs (TSORT32 of a 64-value row), then a 2-list merge of them
    TSORT32(tmp2, v2, i2);
    barrier();
    std::memcpy(runs2a.data(), tmp2.data(), 64 * sizeof(float));
    std::memcpy(runs2b.data(), tmp2.data() + 64, 64 * sizeof(float));
    MrgSortExecutedNumList ex2{};
    merge<false>(list2, ex2, tmp2, runs2a, runs2b);
    barrier();
    CHECK(take_error() == "");
    CHECK(ex2.mrgSortList0 + ex2.mrgSortList1 == 64);
    for (int j = 0; j < 64; ++j) {
        const Pair got = pair_at(list2, 0, j);
        CHECK(got.value == lists[2][j].value);
        CHECK(got.index == lists[2][j].index);
    }
    fill(dst);
    fill(tmp);
    MrgSortExecutedNumList ex{};
    merge<false>(dst, ex, tmp, list0, list1, list2);
    barrier();
    CHECK(take_error() == "");
    // the indices ascend with the list, so the reference sort of all 224 pairs is the merge
    std::vector<Pair> all;
    for (auto& l : lists) all.insert(all.end(), l.begin(), l.end());
    reference_sort(all);
    Merged want;
    want.pairs = all;
    want.taken[0] = 128;
    want.taken[1] = 32;
    want.taken[2] = 64;
    check_merged(dst, tmp, ex, want);
    CHECK(want.pairs.size() == 224);
}

TEST_CASE("TMRGSORT (2 to 4 lists) of random lists of different lengths, cut or not by dst, as the reference") {
    std::uint64_t seed = 1;
    for (int dst_cols : {256, 100, 40, 2, 0}) {
        check_random_merge<false>({32, 20}, dst_cols, ++seed);
        check_random_merge<false>({16, 40, 8}, dst_cols, ++seed);
        check_random_merge<false>({32, 8, 24, 16}, dst_cols, ++seed);
        check_random_merge<false>({64, 64, 64, 64}, dst_cols, ++seed);  // 256 pairs, more than dst's 128
        check_random_merge<false>({5, 0, 7}, dst_cols, ++seed);         // an empty list
        check_random_merge<true>({32, 20}, dst_cols, ++seed);
        check_random_merge<true>({16, 40, 8}, dst_cols, ++seed);
        check_random_merge<true>({32, 8, 24, 16}, dst_cols, ++seed);
        check_random_merge<true>({64, 64, 64, 64}, dst_cols, ++seed);
        check_random_merge<true>({1, 64, 64, 64}, dst_cols, ++seed);
        check_random_merge<true>({5, 0, 7}, dst_cols, ++seed);
    }
}

TEST_CASE("TMRGSORT (2 to 4 lists): executed counts, ties to the earlier list, exhausted's stop, NaN first") {
    fresh();
    VecT<float, 1, 64> a(1, 64), b(1, 64), c(1, 64), d(1, 64);
    VecT<float, 1, 128> dst(1, 128), tmp(1, 128);
    TASSIGN(a, 0);
    TASSIGN(b, 0x100);
    TASSIGN(c, 0x200);
    TASSIGN(d, 0x300);
    TASSIGN(dst, 0x400);
    TASSIGN(tmp, 0x600);
    auto run_of = [](int list, int n, float first, float step) {
        std::vector<Pair> l;
        for (int i = 0; i < n; ++i) l.push_back({first - step * i, static_cast<std::uint32_t>(100 * list + i)});
        return l;
    };
    // a: 8 large values, b: 20 small ones: without exhausted all of a then all of b
    const std::vector<Pair> la = run_of(0, 8, 100.0f, 1.0f), lb = run_of(1, 20, 10.0f, 0.5f);
    put_list(a, la);
    put_list(b, lb);
    fill(dst);
    fill(tmp);
    MrgSortExecutedNumList ex{};
    merge<false>(dst, ex, tmp, a, b);
    barrier();
    CHECK(take_error() == "");
    CHECK(ex.mrgSortList0 == 8);
    CHECK(ex.mrgSortList1 == 20);
    CHECK((ex.mrgSortList2 == 0 && ex.mrgSortList3 == 0));
    CHECK(pair_at(dst, 0, 8).index == 100u);
    CHECK(pair_at(dst, 0, 27).index == 119u);
    CHECK(dst.data()[56] == kFill);  // past the 28 merged pairs: dst's old bytes
    // with exhausted: a is used up after 8 pairs and the merge stops there
    fill(dst);
    fill(tmp);
    ex = MrgSortExecutedNumList{9, 9, 9, 9};
    merge<true>(dst, ex, tmp, a, b);
    barrier();
    CHECK(take_error() == "");
    CHECK(ex.mrgSortList0 == 8);
    CHECK(ex.mrgSortList1 == 0);
    CHECK((ex.mrgSortList2 == 0 && ex.mrgSortList3 == 0));
    CHECK(pair_at(dst, 0, 7).index == 7u);
    CHECK(dst.data()[16] == kFill);
    CHECK(tmp.data()[16] == kFill);
    // interleaved: a = 100, 98, ..., b = 99, 97, ...: exhausted stops when a short c runs out
    put_list(a, run_of(0, 10, 100.0f, 2.0f));
    put_list(b, run_of(1, 10, 99.0f, 2.0f));
    put_list(c, run_of(2, 3, 95.5f, 2.0f));  // 95.5, 93.5, 91.5: used up by the 12th pair
    put_list(d, run_of(3, 30, 50.0f, 1.0f));
    fill(dst);
    fill(tmp);
    merge<true>(dst, ex, tmp, a, b, c, d);
    barrier();
    CHECK(take_error() == "");
    CHECK(ex.mrgSortList0 == 5);  // 100, 98, 96, 94, 92
    CHECK(ex.mrgSortList1 == 4);  // 99, 97, 95, 93
    CHECK(ex.mrgSortList2 == 3);
    CHECK(ex.mrgSortList3 == 0);
    CHECK(pair_at(dst, 0, 11).value == 91.5f);
    CHECK(pair_at(dst, 0, 11).index == 202u);
    CHECK(dst.data()[24] == kFill);
    // ties: three lists of equal values come out list by list, each in its order
    put_list(a, run_of(0, 5, 1.0f, 0.0f));
    put_list(b, run_of(1, 6, 1.0f, 0.0f));
    put_list(c, run_of(2, 7, 1.0f, 0.0f));
    for (int e = 0; e < 2; ++e) {
        CAPTURE(e);
        fill(dst);
        fill(tmp);
        if (e) {
            merge<true>(dst, ex, tmp, a, b, c);
        } else {
            merge<false>(dst, ex, tmp, a, b, c);
        }
        barrier();
        CHECK(take_error() == "");
        const int n = e ? 5 : 18;  // exhausted: a is used up first
        for (int j = 0; j < n; ++j)
            CHECK(pair_at(dst, 0, j).index == static_cast<std::uint32_t>(j < 5 ? j : j < 11 ? 100 + j - 5 : 200 + j - 11));
        CHECK(dst.data()[2 * n] == kFill);
        CHECK(ex.mrgSortList0 == 5);
        CHECK(ex.mrgSortList1 == (e ? 0 : 6));
        CHECK(ex.mrgSortList2 == (e ? 0 : 7));
        CHECK(ex.mrgSortList3 == 0);
    }
    // NaN sorts first (as TSORT32's); a list of one NaN pair goes ahead of every number
    const float nan = std::numeric_limits<float>::quiet_NaN();
    put_list(a, {{7.0f, 1}, {3.0f, 2}});
    put_list(b, {{nan, 3}, {5.0f, 4}, {1.0f, 5}});
    fill(dst);
    fill(tmp);
    merge<false>(dst, ex, tmp, a, b);
    barrier();
    CHECK(take_error() == "");
    const std::uint32_t order[] = {3, 1, 4, 2, 5};
    for (int j = 0; j < 5; ++j) CHECK(pair_at(dst, 0, j).index == order[j]);
    CHECK(std::isnan(pair_at(dst, 0, 0).value));
}

TEST_CASE("TMRGSORT (2 to 4 lists) refuses odd valid cols, a tmp or dst short of dst's valid cols, over 65535 pairs") {
    fresh();
    VecT<float, 1, 64> a(1, 64), b(1, 64);
    VecT<float, 1, 128> dst(1, 128), tmp(1, 128);
    TASSIGN(a, 0);
    TASSIGN(b, 0x100);
    TASSIGN(dst, 0x200);
    TASSIGN(tmp, 0x400);
    for (int i = 0; i < 64; ++i) a.data()[i] = b.data()[i] = static_cast<float>(64 - i);
    fill(dst);
    fill(tmp);
    MrgSortExecutedNumList ex{9, 9, 9, 9};
    b.SetValidShape(1, 31);
    merge<false>(dst, ex, tmp, a, b);
    CHECK(take_error() == "TMRGSORT: source list 1's valid cols 31 are odd (a list is whole (value, index) pairs)");
    b.SetValidShape(1, 64);
    dst.SetValidShape(1, 33);
    merge<true>(dst, ex, tmp, a, b);
    CHECK(take_error() == "TMRGSORT: dst valid cols 33 are odd (the merge writes whole pairs)");
    dst.SetValidShape(1, 128);
    tmp.SetValidShape(1, 64);
    merge<false>(dst, ex, tmp, a, b, a);
    CHECK(take_error() == "TMRGSORT: tmp valid shape [1, 64] does not cover the domain [1, 128]");
    tmp.SetValidShape(1, 128);
    dst.SetValidShape(0, 128);
    merge<false>(dst, ex, tmp, a, b, a, b);
    CHECK(take_error() == "TMRGSORT: destination valid shape [0, 128] does not cover the domain [1, 128]");
    for (int i = 0; i < 128; ++i) CHECK((dst.data()[i] == kFill && tmp.data()[i] == kFill));  // nothing written
    CHECK((ex.mrgSortList0 == 9 && ex.mrgSortList1 == 9 && ex.mrgSortList2 == 9 && ex.mrgSortList3 == 9));

    // A list of 65536 pairs does not fit a2a3's UB (512 KiB of floats); a runtime's larger UB places it.
    std::vector<std::uint8_t> ub(1u << 20), other(64);
    simpler::CoreBuffers bufs{};
    bufs.base[0] = ub.data();
    bufs.bytes[0] = ub.size();
    for (int k = 1; k < simpler::kCoreBufferCount; ++k) {
        bufs.base[k] = other.data();
        bufs.bytes[k] = other.size();
    }
    simpler::KernelContext ctx{0, 0, 0, nullptr, &bufs};
    simpler::current_kernel_context() = &ctx;
    fresh();
    {
        VecT<float, 1, 131072> big(1, 131072);
        VecT<float, 1, 64> small(1, 64), d(1, 64), t(1, 64);
        TASSIGN(big, 0);
        TASSIGN(small, 0x80000);
        TASSIGN(d, 0x80100);
        TASSIGN(t, 0x80200);
        CHECK(take_error() == "");
        merge<false>(d, ex, t, small, big);
        CHECK(take_error() == "TMRGSORT: source list 1 has 65536 pairs, more than the hardware's 16-bit count (65535)");
        big.SetValidShape(1, 131070);  // 65535 pairs: merged
        for (int i = 0; i < 131070; i += 2) big.data()[i] = static_cast<float>(-i);
        for (int i = 0; i < 64; i += 2) small.data()[i] = static_cast<float>(-3 * i - 1);
        merge<false>(d, ex, t, small, big);
        barrier();
        CHECK(take_error() == "");
        CHECK(ex.mrgSortList0 + ex.mrgSortList1 == 32);
        CHECK(d.data()[0] == 0.0f);
        CHECK(d.data()[2] == -1.0f);
    }
    simpler::current_kernel_context() = nullptr;
    fresh();
}

TEST_CASE("TMRGSORT (2 to 4 lists): a tmp or dst overlapping another operand is reported") {
    fresh();
    VecT<float, 1, 64> a(1, 64), b(1, 64), c(1, 64), d(1, 64), tmp(1, 64), dst(1, 64);
    VecT<float, 1, 32> part(1, 32);
    TASSIGN(a, 0);
    TASSIGN(b, 0x100);
    TASSIGN(c, 0x200);
    TASSIGN(d, 0x300);
    TASSIGN(tmp, 0x400);
    TASSIGN(dst, 0x500);
    for (int i = 0; i < 64; ++i) a.data()[i] = b.data()[i] = c.data()[i] = d.data()[i] = static_cast<float>(64 - i);
    MrgSortExecutedNumList ex{};
    // tmp written over a source the merge reads
    TASSIGN(tmp, 0x80);  // over a's second half
    merge<false>(dst, ex, tmp, a, b);
    CHECK(take_error().find("TMRGSORT writes tile Vec FLOAT32 [1, 64] at UB+0x80 over bytes at UB+0x80 of its source "
                            "tile Vec FLOAT32 [1, 64] at UB+0x0") == 0);
    // with four lists, dst overlapping tmp (the fifth tile read) is reported too
    fresh();
    TASSIGN(a, 0);
    TASSIGN(b, 0x100);
    TASSIGN(c, 0x200);
    TASSIGN(d, 0x300);
    TASSIGN(tmp, 0x400);
    TASSIGN(part, 0x440);  // over tmp's first 32 floats, which the merge writes and copies to part
    merge<false>(part, ex, tmp, a, b, c, d);
    CHECK(take_error().find("TMRGSORT writes tile Vec FLOAT32 [1, 32] at UB+0x440 over bytes at UB+0x440 of its source "
                            "tile Vec FLOAT32 [1, 64] at UB+0x400") == 0);
    // dst the same tile as tmp, or as a source, is not: the sources are read first
    fresh();
    TASSIGN(a, 0);
    TASSIGN(b, 0x100);
    TASSIGN(tmp, 0x400);
    put_list(a, {{5.0f, 1}, {1.0f, 2}});
    put_list(b, {{4.0f, 3}, {2.0f, 4}});
    tmp.SetValidShape(1, 8);
    merge<false>(tmp, ex, tmp, a, b);
    barrier();
    CHECK(take_error() == "");
    const std::uint32_t order[] = {1, 3, 4, 2};
    for (int j = 0; j < 4; ++j) CHECK(pair_at(tmp, 0, j).index == order[j]);
    merge<false>(a, ex, tmp, a, b);  // a's 4 valid cols: the first 2 pairs of the merge, into a
    barrier();
    CHECK(take_error() == "");
    CHECK((pair_at(a, 0, 0).index == 1u && pair_at(a, 0, 1).index == 3u));
    CHECK((ex.mrgSortList0 == 1 && ex.mrgSortList1 == 1));
}

TEST_CASE("TMRGSORT: each form called unqualified as generated code calls it, events included") {
    fresh();
    VecT<float, 1, 64> a(1, 64), b(1, 64), c(1, 64), e(1, 64);
    VecT<float, 1, 256> dst(1, 256), tmp(1, 256);
    TASSIGN(a, 0);
    TASSIGN(b, 0x100);
    TASSIGN(c, 0x200);
    TASSIGN(e, 0x300);
    TASSIGN(dst, 0x800);
    TASSIGN(tmp, 0xC00);
    Rng rng;
    std::vector<std::vector<Pair>> lists;
    VecT<float, 1, 64>* srcs[4] = {&a, &b, &c, &e};
    for (int k = 0; k < 4; ++k) {
        lists.push_back(sorted_list(rng, k, 32));
        put_list(*srcs[k], lists[k]);
    }
    MrgSortExecutedNumList executed{};
    fill(dst);
    fill(tmp);
    TMRGSORT<decltype(dst), decltype(tmp), std::remove_reference_t<decltype(a)>, std::remove_reference_t<decltype(b)>,
             false>(dst, executed, tmp, a, b);
    barrier();
    CHECK(take_error() == "");
    check_merged(dst, tmp, executed, reference_merge({lists[0], lists[1]}, 128, false));
    fill(dst);
    fill(tmp);
    RecordEvent ev = TMRGSORT<decltype(dst), decltype(tmp), std::remove_reference_t<decltype(a)>,
                              std::remove_reference_t<decltype(b)>, std::remove_reference_t<decltype(c)>, true>(
        dst, executed, tmp, a, b, c);
    barrier();
    CHECK(take_error() == "");
    check_merged(dst, tmp, executed, reference_merge({lists[0], lists[1], lists[2]}, 128, true));
    fill(dst);
    fill(tmp);
    TMRGSORT<decltype(dst), decltype(tmp), std::remove_reference_t<decltype(a)>, std::remove_reference_t<decltype(b)>,
             std::remove_reference_t<decltype(c)>, std::remove_reference_t<decltype(e)>, false>(dst, executed, tmp, a,
                                                                                               b, c, e, ev);
    barrier();
    CHECK(take_error() == "");
    check_merged(dst, tmp, executed, reference_merge(lists, 128, false));
    fill(dst);
    fill(tmp);
    TMRGSORT<decltype(dst), decltype(tmp), std::remove_reference_t<decltype(a)>, std::remove_reference_t<decltype(b)>,
             true>(dst, executed, tmp, a, b, ev, ev);
    barrier();
    CHECK(take_error() == "");
    check_merged(dst, tmp, executed, reference_merge({lists[0], lists[1]}, 128, true));
    // the single-list form beside them, with and without template arguments and events
    VecT<float, 1, 256> runs(1, 256), out(1, 256);
    TASSIGN(runs, 0x1000);
    TASSIGN(out, 0x1400);
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 32; ++i) {
            runs.data()[64 * k + 2 * i] = static_cast<float>(4 * (31 - i) + k);
            const std::uint32_t ix = static_cast<std::uint32_t>(100 * k + i);
            std::memcpy(runs.data() + 64 * k + 2 * i + 1, &ix, sizeof ix);
        }
    TMRGSORT(out, runs, 64);
    barrier();
    CHECK(take_error() == "");
    for (int j = 0; j < 128; ++j) CHECK(out.data()[2 * j] == static_cast<float>(127 - j));
    fill(out);
    TMRGSORT<decltype(out), decltype(runs)>(out, runs, 64, ev);
    barrier();
    CHECK(take_error() == "");
    for (int j = 0; j < 128; ++j) CHECK(out.data()[2 * j] == static_cast<float>(127 - j));
}
