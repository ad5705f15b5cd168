// The checks of our PTO-ISA implementation: buffer capacity, overlapping live tiles, and pipe
// hazards (missing set_flag/wait_flag), each reported through the kernel error channel; and
// the programs that are right are not reported.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pto_test_util.hpp"

using namespace pto;
using ptotest::fresh;
using ptotest::Gt;
using ptotest::sync;
using ptotest::take_error;
using ptotest::VecT;

namespace {

// A [16, 16] float tile ``a`` at UB 0 over the host input x (all 2.0) and output y; ``start()``
// begins a kernel invocation with x loaded into a, the first step of each pipe-hazard case.
struct LoadedTile {
    std::vector<float> x = std::vector<float>(16 * 16, 2.0f), y = std::vector<float>(16 * 16);
    Gt<float, 16, 16> gx{x.data()}, gy{y.data()};
    VecT<float, 16, 16> a{16, 16};

    void start() {
        fresh();
        TASSIGN(a, 0);
        TLOAD(a, gx);
    }
};

}  // namespace

TEST_CASE("capacity: a tile past its buffer's end is reported with its shape, offset and the buffer") {
    fresh();
    VecT<float, 64, 64> t(64, 64);  // 16 KiB
    TASSIGN(t, 192 * 1024 - 16 * 1024);  // ends exactly at UB's end: fine
    CHECK(take_error() == "");
    TASSIGN(t, 192 * 1024 - 16 * 1024 + 32);
    CHECK(take_error() ==
          "TASSIGN: Vec FLOAT32 [64, 64] tile (16384 bytes) at UB+0x2c020 ends past the buffer's end (UB holds 196608 "
          "bytes)");
    TASSIGN(t, ~std::uint64_t{0} - 16);  // would wrap around: still past the end
    CHECK(take_error().find("ends past the buffer's end") != std::string::npos);
    // An unplaced tile is reported by the next instruction and nothing is written.
    TADDS(t, t, 1.0f);
    CHECK(take_error().find("TADDS: an operand Vec FLOAT32 [64, 64] tile was not placed by TASSIGN") == 0);
    TileAcc<float, 256, 256> acc;  // 256 KiB: more than the a2a3 L0C
    TASSIGN(acc, 0);
    CHECK(take_error().find("(L0C holds 131072 bytes)") != std::string::npos);
    VecT<float, 8, 8> m(8, 8);
    TASSIGN(m, 16);
    CHECK(take_error() == "TASSIGN: Vec tile at UB+0x10 is not 32-byte aligned");
    // The static form (a compile error past every platform's buffer) checks the core at run time.
    TASSIGN<0x100>(m);
    CHECK(take_error() == "");
    CHECK(m.sim_offset() == 0x100);
    TileAcc<float, 128, 128> acc64;  // 64 KiB: fits a5's 256 KiB L0C statically, not a2a3's 128 KiB at 96 KiB
    TASSIGN<96 * 1024>(acc64);
    CHECK(take_error().find("(L0C holds 131072 bytes)") != std::string::npos);
}

TEST_CASE("the runtime's buffers: a kernel context with buffers places tiles there") {
    std::vector<std::uint8_t> ub(1024), other(64);
    simpler::CoreBuffers bufs{};
    bufs.base[0] = ub.data();
    bufs.bytes[0] = ub.size();
    for (int b = 1; b < simpler::kCoreBufferCount; ++b) {
        bufs.base[b] = other.data();
        bufs.bytes[b] = other.size();
    }
    simpler::KernelContext ctx{0, 0, 0, nullptr, &bufs};
    simpler::current_kernel_context() = &ctx;
    fresh();
    VecT<float, 8, 8> t(8, 8);
    TASSIGN(t, 512);
    CHECK(reinterpret_cast<std::uint8_t*>(t.data()) == ub.data() + 512);
    TASSIGN(t, 1024 - 128);
    CHECK(take_error().find("(UB holds 1024 bytes)") != std::string::npos);
    simpler::current_kernel_context() = nullptr;
    fresh();
}

TEST_CASE("overlap: reading a tile another live tile clobbered is reported naming both") {
    fresh();
    VecT<float, 8, 16> a(8, 16), b(8, 16), d(8, 16);
    TASSIGN(a, 0);
    TASSIGN(b, 0x100);  // overlaps the second half of a (a is 0x200 bytes)
    TASSIGN(d, 0x400);
    TEXPANDS(a, 1.0f);
    TEXPANDS(b, 2.0f);  // clobbers a's rows 4..7
    pipe_barrier(PIPE_ALL);
    TADD(d, a, a);
    CHECK(take_error() ==
          "TADD reads tile Vec FLOAT32 [8, 16] at UB+0x0, but its bytes at UB+0x100 were last written through another "
          "live tile Vec FLOAT32 [8, 16] at UB+0x100 (by TEXPANDS): the two tiles overlap");
}

TEST_CASE("overlap: reusing an address after the earlier tile is dead is not reported") {
    fresh();
    VecT<float, 8, 16> a(8, 16), d(8, 16);
    VecT<float, 4, 16> b(4, 16);
    TASSIGN(a, 0);
    TASSIGN(d, 0x400);
    TEXPANDS(a, 1.0f);
    pipe_barrier(PIPE_ALL);
    TADD(d, a, a);  // a's last use
    pipe_barrier(PIPE_ALL);
    TASSIGN(b, 0x80);  // inside a's old bytes
    TEXPANDS(b, 3.0f);
    pipe_barrier(PIPE_ALL);
    TMUL(b, b, b);
    TADD(d, d, d);
    pipe_barrier(PIPE_ALL);
    CHECK(take_error() == "");
    CHECK(b.data()[0] == 9.0f);
    // A tile declared again (same type, shape and address) is the same tile: a loop-carried
    // value read through the new declaration is fine.
    VecT<float, 8, 16> d2(8, 16);
    TASSIGN(d2, 0x400);
    TADDS(d2, d2, 1.0f);
    CHECK(take_error() == "");
}

TEST_CASE("overlap: a tile over exactly the same bytes is the same storage seen through another shape") {
    fresh();
    Tile<TileType::Vec, float, 16, 1, BLayout::ColMajor, -1, -1> col(16, 1);
    Tile<TileType::Vec, float, 1, 16, BLayout::RowMajor, -1, -1> row(1, 16);
    Tile<TileType::Vec, float, 1, 8, BLayout::RowMajor, -1, -1> half(1, 8);
    TASSIGN(col, 0x200);
    TASSIGN(row, 0x200);
    TASSIGN(half, 0x200);  // the first half of the same bytes: a different storage
    TEXPANDS(col, 2.0f);
    pipe_barrier(PIPE_ALL);
    TMULS(row, row, 3.0f);
    pipe_barrier(PIPE_ALL);
    CHECK(col.GetValue(15) == 6.0f);
    CHECK(take_error() == "");
    pipe_barrier(PIPE_ALL);
    TADDS(half, half, 1.0f);
    const std::string err = take_error();
    INFO(err);
    CHECK(err.find("TADDS reads tile Vec FLOAT32 [1, 8] at UB+0x200") == 0);
}

TEST_CASE("overlap: a destination placed over part of its source is reported") {
    fresh();
    VecT<float, 8, 16> a(8, 16), d(8, 16);
    TASSIGN(a, 0);
    TASSIGN(d, 0x100);  // the second half of a's bytes
    TEXPANDS(a, 1.0f);
    pipe_barrier(PIPE_ALL);
    TEXP(d, a);
    CHECK(take_error() ==
          "TEXP writes tile Vec FLOAT32 [8, 16] at UB+0x100 over bytes at UB+0x100 of its source tile Vec FLOAT32 "
          "[8, 16] at UB+0x0: the two tiles overlap");
    fresh();
    TASSIGN(a, 0);
    TEXPANDS(a, 1.0f);
    pipe_barrier(PIPE_ALL);
    TEXP(a, a);  // in place: the same tile
    CHECK(take_error() == "");
}

TEST_CASE("pipe hazards: a missing wait_flag is reported; the synchronised program is not") {
    std::vector<float> x(64 * 64, 1.0f), y(64 * 64);
    Gt<float, 64, 64> gx(x.data()), gy(y.data());
    VecT<float, 64, 64> a(64, 64), b(64, 64);
    auto program = [&](bool load_sync, bool store_sync) {
        fresh();
        TASSIGN(a, 0);
        TASSIGN(b, 0x4000);
        TLOAD(a, gx);
        if (load_sync) sync(PIPE_MTE2, PIPE_V);
        TEXP(b, a);
        if (store_sync) sync(PIPE_V, PIPE_MTE3);
        TSTORE(gy, b);
        return take_error();
    };
    CHECK(program(true, true) == "");
    CHECK(program(false, true) ==
          "TEXP reads tile Vec FLOAT32 [64, 64] at UB+0x0 (bytes at UB+0x0) written by TLOAD on PIPE_MTE2 without "
          "set_flag/wait_flag(PIPE_MTE2, PIPE_V) or pipe_barrier(PIPE_ALL) between them");
    CHECK(program(true, false) ==
          "TSTORE reads tile Vec FLOAT32 [64, 64] at UB+0x4000 (bytes at UB+0x4000) written by TEXP on PIPE_V without "
          "set_flag/wait_flag(PIPE_V, PIPE_MTE3) or pipe_barrier(PIPE_ALL) between them");
}

TEST_CASE_FIXTURE(LoadedTile, "pipe hazards: WAR (a load overwriting a tile a store still reads) and the event's timing") {
    start();
    sync(PIPE_MTE2, PIPE_MTE3);
    TSTORE(gy, a);
    TLOAD(a, gx);  // overwrites a while the store may still read it
    CHECK(take_error() ==
          "TLOAD writes tile Vec FLOAT32 [16, 16] at UB+0x0 (bytes at UB+0x0) last read by TSTORE on PIPE_MTE3 without "
          "set_flag/wait_flag(PIPE_MTE3, PIPE_MTE2) or pipe_barrier(PIPE_ALL) between them");
    // A set_flag issued before the access does not order it.
    fresh();
    TASSIGN(a, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID1);
    TLOAD(a, gx);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID1);
    TADDS(a, a, 1.0f);
    CHECK(take_error().substr(0, 16) == "TADDS reads tile");
    // A wait with nothing set would hang the device.
    fresh();
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID2);
    CHECK(take_error() ==
          "wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID2) with no matching set_flag pending (the device would wait forever)");
}

TEST_CASE("events: a set_flag of an event still pending is reported; distinct ids or pairs are not") {
    fresh();
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID3);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID4);   // another id: another event
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID3);  // another pipe pair: another event
    CHECK(take_error() == "");
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID3);
    CHECK(take_error() ==
          "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID3) while the previous set_flag of that event is not waited for (two "
          "pending events share one id)");
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID3);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID4);
    wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID3);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID3);  // waited for: the id is free again
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID3);
    CHECK(take_error() == "");
    set_flag(PIPE_V, PIPE_MTE3, static_cast<event_t>(8));
    CHECK(take_error() == "set_flag: event id 8 is not one of EVENT_ID0..EVENT_ID7");
}

TEST_CASE_FIXTURE(LoadedTile, "pipe hazards: orderings are transitive through events; pipe_barrier(PIPE_ALL) orders everything") {
    start();
    sync(PIPE_MTE2, PIPE_V);
    TADDS(a, a, 1.0f);
    sync(PIPE_V, PIPE_MTE3);
    TSTORE(gy, a);  // MTE3 knows MTE2's load is done through V
    CHECK(take_error() == "");
    CHECK(y[0] == 3.0f);
    start();
    pipe_barrier(PIPE_ALL);
    TADDS(a, a, 1.0f);
    pipe_barrier(PIPE_ALL);
    TSTORE(gy, a);
    pipe_barrier(PIPE_ALL);
    TLOAD(a, gx);
    CHECK(take_error() == "");
    // A barrier on one pipe does not order other pipes.
    start();
    pipe_barrier(PIPE_V);
    TADDS(a, a, 1.0f);
    CHECK(take_error().substr(0, 16) == "TADDS reads tile");
    // Scalar access runs on PIPE_S.
    start();
    (void)a.GetValue(0);
    CHECK(take_error().substr(0, 19) == "GetValue reads tile");
    CHECK(take_error() == "");
}

TEST_CASE_FIXTURE(LoadedTile, "state resets with each kernel invocation") {
    start();
    fresh();  // the next kernel on this core: the previous kernel's pending load is done
    TASSIGN(a, 0);
    TADDS(a, a, 1.0f);
    CHECK(take_error() == "");
}
