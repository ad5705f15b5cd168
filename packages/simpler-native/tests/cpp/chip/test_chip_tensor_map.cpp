// The tensor map decides overlap on N-D boxes: side-by-side column tiles of one tensor (disjoint
// boxes whose byte ranges interleave) are independent and run at the same time on two AIV
// threads; overlapping boxes stay ordered; views that cannot be compared as boxes (other
// strides, other element sizes) fall back to byte ranges.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "chip_test_util.hpp"
#include "simpler/runtime/orchestration.hpp"

using namespace simpler;
using namespace simpler::chip;
using namespace chiptest;

namespace {

constexpr std::uint32_t kRows = 8, kCols = 16;

// A (rows x cols) view of an int64 row-major (kRows x kCols) matrix at (row, col).
ChipTensor box(std::uint64_t addr, std::uint32_t row, std::uint32_t col, std::uint32_t rows, std::uint32_t cols,
               DataType dt = DataType::INT64, std::uint32_t row_stride = kCols) {
    ChipTensor t;
    std::memset(&t, 0, sizeof t);
    t.buffer.addr = addr;
    t.buffer.size = std::uint64_t{kRows} * kCols * 8;
    t.ndims = 2;
    t.dtype = static_cast<std::uint8_t>(dt);
    t.address_space = static_cast<std::uint8_t>(AddressSpace::DEVICE);
    t.shapes[0] = rows;
    t.shapes[1] = cols;
    t.strides[0] = row_stride;
    t.strides[1] = 1;
    t.start_offset = std::uint64_t{row} * row_stride + col;
    return t;
}

std::atomic<int> g_arrived{0};
std::atomic<int> g_met{0};
std::atomic<int> g_active{0};
std::atomic<int> g_max_active{0};

// Arrive, then wait (up to 2 s) for a second task to arrive: both meet only if they run at the
// same time. Then fill the box with args[1].
void k_meet(std::int64_t* args) {
    const auto& x = *reinterpret_cast<const ChipTensor*>(args[0]);
    g_arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (g_arrived.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (g_arrived.load() >= 2) g_met.fetch_add(1);
    auto* e = reinterpret_cast<std::int64_t*>(x.buffer.addr) + x.start_offset;
    for (std::uint32_t r = 0; r < x.shapes[0]; ++r)
        for (std::uint32_t c = 0; c < x.shapes[1]; ++c) e[r * x.strides[0] + c] = args[1];
}

// Count how many run at once (sleeping a while), then x = x * 2 + args[1] over the box.
void k_guard(std::int64_t* args) {
    const auto& x = *reinterpret_cast<const ChipTensor*>(args[0]);
    const int now = g_active.fetch_add(1) + 1;
    int seen = g_max_active.load();
    while (now > seen && !g_max_active.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto* e = reinterpret_cast<std::int64_t*>(x.buffer.addr) + x.start_offset;
    for (std::uint32_t r = 0; r < x.shapes[0]; ++r)
        for (std::uint32_t c = 0; c < x.shapes[1]; ++c) e[r * x.strides[0] + c] = e[r * x.strides[0] + c] * 2 + args[1];
    g_active.fetch_sub(1);
}

std::shared_ptr<ChipProgram> program(const char* name, OrchestrationEntryFn entry) {
    const std::vector<ArgDirection> sig = {ArgDirection::InOut, ArgDirection::Scalar};
    return program_of(name, entry, {ArgDirection::InOut}, {kernel("meet", k_meet, sig), kernel("guard", k_guard, sig)});
}

// The column half of the whole matrix x from column ``first``.
ChipTensor half(const ChipTensor& x, std::uint32_t first) { return box(x.buffer.addr, 0, first, kRows, kCols / 2); }

// Left and right column halves of the whole matrix.
std::int32_t orch_halves(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor left = half(args->tensor(0), 0), right = half(args->tensor(0), kCols / 2);
    if (o.submit(0, {inout(left)}, {scalar_bits<std::int64_t>(1)}) < 0) return 1;
    return o.submit(0, {inout(right)}, {scalar_bits<std::int64_t>(2)}) < 0;
}

// Column boxes [0, 10) and [6, 16): they share columns 6..9, so the second waits for the first.
std::int32_t orch_overlapping(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor& x = args->tensor(0);
    const ChipTensor a = box(x.buffer.addr, 0, 0, kRows, 10);
    const ChipTensor b = box(x.buffer.addr, 0, 6, kRows, 10);
    if (o.submit(1, {inout(a)}, {scalar_bits<std::int64_t>(1)}) < 0) return 1;
    return o.submit(1, {inout(b)}, {scalar_bits<std::int64_t>(2)}) < 0;
}

// A strided write of the left half between two writes of the right half: the second right-half
// write must still follow the first (the left-half write spans its bytes but not its elements,
// so it must not stand in for it in the tensor map).
std::int32_t orch_cover(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor left = half(args->tensor(0), 0), right = half(args->tensor(0), kCols / 2);
    if (o.submit(1, {inout(right)}, {scalar_bits<std::int64_t>(1)}) < 0) return 1;
    if (o.submit(1, {inout(left)}, {scalar_bits<std::int64_t>(5)}) < 0) return 1;
    return o.submit(1, {inout(right)}, {scalar_bits<std::int64_t>(3)}) < 0;
}

ChipTensor whole(std::vector<std::int64_t>& v) { return box(reinterpret_cast<std::uint64_t>(v.data()), 0, 0, kRows, kCols); }

}  // namespace

TEST_CASE("boxes: side-by-side column tiles do not overlap; shared elements do") {
    const std::uint64_t base = 0x10000;
    CHECK_FALSE(tensors_may_overlap(box(base, 0, 0, kRows, 8), box(base, 0, 8, kRows, 8)));
    CHECK_FALSE(tensors_may_overlap(box(base, 0, 8, kRows, 8), box(base, 0, 0, kRows, 8)));
    CHECK_FALSE(tensors_may_overlap(box(base, 0, 0, 4, 4), box(base, 4, 4, 4, 4)));   // diagonal tiles
    CHECK_FALSE(tensors_may_overlap(box(base, 0, 0, 4, kCols), box(base, 4, 0, 4, kCols)));  // row halves
    CHECK(tensors_may_overlap(box(base, 0, 0, kRows, 10), box(base, 0, 6, kRows, 10)));
    CHECK(tensors_may_overlap(box(base, 2, 3, 1, 1), box(base, 0, 0, 4, 4)));         // one element inside
    CHECK_FALSE(tensors_may_overlap(box(base, 2, 4, 1, 1), box(base, 0, 0, 4, 4)));   // one element beside
    CHECK(tensors_may_overlap(box(base, 0, 0, kRows, kCols), box(base, 3, 5, 2, 2)));
    // Not comparable as boxes: byte ranges decide (conservative).
    CHECK(tensors_may_overlap(box(base, 0, 0, 4, 8), box(base, 0, 8, 4, 4, DataType::INT64, 32)));  // other strides
    CHECK(tensors_may_overlap(box(base, 0, 0, kRows, 8), box(base, 0, 8, kRows, 16, DataType::INT32, 32)));  // other size
    // A row wider than the row stride wraps into the next row: addresses are not one-to-one
    // with coordinates, so the boxes are not trusted.
    CHECK(tensors_may_overlap(box(base, 0, 0, 2, 20), box(base, 1, 2, 1, 2)));
    CHECK_FALSE(tensors_may_overlap(box(base, 0, 0, 2, 8), box(base + 1024, 0, 0, 2, 8)));  // disjoint bytes
    // Start offsets that are not a whole number of elements apart: byte ranges decide.
    ChipTensor odd = box(base + 4, 0, 8, kRows, 8, DataType::INT64);
    CHECK(tensors_may_overlap(box(base, 0, 0, kRows, 8), odd));
}

TEST_CASE("covering: a dense write covers what its bytes hold; a strided one only its own elements") {
    const std::uint64_t base = 0x10000;
    CHECK(tensor_covers(box(base, 0, 0, kRows, kCols), box(base, 0, 8, kRows, 8)));
    CHECK(tensor_covers(box(base, 0, 0, kRows, 10), box(base, 1, 2, 3, 8)));
    CHECK_FALSE(tensor_covers(box(base, 0, 0, kRows, 8), box(base, 0, 8, kRows, 8)));
    CHECK_FALSE(tensor_covers(box(base, 0, 0, kRows, 8), box(base, 2, 6, 2, 4)));
    CHECK_FALSE(tensor_covers(box(base, 0, 0, kRows, 8), box(base, 0, 0, kRows, 8, DataType::INT32)));
}

TEST_CASE("two tasks writing disjoint column halves run at the same time on two AIV threads") {
    Chip chip(cores(0, 2));
    std::vector<std::int64_t> x(kRows * kCols, 0);
    g_arrived = 0;
    g_met = 0;
    auto run = chip.submit(program("halves", orch_halves), {whole(x)}, {}, RunConfig{});
    REQUIRE(run->wait(30.0));
    CHECK(run->error() == "");
    CHECK(g_met.load() == 2);  // each task saw the other one running
    for (std::uint32_t r = 0; r < kRows; ++r)
        for (std::uint32_t c = 0; c < kCols; ++c) CHECK(x[r * kCols + c] == (c < kCols / 2 ? 1 : 2));
}

TEST_CASE("overlapping boxes stay ordered; a strided write does not stand in for another box") {
    Chip chip(cores(0, 2));
    {
        std::vector<std::int64_t> x(kRows * kCols, 1);
        g_max_active = 0;
        auto run = chip.submit(program("overlapping", orch_overlapping), {whole(x)}, {}, RunConfig{});
        REQUIRE(run->wait(30.0));
        CHECK(run->error() == "");
        CHECK(g_max_active.load() == 1);
        for (std::uint32_t c = 0; c < kCols; ++c) {
            const std::int64_t first = c < 10 ? 1 * 2 + 1 : 1;
            CHECK(x[c] == (c >= 6 ? first * 2 + 2 : first));
        }
    }
    {
        std::vector<std::int64_t> x(kRows * kCols, 1);
        g_max_active = 0;
        auto run = chip.submit(program("cover", orch_cover), {whole(x)}, {}, RunConfig{});
        REQUIRE(run->wait(30.0));
        CHECK(run->error() == "");
        for (std::uint32_t c = 0; c < kCols; ++c) CHECK(x[c] == (c < kCols / 2 ? 1 * 2 + 5 : (1 * 2 + 1) * 2 + 3));
    }
}
