// TRANDOM (Philox-4x32 words filling a tile) against a reference written here: a scalar Philox
// checked against Random123's published known answers, and the official CPU backend's schedule
// as a closed form (the element (r, c) is word (c % 256) / 64 of the counter
// base + (r * loops + c / 256) * (Cols / 4) + c % 64, in 128-bit arithmetic).
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pto_test_util.hpp"

using namespace pto;
using ptotest::fresh;
using ptotest::Gt;
using ptotest::take_error;
using ptotest::VecT;

namespace {

using u32 = std::uint32_t;
using u128 = unsigned __int128;
using Block = std::array<u32, 4>;

void barrier() { pipe_barrier(PIPE_ALL); }

// Philox-4x32-R as the paper defines it: each round multiplies words 0 and 2, swaps the pairs
// through the xor with the other words and the key, then bumps the key.
Block philox(Block x, u32 k0, u32 k1, int rounds) {
    for (int round = 0; round < rounds; ++round) {
        const std::uint64_t a = 0xD2511F53ull * x[0], b = 0xCD9E8D57ull * x[2];
        x = Block{u32(b >> 32) ^ x[1] ^ k0, u32(b), u32(a >> 32) ^ x[3] ^ k1, u32(a)};
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return x;
}

u128 to128(const u32 (&c)[4]) {
    return (u128(c[3]) << 96) | (u128(c[2]) << 64) | (u128(c[1]) << 32) | u128(c[0]);
}
Block from128(u128 v) { return Block{u32(v), u32(v >> 32), u32(v >> 64), u32(v >> 96)}; }

// The word TRANDOM writes at (r, c) of a tile of `cols` columns with `vc` valid columns.
u32 expected(int r, int c, int cols, int vc, const u32 (&key)[2], const u32 (&ctr)[4], int rounds) {
    const int loops = (vc + 255) / 256;
    const u128 n = to128(ctr) + u128((r * loops + c / 256)) * u128(cols / 4) + u128(c % 64);
    return philox(from128(n), key[0], key[1], rounds)[(c % 256) / 64];
}

template <class T>
u32 bits(T v) {
    u32 u;
    std::memcpy(&u, &v, 4);
    return u;
}

// TRANDOM<rounds> on an [R, C] tile with valid shape [vr, vc], the rest prefilled with a marker;
// checks every element against the reference and that key and counter are unchanged.
template <class T, int R, int C, int Rounds = 10>
void check_fill(int vr, int vc, const u32 (&key0)[2], const u32 (&ctr0)[4]) {
    fresh();
    VecT<T, R, C> t(R, C);
    TASSIGN(t, 0x100);
    for (int i = 0; i < R * C; ++i) t.data()[i] = static_cast<T>(0x5A5A5A5Au);
    t.SetValidShape(vr, vc);
    TRandomKey key = {key0[0], key0[1]};
    TRandomCounter counter = {ctr0[0], ctr0[1], ctr0[2], ctr0[3]};
    TRANDOM<Rounds>(t, key, counter);
    barrier();
    CHECK(take_error() == "");
    int bad = 0;
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            const u32 want = r < vr && c < vc ? expected(r, c, C, vc, key0, ctr0, Rounds) : 0x5A5A5A5Au;
            if (bits(t.data()[r * C + c]) != want && bad++ < 5) {
                INFO("[", R, ", ", C, "] valid [", vr, ", ", vc, "] at (", r, ", ", c, ")");
                CHECK(bits(t.data()[r * C + c]) == want);
            }
        }
    CHECK(bad == 0);
    CHECK(std::memcmp(key, key0, sizeof key) == 0);
    CHECK(std::memcmp(counter, ctr0, sizeof counter) == 0);
}

struct Kat {
    int rounds;
    u32 ctr[4];
    u32 key[2];
    u32 out[4];
};

// Random123's tests/kat_vectors for philox4x32 (counter words 0..3, key words 0..1, output
// words 0..3, in the file's order).
const Kat kKat[] = {
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

const u32 kKey[2] = {0x12345678u, 0x9abcdef0u};
const u32 kCtr[4] = {0x00000007u, 0x00000001u, 0x80000000u, 0xdeadbeefu};

}  // namespace

TEST_CASE("the reference Philox gives Random123's known answers (7 and 10 rounds)") {
    for (const Kat& k : kKat) {
        const Block got = philox(Block{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}, k.key[0], k.key[1], k.rounds);
        for (int w = 0; w < 4; ++w) CHECK(got[w] == k.out[w]);
    }
}

TEST_CASE("TRANDOM's lane 0 words are Philox-4x32 of the counter itself: the known answers, at columns 0, 64, 128, 192") {
    for (const Kat& k : kKat) {
        fresh();
        VecT<std::uint32_t, 1, 256> t(1, 256);
        TASSIGN(t, 0);
        TRandomKey key = {k.key[0], k.key[1]};
        TRandomCounter counter = {k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]};
        if (k.rounds == 7)
            TRANDOM<7>(t, key, counter);
        else
            TRANDOM(t, key, counter);  // Rounds defaults to 10
        barrier();
        CHECK(take_error() == "");
        for (int w = 0; w < 4; ++w) CHECK(t.data()[64 * w] == k.out[w]);
    }
}

TEST_CASE("TRANDOM fills the valid shape in the official CPU backend's schedule") {
    SUBCASE("[4, 256] uint32: one loop a row, the counter 64 on a row") {
        check_fill<std::uint32_t, 4, 256>(4, 256, kKey, kCtr);
    }
    SUBCASE("[8, 128] int32: the counter 32 on a row (rows share counters)") {
        check_fill<std::int32_t, 8, 128>(8, 128, kKey, kCtr);
    }
    SUBCASE("[16, 64] int32, 7 rounds") { check_fill<std::int32_t, 16, 64, 7>(16, 64, kKey, kCtr); }
    SUBCASE("[4, 512] uint32: two loops a row, the counter 128 on a loop") {
        check_fill<std::uint32_t, 4, 512>(4, 512, kKey, kCtr);
    }
    SUBCASE("[16, 128] tile, valid [10, 100]: the rest untouched") {
        check_fill<std::uint32_t, 16, 128>(10, 100, kKey, kCtr);
        check_fill<std::int32_t, 16, 128, 7>(10, 100, kKey, kCtr);
    }
    SUBCASE("[2, 512] tile, valid [2, 300]: a partial second loop") {
        check_fill<std::uint32_t, 2, 512>(2, 300, kKey, kCtr);
    }
    SUBCASE("a counter whose word 0 is near 2^32 - 1 carries into word 1, and 2^128 - 1 wraps to 0") {
        const u32 low[4] = {0xffffffe0u, 0x00000005u, 0u, 0u};
        check_fill<std::uint32_t, 4, 256>(4, 256, kKey, low);
        const u32 top[4] = {0xfffffff0u, 0xffffffffu, 0xffffffffu, 0xffffffffu};
        check_fill<std::int32_t, 2, 256>(2, 256, kKey, top);
    }
    SUBCASE("an empty valid shape writes nothing") { check_fill<std::uint32_t, 4, 64>(0, 0, kKey, kCtr); }
}

TEST_CASE("TRANDOM: the lanes and rows of the schedule (words 64 columns apart, rows of [R, 128] sharing counters)") {
    fresh();
    VecT<std::uint32_t, 2, 128> t(2, 128);
    TASSIGN(t, 0);
    TRandomKey key = {1u, 2u};
    TRandomCounter counter = {0xfffffffeu, 0u, 0u, 0u};
    TRANDOM(t, key, counter);
    barrier();
    // lane 1 of row 0 encrypts 0xffffffff, lane 2 the carried 2^32
    const Block l1 = philox(Block{0xffffffffu, 0u, 0u, 0u}, 1u, 2u, 10);
    const Block l2 = philox(Block{0u, 1u, 0u, 0u}, 1u, 2u, 10);
    CHECK(t.data()[1] == l1[0]);
    CHECK(t.data()[65] == l1[1]);
    CHECK(t.data()[2] == l2[0]);
    CHECK(t.data()[66] == l2[1]);
    // row 1 starts 128 / 4 = 32 counters on, which row 0's lanes 32..63 already used
    for (int i = 0; i < 32; ++i) {
        CHECK(t.data()[128 + i] == t.data()[32 + i]);
        CHECK(t.data()[128 + 64 + i] == t.data()[64 + 32 + i]);
    }
    CHECK(take_error() == "");
}

TEST_CASE("TRANDOM: an unplaced tile is reported; the write is recorded over the valid shape on PIPE_V") {
    fresh();
    VecT<std::int32_t, 4, 64> t(4, 64);
    TRandomKey key = {0u, 0u};
    TRandomCounter counter = {0u, 0u, 0u, 0u};
    TRANDOM(t, key, counter);
    CHECK(take_error().find("TRANDOM: an operand Vec INT32 [4, 64] tile was not placed by TASSIGN") == 0);

    std::vector<std::int32_t> y(2 * 64);
    Gt<std::int32_t, 2, 64> gy(y.data());
    VecT<std::int32_t, 2, 64> rows23(2, 64);  // rows 2 and 3 of t's bytes
    fresh();
    TASSIGN(t, 0);
    TASSIGN(rows23, 2 * 64 * 4);
    t.SetValidShape(2, 64);
    TRANDOM<7>(t, key, counter);
    TSTORE(gy, rows23);  // bytes TRANDOM did not write: no hazard
    CHECK(take_error() == "");
    barrier();  // the store has read rows23 before TRANDOM writes row 2
    t.SetValidShape(3, 64);
    TRANDOM<7>(t, key, counter);
    TSTORE(gy, rows23);  // row 2 was written on PIPE_V, with no event to MTE3
    const std::string err = take_error();
    INFO(err);
    CHECK(err.find("written by TRANDOM on PIPE_V without set_flag/wait_flag(PIPE_V, PIPE_MTE3)") != std::string::npos);
}
