// Helpers of the sorting instructions' tests (test_pto_sort.cpp, test_pto_merge.cpp): a sorted
// pair as the ISA stores it, the naive reference sort, and reading a pair tile.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pto_test_util.hpp"

namespace ptosort {

inline void barrier() { pto::pipe_barrier(pto::PIPE_ALL); }

struct Pair {
    float value;
    std::uint32_t index;
};

// The naive reference: a stable sort, value descending, equal values by ascending index.
inline void reference_sort(std::vector<Pair>& p) {
    std::stable_sort(p.begin(), p.end(), [](const Pair& a, const Pair& b) {
        return a.value != b.value ? a.value > b.value : a.index < b.index;
    });
}

inline std::uint32_t bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// Pair j of row r of a pair tile (value at column 2j, index bits at 2j + 1).
template <class TileT>
Pair pair_at(TileT& t, int r, int j) {
    const float* row = t.data() + r * TileT::Cols;
    Pair p;
    std::memcpy(&p.value, row + 2 * j, sizeof p.value);
    std::memcpy(&p.index, row + 2 * j + 1, sizeof p.index);
    return p;
}

// A value with many ties (multiples of 0.25 in [-6, 6)).
inline float tied_value(ptotest::Rng& rng) { return 0.25f * static_cast<float>(rng.below(48) - 24); }

}  // namespace ptosort
