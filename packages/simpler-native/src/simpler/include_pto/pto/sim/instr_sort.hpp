// Sorting: TSORT32 and TMRGSORT (the single-source form), which build and merge the lists of
// (value, index) pairs of the ISA's top-k idiom. Part of our PTO-ISA CPU backend;
// pto/sim/instr.hpp describes what every instruction does.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pto/sim/instr_support.hpp"

namespace pto {

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

}  // namespace pto
