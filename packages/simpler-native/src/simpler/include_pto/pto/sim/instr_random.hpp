// Random numbers: TRANDOM, a counter-based Philox-4x32 generator (Salmon, Moraes, Dror and Shaw,
// "Parallel random numbers: as easy as 1, 2, 3", SC 2011) filling a tile with 32-bit values.
// Part of our PTO-ISA CPU backend; pto/sim/instr.hpp describes what every instruction does.
#pragma once

#include <cstdint>
#include <type_traits>

#include "pto/sim/instr_support.hpp"

namespace pto {

// ---- random numbers --------------------------------------------------------------------------

namespace sim {

// Philox-4x32's constants: the multipliers of counter words 0 and 2, and the per-round
// increments of key words 0 and 1 (the golden ratio's and sqrt(3) - 1's first 32 bits).
inline constexpr std::uint32_t kPhiloxMul0 = 0xD2511F53u;
inline constexpr std::uint32_t kPhiloxMul1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxBump0 = 0x9E3779B9u;
inline constexpr std::uint32_t kPhiloxBump1 = 0xBB67AE85u;

// x = Philox-4x32-Rounds of the counter block x (word 0 first) under the key (k0, k1). A round
// takes the 64-bit products p0 = x0 * Mul0 and p1 = x2 * Mul1 and makes
// (hi(p1) ^ x1 ^ k0, lo(p1), hi(p0) ^ x3 ^ k1, lo(p0)); the key then moves on by the bumps.
// Random123's philox4x32_R in its word order (the published known answers hold).
template <int Rounds>
inline void philox4x32(std::uint32_t (&x)[4], std::uint32_t k0, std::uint32_t k1) noexcept {
    for (int i = 0; i < Rounds; ++i) {
        const std::uint64_t p0 = static_cast<std::uint64_t>(x[0]) * kPhiloxMul0;
        const std::uint64_t p1 = static_cast<std::uint64_t>(x[2]) * kPhiloxMul1;
        const std::uint32_t y0 = static_cast<std::uint32_t>(p1 >> 32) ^ x[1] ^ k0;
        const std::uint32_t y2 = static_cast<std::uint32_t>(p0 >> 32) ^ x[3] ^ k1;
        x[0] = y0;
        x[1] = static_cast<std::uint32_t>(p1);
        x[2] = y2;
        x[3] = static_cast<std::uint32_t>(p0);
        k0 += kPhiloxBump0;
        k1 += kPhiloxBump1;
    }
}

// c += v, c one 128-bit number whose word 0 is the lowest (modulo 2^128).
inline void add128(std::uint32_t (&c)[4], std::uint32_t v) noexcept {
    std::uint64_t carry = v;
    for (int i = 0; i < 4 && carry != 0; ++i) {
        carry += c[i];
        c[i] = static_cast<std::uint32_t>(carry);
        carry >>= 32;
    }
}

}  // namespace sim

// TRANDOM<Rounds>(dst, key, counter) (row-major Vec tile of int32_t or uint32_t; Rounds 7 or 10;
// the official template and parameter order): fills dst's valid shape with Philox-4x32-Rounds
// words, in the schedule of the official CPU backend, which defines the bits. A vector repeat is
// 64 lanes (256 bytes of 32-bit words), a loop 4 repeats (256 columns); a row has
// ceil(valid cols / 256) loops. A running 128-bit counter starts at `counter`; for each valid
// row r and each loop l, lane i (0..63) encrypts running + i under `key`, and its word k goes to
// dst[r, 256 l + 64 k + i] when that column is below the valid cols; after each loop the running
// counter grows by Cols / 4 (the row stride in elements over 4; it carries on across rows). The
// words are stored as they are (int32_t: the same bits). key and counter are only read; dst
// outside its valid shape is untouched.
template <std::uint16_t Rounds = 10, typename DstTile, typename... WaitEvents>
PTO_INST RecordEvent TRANDOM(DstTile& dst, TRandomKey& key, TRandomCounter& counter, WaitEvents&... events) {
    (void)sizeof...(events);
    using T = typename DstTile::DType;
    static_assert(std::is_same<T, std::int32_t>::value || std::is_same<T, std::uint32_t>::value,
                  "TRANDOM: dst's element type must be int32_t or uint32_t");
    static_assert(Rounds == 7 || Rounds == 10, "TRANDOM: Rounds must be 7 or 10");
    static_assert(DstTile::Loc == TileType::Vec && DstTile::isRowMajor, "TRANDOM: dst must be a row-major Vec tile");
    constexpr int kLanes = 256 / static_cast<int>(sizeof(T));  // counters a repeat
    constexpr int kLoopCols = 4 * kLanes;                      // a loop's columns: 4 words a counter
    constexpr std::uint32_t kStep = static_cast<std::uint32_t>(DstTile::RowStride) / 4u;
    sim::Op op("TRANDOM", PIPE_V);
    const int vr = sim::vrow(dst), vc = sim::vcol(dst);
    if (!sim::placed(op, dst)) return {};
    const std::uint32_t k0 = key[0], k1 = key[1];
    std::uint32_t running[4] = {counter[0], counter[1], counter[2], counter[3]};
    sim::wr(op, dst, vr, vc);
    const int loops = (vc + kLoopCols - 1) / kLoopCols;
    for (int r = 0; r < vr; ++r) {
        T* row = dst.data() + r * DstTile::Cols;
        for (int l = 0; l < loops; ++l) {
            const int base = l * kLoopCols;
            // lanes whose first column is past the valid cols write nothing
            const int lanes = vc - base < kLanes ? vc - base : kLanes;
            for (int i = 0; i < lanes; ++i) {
                std::uint32_t x[4] = {running[0], running[1], running[2], running[3]};
                sim::add128(x, static_cast<std::uint32_t>(i));
                sim::philox4x32<Rounds>(x, k0, k1);
                for (int k = 0; k < 4; ++k) {
                    const int c = base + k * kLanes + i;
                    if (c < vc) row[c] = static_cast<T>(x[k]);
                }
            }
            sim::add128(running, kStep);
        }
    }
    return {};
}

}  // namespace pto
