// Sorting: TSORT32 and TMRGSORT (the single-source form and the 2- to 4-list form), which build
// and merge the lists of (value, index) pairs of the ISA's top-k idiom. Part of our PTO-ISA CPU backend;
// pto/sim/instr.hpp describes what every instruction does.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "pto/sim/instr_support.hpp"

namespace pto {

// How many pairs TMRGSORT's multi-list form took from each source list (0 for the lists a call
// does not have). The official headers' struct: generated code names these members.
struct MrgSortExecutedNumList {
    std::uint16_t mrgSortList0;
    std::uint16_t mrgSortList1;
    std::uint16_t mrgSortList2;
    std::uint16_t mrgSortList3;
};

// ---- sorting ---------------------------------------------------------------------------------

namespace sim {
// One element of a sorted list: the value, then its index's bits, 8 bytes as the ISA stores
// them in a float tile (dst[r, 2j] the value, dst[r, 2j + 1] the index).
struct SortPair {
    float value;
    std::uint32_t index;
};
static_assert(sizeof(SortPair) == 8, "a sorted pair is two 32-bit slots");

// Whether a sorts strictly before b by value (descending). NaN sorts before every number (the
// official CPU backend's comparisons leave its place unspecified); two NaNs compare equal.
inline bool sorts_before(float a, float b) noexcept { return a > b || (std::isnan(a) && !std::isnan(b)); }

// The per-thread scratch list the sorts read their source from (so dst may be src's storage).
inline std::vector<SortPair>& sort_scratch(std::size_t n) {
    static thread_local std::vector<SortPair> v;
    if (v.size() < n) v.resize(n);
    return v;
}
}  // namespace sim

// TSORT32(dst, src, idx): for each valid row r of src and each block of 32 of its valid columns
// (which must be a multiple of 32: the form without tmp sorts whole blocks; idx's valid shape
// must equal src's), the block's (src[r, c], idx[r, c]) pairs sorted by value descending, equal
// values by ascending index (the official CPU backend's stable order), are written to dst row r
// as pairs: block b (src cols 32b..32b+31) to dst cols 64b..64b+63, dst[r, 2j] = the value,
// dst[r, 2j + 1] = the index's bits. dst must cover [valid rows, 2 * valid cols]. float only.
template <typename DstTileData, typename SrcTileData, typename IdxTileData>
PTO_INST RecordEvent TSORT32(DstTileData& dst, SrcTileData& src, IdxTileData& idx) {
    static_assert(std::is_same<typename SrcTileData::DType, float>::value &&
                      std::is_same<typename DstTileData::DType, float>::value,
                  "TSORT32: our backend sorts float tiles (dst and src)");
    static_assert(std::is_same<typename IdxTileData::DType, std::uint32_t>::value, "TSORT32: idx is uint32");
    static_assert(DstTileData::Loc == TileType::Vec && SrcTileData::Loc == TileType::Vec &&
                      IdxTileData::Loc == TileType::Vec,
                  "TSORT32 works on Vec tiles");
    static_assert(DstTileData::isRowMajor && SrcTileData::isRowMajor && IdxTileData::isRowMajor,
                  "TSORT32 works on row-major tiles");
    constexpr int kBlock = 32;
    sim::Op op("TSORT32", PIPE_V);
    const int vr = sim::vrow(src), vc = sim::vcol(src);
    if (!sim::all_placed(op, dst, src, idx)) return {};
    if (vc % kBlock != 0) {
        ::simpler::report_kernel_error(
            "TSORT32: src valid cols %d are not a multiple of 32 (the form without tmp sorts whole 32-element blocks)",
            vc);
        return {};
    }
    if (sim::vrow(idx) != vr || sim::vcol(idx) != vc) {
        ::simpler::report_kernel_error("TSORT32: idx valid shape [%d, %d] differs from src's [%d, %d]", sim::vrow(idx),
                                       sim::vcol(idx), vr, vc);
        return {};
    }
    if (!sim::covers(op, "destination", dst, vr, 2 * vc)) return {};
    sim::rd(op, src, vr, vc);
    sim::rd(op, idx, vr, vc);
    sim::wr(op, dst, vr, 2 * vc);
    std::vector<sim::SortPair>& p = sim::sort_scratch(static_cast<std::size_t>(vc));
    for (int r = 0; r < vr; ++r) {
        const float* s = src.data() + r * SrcTileData::Cols;
        const std::uint32_t* ix = idx.data() + r * IdxTileData::Cols;
        for (int c = 0; c < vc; ++c) p[c] = sim::SortPair{s[c], ix[c]};
        for (int b = 0; b < vc; b += kBlock)  // insertion sort of each block: stable, 32 elements
            for (int i = b + 1; i < b + kBlock; ++i) {
                const sim::SortPair x = p[i];
                int j = i;
                for (; j > b; --j) {
                    const sim::SortPair& y = p[j - 1];
                    const bool x_first = sim::sorts_before(x.value, y.value) ||
                                         (!sim::sorts_before(y.value, x.value) && x.index < y.index);
                    if (!x_first) break;
                    p[j] = y;
                }
                p[j] = x;
            }
        std::memcpy(dst.data() + r * DstTileData::Cols, p.data(), sizeof(sim::SortPair) * vc);
    }
    return {};
}

// TMRGSORT(dst, src, blockLen), the single-source form (format 1): src's valid columns are
// groups of 4 consecutive blocks of blockLen floats (blockLen / 2 pairs as TSORT32 writes them,
// each block sorted descending); each group's 4 runs are merged into dst's same columns,
// descending by value (NaN first, as TSORT32), an equal value taken from the earlier block (the
// official CPU backend's strict comparison). Pairs move whole (value and index bits). As the
// hardware requires, blockLen is a nonzero multiple of 64 and src's valid cols 1..255 groups of
// 4 * blockLen; dst's valid cols must cover src's. One-row float tiles; dst may be src (the
// merge reads a copy).
template <typename DstTileData, typename SrcTileData, typename... WaitEvents>
PTO_INST RecordEvent TMRGSORT(DstTileData& dst, SrcTileData& src, uint32_t blockLen, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(std::is_same<typename SrcTileData::DType, float>::value &&
                      std::is_same<typename DstTileData::DType, float>::value,
                  "TMRGSORT: our backend merges float tiles (dst and src)");
    static_assert(DstTileData::Loc == TileType::Vec && SrcTileData::Loc == TileType::Vec,
                  "TMRGSORT works on Vec tiles");
    static_assert(DstTileData::Rows == 1 && SrcTileData::Rows == 1, "TMRGSORT: tiles have one row");
    constexpr int kRuns = 4;
    sim::Op op("TMRGSORT", PIPE_V);
    const int vc = sim::vcol(src);
    if (!sim::all_placed(op, dst, src)) return {};
    if (blockLen == 0 || blockLen % 64 != 0) {
        ::simpler::report_kernel_error("TMRGSORT: blockLen %u is not a nonzero multiple of 64", blockLen);
        return {};
    }
    const std::uint64_t group = std::uint64_t{kRuns} * blockLen;
    if (vc % group != 0 || vc / group < 1 || vc / group > 255) {
        ::simpler::report_kernel_error(
            "TMRGSORT: src valid cols %d are not 1 to 255 groups of 4 * blockLen = %llu (blockLen %u)", vc,
            static_cast<unsigned long long>(group), blockLen);
        return {};
    }
    if (!sim::covers(op, "destination", dst, 1, vc)) return {};
    sim::rd(op, src, 1, vc);
    sim::wr(op, dst, 1, vc);
    const int npairs = vc / 2, run = static_cast<int>(blockLen / 2);
    std::vector<sim::SortPair>& p = sim::sort_scratch(static_cast<std::size_t>(npairs));
    std::memcpy(p.data(), src.data(), sizeof(sim::SortPair) * npairs);
    for (int g = 0; g < npairs; g += kRuns * run) {
        int at[kRuns];
        for (int k = 0; k < kRuns; ++k) at[k] = g + k * run;
        for (int out = g; out < g + kRuns * run; ++out) {
            int pick = -1;
            for (int k = 0; k < kRuns; ++k) {
                if (at[k] == g + (k + 1) * run) continue;  // run k is used up
                if (pick < 0 || sim::sorts_before(p[at[k]].value, p[at[pick]].value)) pick = k;
            }
            std::memcpy(dst.data() + 2 * out, &p[at[pick]++], sizeof(sim::SortPair));
        }
    }
    return {};
}

namespace sim {
// TMRGSORT's multi-list form (format 2) for 2 to 4 sources: see the overloads below.
template <bool kExhausted, typename DstTileData, typename TmpTileData, typename... SrcTileData>
inline void merge_lists(DstTileData& dst, MrgSortExecutedNumList& executed, TmpTileData& tmp, SrcTileData&... srcs) {
    static_assert(std::is_same<typename DstTileData::DType, float>::value &&
                      std::is_same<typename TmpTileData::DType, float>::value &&
                      (std::is_same<typename SrcTileData::DType, float>::value && ...),
                  "TMRGSORT: our backend merges float tiles (dst, tmp and the sources)");
    static_assert(DstTileData::Loc == TileType::Vec && TmpTileData::Loc == TileType::Vec &&
                      ((SrcTileData::Loc == TileType::Vec) && ...),
                  "TMRGSORT works on Vec tiles");
    static_assert(DstTileData::Rows == 1 && TmpTileData::Rows == 1 && ((SrcTileData::Rows == 1) && ...),
                  "TMRGSORT: tiles have one row");
    static_assert(DstTileData::isRowMajor && TmpTileData::isRowMajor && (SrcTileData::isRowMajor && ...),
                  "TMRGSORT works on row-major tiles");
    constexpr int kLists = static_cast<int>(sizeof...(SrcTileData));
    constexpr int kMaxPairs = 0xFFFF;  // the hardware counts a list's pairs in 16 bits
    Op op("TMRGSORT", PIPE_V);
    if (!all_placed(op, dst, tmp, srcs...)) return;
    const int vcs[kLists] = {vcol(srcs)...};
    for (int k = 0; k < kLists; ++k) {
        if (vcs[k] % 2 != 0) {
            ::simpler::report_kernel_error(
                "TMRGSORT: source list %d's valid cols %d are odd (a list is whole (value, index) pairs)", k, vcs[k]);
            return;
        }
        if (vcs[k] / 2 > kMaxPairs) {
            ::simpler::report_kernel_error(
                "TMRGSORT: source list %d has %d pairs, more than the hardware's 16-bit count (65535)", k, vcs[k] / 2);
            return;
        }
    }
    const int vc = vcol(dst);
    if (vc % 2 != 0) {
        ::simpler::report_kernel_error("TMRGSORT: dst valid cols %d are odd (the merge writes whole pairs)", vc);
        return;
    }
    if (!covers(op, "destination", dst, 1, vc) || !covers(op, "tmp", tmp, 1, vc)) return;
    // The hardware merges into tmp (reading the sources), then copies tmp to dst.
    (rd(op, srcs, 1, vcol(srcs)), ...);
    wr(op, tmp, 1, vc);
    rd(op, tmp, 1, vc);
    wr(op, dst, 1, vc);
    int begin[kLists], at[kLists], end[kLists];  // list k is p[begin[k]..end[k]), its head p[at[k]]
    int total = 0;
    for (int k = 0; k < kLists; ++k) {
        begin[k] = at[k] = total;
        total += vcs[k] / 2;
        end[k] = total;
    }
    // The lists are read into the scratch first: tmp or dst may then share a source's storage.
    std::vector<SortPair>& p = sort_scratch(static_cast<std::size_t>(total));
    {
        int k = 0;
        ((std::memcpy(p.data() + begin[k], srcs.data(), sizeof(SortPair) * static_cast<std::size_t>(end[k] - begin[k])),
          ++k),
         ...);
    }
    const int limit = vc / 2;
    int out = 0;
    while (out < limit) {
        int pick = -1;
        for (int k = 0; k < kLists; ++k) {
            if (at[k] == end[k]) continue;  // list k is used up
            if (pick < 0 || sorts_before(p[at[k]].value, p[at[pick]].value)) pick = k;
        }
        if (pick < 0) break;  // every list is used up
        std::memcpy(tmp.data() + 2 * out, &p[at[pick]++], sizeof(SortPair));
        ++out;
        if constexpr (kExhausted) {
            bool used_up = false;
            for (int k = 0; k < kLists; ++k) used_up = used_up || at[k] == end[k];
            if (used_up) break;
        }
    }
    std::memmove(dst.data(), tmp.data(), sizeof(SortPair) * static_cast<std::size_t>(out));
    std::uint16_t taken[4] = {0, 0, 0, 0};
    for (int k = 0; k < kLists; ++k) taken[k] = static_cast<std::uint16_t>(at[k] - begin[k]);
    executed.mrgSortList0 = taken[0];
    executed.mrgSortList1 = taken[1];
    executed.mrgSortList2 = taken[2];
    executed.mrgSortList3 = taken[3];
}
}  // namespace sim

// TMRGSORT<Dst, Tmp, Src0, Src1[, Src2[, Src3]], exhausted>(dst, executed, tmp, src0, src1[,
// src2[, src3]]), the multi-list form (format 2; the official template and parameter order):
// each source k is a list of vcol(src_k) / 2 (value, index) pairs, assumed sorted descending
// (not checked). Pairs are written to dst from column 0 while fewer than vcol(dst) / 2 are
// written and some list has pairs left, each time the head with the greatest value (NaN first,
// as TSORT32), an equal value taken from the earlier list (the official CPU backend's strict
// comparison); pairs move whole. With exhausted, the merge stops right after a pick when any
// list is used up (checked after every pick as the official CPU backend does, so a list with no
// pairs stops it after the first pair). executed.mrgSortList<k> is set to the pairs taken from
// list k (0 for the lists not given), whether or not exhausted (the hardware sets it only
// with exhausted). The hardware merges into tmp and copies tmp to dst: tmp receives the merged
// pairs too, and both are recorded as written over [1, vcol(dst)], though columns past the
// merged pairs (the lists ran out, or exhausted stopped) keep their old bytes in both (the
// hardware merges every list's pairs into tmp, whatever dst's valid cols; we merge only what
// dst receives, as the official CPU backend, which leaves tmp alone).
// Reported (nothing computed): a source's or dst's odd valid cols, a list of more than 65535
// pairs (the hardware's 16-bit counts), a dst or tmp whose valid shape does not cover
// [1, vcol(dst)]. One-row row-major Vec float tiles. The sources are read before anything is
// written: dst or tmp may be a source's storage here (not on the hardware for tmp).
template <typename DstTileData, typename TmpTileData, typename Src0TileData, typename Src1TileData,
          typename Src2TileData, typename Src3TileData, bool exhausted, typename... WaitEvents>
PTO_INST RecordEvent TMRGSORT(DstTileData& dst, MrgSortExecutedNumList& executedNumList, TmpTileData& tmp,
                              Src0TileData& src0, Src1TileData& src1, Src2TileData& src2, Src3TileData& src3,
                              WaitEvents&... events) {
    (void)sizeof...(events);
    sim::merge_lists<exhausted>(dst, executedNumList, tmp, src0, src1, src2, src3);
    return {};
}

template <typename DstTileData, typename TmpTileData, typename Src0TileData, typename Src1TileData,
          typename Src2TileData, bool exhausted, typename... WaitEvents>
PTO_INST RecordEvent TMRGSORT(DstTileData& dst, MrgSortExecutedNumList& executedNumList, TmpTileData& tmp,
                              Src0TileData& src0, Src1TileData& src1, Src2TileData& src2, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::merge_lists<exhausted>(dst, executedNumList, tmp, src0, src1, src2);
    return {};
}

template <typename DstTileData, typename TmpTileData, typename Src0TileData, typename Src1TileData, bool exhausted,
          typename... WaitEvents>
PTO_INST RecordEvent TMRGSORT(DstTileData& dst, MrgSortExecutedNumList& executedNumList, TmpTileData& tmp,
                              Src0TileData& src0, Src1TileData& src1, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::merge_lists<exhausted>(dst, executedNumList, tmp, src0, src1);
    return {};
}

}  // namespace pto
