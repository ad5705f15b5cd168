// Randomised load/store bounds checking against a per-element reference: random descriptors
// (rank, shape, strides, start offset, backing size) and random offsets / valid shapes. An
// access must be performed exactly when every element it touches is inside the shape and the
// backing (ND), or soundly (NZ: never when an element is outside; always when the backing
// covers the descriptor's extent); a refused access touches nothing.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tile_test_util.hpp"

using namespace simpler::tile;
using simpler::ChipTensor;

namespace {

constexpr int TR = 6, TC = 20;
using TestTile = VecTile<std::int32_t, TR, TC>;
// NZ blocks of 4-byte elements: 16 rows x 8 columns (one 32-byte block row).
constexpr int NZR = 16, NZC = 8;

struct Case {
    ChipTensor t;
    Offsets off;
    int vr, vc;
};

// Element index of logical (r, c) of the region, or -1 when (r, c) is outside the shape.
std::int64_t elem_index(const Case& k, bool nz, int r, int c) {
    const ChipTensor& t = k.t;
    const int nd = static_cast<int>(t.ndims);
    std::int64_t idx = static_cast<std::int64_t>(t.start_offset);
    const int lead = nz ? nd - 4 : (nd >= 2 ? nd - 2 : 0);
    for (int i = 0; i < lead; ++i) {
        if (k.off.v[i] < 0 || k.off.v[i] >= t.shapes[i]) return -1;
        idx += k.off.v[i] * t.strides[i];
    }
    const std::int64_t gr = (nd == 1 && !nz ? 0 : k.off.v[k.off.n - 2]) + r;
    const std::int64_t gc = k.off.v[k.off.n - 1] + c;
    if (nz) {
        if (gr < 0 || gc < 0 || gr >= t.shapes[nd - 3] * NZR || gc >= t.shapes[nd - 4] * NZC) return -1;
        return idx + (gc / NZC) * t.strides[nd - 4] + (gr / NZR) * t.strides[nd - 3] + (gr % NZR) * t.strides[nd - 2] +
               (gc % NZC) * t.strides[nd - 1];
    }
    if (nd == 1) {
        if (gc < 0 || gc >= t.shapes[0]) return -1;
        return idx + gc * t.strides[0];
    }
    if (gr < 0 || gc < 0 || gr >= t.shapes[nd - 2] || gc >= t.shapes[nd - 1]) return -1;
    return idx + gr * t.strides[nd - 2] + gc * t.strides[nd - 1];
}

Case random_case(tiletest::Rng& rng, bool nz, std::vector<std::int32_t>& mem) {
    Case k;
    std::memset(&k.t, 0, sizeof k.t);
    const int nd = nz ? 4 + rng.below(2) : 1 + rng.below(4);
    k.t.ndims = static_cast<std::uint32_t>(nd);
    k.t.dtype = static_cast<std::uint8_t>(simpler::DataType::INT32);
    k.t.address_space = 1;
    for (int i = 0; i < nd; ++i) k.t.shapes[i] = static_cast<std::uint32_t>(1 + rng.below(nz && i >= nd - 2 ? 1 : 24));
    if (nz) k.t.shapes[nd - 2] = NZR, k.t.shapes[nd - 1] = NZC, k.t.shapes[nd - 3] = 1 + rng.below(2),
            k.t.shapes[nd - 4] = 1 + rng.below(4);
    // Compact strides, sometimes padded or permuted-looking (strides only need to be positive).
    std::uint32_t s = 1;
    for (int i = nd - 1; i >= 0; --i) {
        k.t.strides[i] = s + static_cast<std::uint32_t>(rng.below(4) == 0 ? rng.below(3) : 0);
        s = k.t.strides[i] * k.t.shapes[i];
    }
    if (rng.below(8) == 0 && nd >= 2) k.t.strides[nd - 1] = 1 + rng.below(3);  // non-unit column stride
    k.t.start_offset = static_cast<std::uint64_t>(rng.below(40));
    std::uint64_t extent = 1;
    for (int i = 0; i < nd; ++i) extent += static_cast<std::uint64_t>(k.t.shapes[i] - 1) * k.t.strides[i];
    // Backing: usually enough, sometimes a little short.
    std::uint64_t elems = k.t.start_offset + extent;
    if (rng.below(3) == 0) elems = elems > 20 ? elems - static_cast<std::uint64_t>(rng.below(20)) : elems;
    mem.assign(elems + 64, 0);  // + guard zone, never legally touched
    for (std::size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<std::int32_t>(i * 7 + 1);
    k.t.buffer.addr = reinterpret_cast<std::uintptr_t>(mem.data());
    k.t.buffer.size = elems * 4;
    const int want = nz ? nd - 2 : nd;
    k.off = Offsets();
    k.off.n = want;
    for (int i = 0; i < want; ++i) {
        const int bound = (nz && i >= want - 2) ? 40 : (i < nd ? static_cast<int>(k.t.shapes[i]) + 2 : 4);
        k.off.v[i] = rng.below(bound + 2) - 1;
    }
    k.vr = nd == 1 && !nz ? rng.below(2) : rng.below(TR + 1);
    k.vc = rng.below(TC + 1);
    return k;
}

}  // namespace

TEST_CASE("randomised ND and NZ accesses match the per-element bounds reference") {
    tiletest::Rng rng;
    int performed[2] = {0, 0}, refused[2] = {0, 0};
    for (int iter = 0; iter < 6000; ++iter) {
        const bool nz = iter % 3 == 0;
        std::vector<std::int32_t> mem;
        Case k = random_case(rng, nz, mem);
        const std::int64_t backing = static_cast<std::int64_t>(k.t.buffer.size / 4);
        bool all_in = true;
        for (int r = 0; r < k.vr && all_in; ++r)
            for (int c = 0; c < k.vc; ++c) {
                const std::int64_t e = elem_index(k, nz, r, c);
                if (e < 0 || e >= backing) {
                    all_in = false;
                    break;
                }
            }
        // Leading offsets are checked even when the region is empty.
        const int nd = static_cast<int>(k.t.ndims);
        const int lead = nz ? nd - 4 : (nd >= 2 ? nd - 2 : 0);
        for (int i = 0; i < lead; ++i)
            if (k.off.v[i] < 0 || k.off.v[i] >= k.t.shapes[i]) all_in = false;
        {
            const std::int64_t r0 = nd == 1 && !nz ? 0 : k.off.v[k.off.n - 2], c0 = k.off.v[k.off.n - 1];
            const std::int64_t rows = nz ? k.t.shapes[nd - 3] * NZR : (nd == 1 ? 1 : k.t.shapes[nd - 2]);
            const std::int64_t cols = nz ? k.t.shapes[nd - 4] * NZC : k.t.shapes[nd - 1];
            if (r0 < 0 || c0 < 0 || r0 + k.vr > rows || c0 + k.vc > cols) all_in = false;
        }
        std::uint64_t extent = 1;
        for (int i = 0; i < nd; ++i) extent += static_cast<std::uint64_t>(k.t.shapes[i] - 1) * k.t.strides[i];
        const bool descriptor_valid = k.t.start_offset + extent <= k.t.buffer.size / 4;

        TestTile tile;
        tile.fill(-99);
        REQUIRE(tile.set_valid(k.vr, k.vc));
        const std::vector<std::int32_t> before = mem;
        const bool ok = nz ? load_nz(tile, k.t, k.off) : load(tile, k.t, k.off);
        const bool reported = !tiletest::take_error().empty();
        CAPTURE(iter);
        CAPTURE(nz);
        REQUIRE(ok != reported);
        if (!nz || descriptor_valid) {
            REQUIRE(ok == all_in);
        } else if (ok) {
            REQUIRE(all_in);  // NZ bounding-box check: never accepts an element outside
        }
        if (ok) {
            ++performed[nz];
            for (int r = 0; r < TR; ++r)
                for (int c = 0; c < TC; ++c) {
                    const std::int32_t want = (r < k.vr && c < k.vc) ? mem[static_cast<std::size_t>(elem_index(k, nz, r, c))] : -99;
                    REQUIRE(tile(r, c) == want);
                }
            // Store a negated copy back and check exactly the region changed.
            for (auto& v : tile.data) v = -v - 1;
            REQUIRE((nz ? store_nz(k.t, tile, k.off) : store(k.t, tile, k.off)));
            std::vector<std::int32_t> expect = before;
            for (int r = 0; r < k.vr; ++r)
                for (int c = 0; c < k.vc; ++c) {
                    const auto e = static_cast<std::size_t>(elem_index(k, nz, r, c));
                    expect[e] = tile(r, c);
                }
            // With a non-unit or padded stride two region elements never alias, except when a
            // random stride makes them collide; then the last write wins in both.
            REQUIRE(mem == expect);
        } else {
            ++refused[nz];
            for (int i = 0; i < TR * TC; ++i) REQUIRE(tile.data[i] == -99);
            REQUIRE_FALSE((nz ? store_nz(k.t, tile, k.off) : store(k.t, tile, k.off)));
            REQUIRE_FALSE(tiletest::take_error().empty());
            REQUIRE(mem == before);
        }
    }
    MESSAGE("ND performed " << performed[0] << ", refused " << refused[0] << "; NZ performed " << performed[1]
                            << ", refused " << refused[1]);
    CHECK(performed[0] > 300);
    CHECK(refused[0] > 300);
    CHECK(performed[1] > 100);
    CHECK(refused[1] > 100);
}
