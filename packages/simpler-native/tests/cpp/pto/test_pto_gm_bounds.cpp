// Randomised bounds checking of the global-memory views generated kernels build
// (simpler/kernel_args.hpp gm_view) against a per-element reference: random ND descriptors
// (rank, shape, strides, start offset, backing size) and random offsets / windows. A view must be
// made exactly when every element of its window is inside the shape and the backing; TLOAD and
// TSTORE through an accepted view touch exactly the window; a refused view is reported.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "pto_test_util.hpp"
#include "simpler/kernel_args.hpp"

using namespace pto;
using ptotest::fresh;
using ptotest::Rng;
using ptotest::sync;
using ptotest::take_error;
using simpler::ChipTensor;

namespace {

constexpr int TR = 6, TC = 24;

struct Case {
    ChipTensor t;
    std::int64_t off[4];
    int vr, vc;
};

// Element index of (r, c) of the window, or -1 when it lies outside the shape.
std::int64_t elem_index(const Case& k, int r, int c) {
    const ChipTensor& t = k.t;
    const int nd = static_cast<int>(t.ndims);
    std::int64_t idx = static_cast<std::int64_t>(t.start_offset);
    const int lead = nd >= 2 ? nd - 2 : 0;
    for (int i = 0; i < lead; ++i) {
        if (k.off[i] < 0 || k.off[i] >= t.shapes[i]) return -1;
        idx += k.off[i] * t.strides[i];
    }
    const std::int64_t gc = k.off[nd - 1] + c;
    if (nd == 1) {
        if (r > 0 || gc < 0 || gc >= t.shapes[0]) return -1;
        return idx + gc * t.strides[0];
    }
    const std::int64_t gr = k.off[nd - 2] + r;
    if (gr < 0 || gc < 0 || gr >= t.shapes[nd - 2] || gc >= t.shapes[nd - 1]) return -1;
    return idx + gr * t.strides[nd - 2] + gc * t.strides[nd - 1];
}

Case random_case(Rng& rng, std::vector<std::int32_t>& mem) {
    Case k;
    std::memset(&k, 0, sizeof k);
    const int nd = 1 + rng.below(4);
    k.t.ndims = static_cast<std::uint32_t>(nd);
    k.t.dtype = static_cast<std::uint8_t>(simpler::DataType::INT32);
    k.t.address_space = 1;
    for (int i = 0; i < nd; ++i) k.t.shapes[i] = static_cast<std::uint32_t>(1 + rng.below(24));
    // Compact strides, sometimes padded; sometimes a non-unit column stride.
    std::uint32_t s = 1;
    for (int i = nd - 1; i >= 0; --i) {
        k.t.strides[i] = s + static_cast<std::uint32_t>(rng.below(4) == 0 ? rng.below(3) : 0);
        s = k.t.strides[i] * k.t.shapes[i];
    }
    if (rng.below(8) == 0 && nd >= 2) k.t.strides[nd - 1] = 1 + rng.below(3);
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
    for (int i = 0; i < nd; ++i) k.off[i] = rng.below(static_cast<int>(k.t.shapes[i]) + 4) - 1;
    k.vr = nd == 1 ? 1 : 1 + rng.below(TR);
    k.vc = 1 + rng.below(TC);
    return k;
}

bool make_view(simpler::kernel::GmView<std::int32_t>& v, const Case& k) {
    const auto code = static_cast<std::uint8_t>(simpler::DataType::INT32);
    const std::int64_t* o = k.off;
    switch (k.t.ndims) {
        case 1: return simpler::kernel::gm_view<std::int32_t>(v, "TLOAD t", k.t, code, {o[0]}, k.vr, k.vc);
        case 2: return simpler::kernel::gm_view<std::int32_t>(v, "TLOAD t", k.t, code, {o[0], o[1]}, k.vr, k.vc);
        case 3:
            return simpler::kernel::gm_view<std::int32_t>(v, "TLOAD t", k.t, code, {o[0], o[1], o[2]}, k.vr, k.vc);
        default:
            return simpler::kernel::gm_view<std::int32_t>(v, "TLOAD t", k.t, code, {o[0], o[1], o[2], o[3]}, k.vr,
                                                          k.vc);
    }
}

}  // namespace

TEST_CASE("randomised ND windows: gm_view, TLOAD and TSTORE match the per-element bounds reference") {
    Rng rng;
    int performed = 0, refused = 0;
    for (int iter = 0; iter < 4000; ++iter) {
        fresh();
        std::vector<std::int32_t> mem;
        const Case k = random_case(rng, mem);
        const std::int64_t backing = static_cast<std::int64_t>(k.t.buffer.size / 4);
        bool all_in = true;
        for (int r = 0; r < k.vr && all_in; ++r)
            for (int c = 0; c < k.vc; ++c) {
                const std::int64_t e = elem_index(k, r, c);
                if (e < 0 || e >= backing) {
                    all_in = false;
                    break;
                }
            }
        const std::vector<std::int32_t> before = mem;
        simpler::kernel::GmView<std::int32_t> view;
        const bool ok = make_view(view, k);
        const bool reported = !take_error().empty();
        CAPTURE(iter);
        REQUIRE(ok != reported);
        REQUIRE(ok == all_in);
        if (!ok) {
            ++refused;
            REQUIRE(mem == before);
            continue;
        }
        ++performed;
        Tile<TileType::Vec, std::int32_t, TR, TC, BLayout::RowMajor, -1, -1> tile(k.vr, k.vc);
        TASSIGN(tile, 0);
        for (int i = 0; i < TR * TC; ++i) tile.data()[i] = -99;
        TLOAD(tile, view);
        REQUIRE(take_error() == "");
        for (int r = 0; r < TR; ++r)
            for (int c = 0; c < TC; ++c) {
                const std::int32_t want =
                    (r < k.vr && c < k.vc) ? mem[static_cast<std::size_t>(elem_index(k, r, c))] : -99;
                REQUIRE(tile.data()[r * TC + c] == want);
            }
        // Store a negated copy back and check exactly the window changed.
        for (int i = 0; i < TR * TC; ++i) tile.data()[i] = -tile.data()[i] - 1;
        sync(PIPE_MTE2, PIPE_MTE3);
        TSTORE(view, tile);
        REQUIRE(take_error() == "");
        std::vector<std::int32_t> expect = before;
        for (int r = 0; r < k.vr; ++r)
            for (int c = 0; c < k.vc; ++c) expect[static_cast<std::size_t>(elem_index(k, r, c))] = tile.data()[r * TC + c];
        // Two window elements alias only when a random stride makes them collide; then the last
        // write wins in both.
        REQUIRE(mem == expect);
    }
    MESSAGE("performed " << performed << ", refused " << refused);
    CHECK(performed > 300);
    CHECK(refused > 300);
}
