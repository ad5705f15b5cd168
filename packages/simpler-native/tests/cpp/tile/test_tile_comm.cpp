// Cross-rank operations (simpler/tile/comm.hpp) with two or four "ranks" in one process: one
// buffer holds every rank's window back to back, and each rank is a thread whose kernel context
// names its own CommContext, as a rank process's chip does.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tile_test_util.hpp"

using namespace simpler::tile;
using simpler::ChipTensor;
using simpler::CommContext;
using simpler::CommPath;
using simpler::CommWindow;
using simpler::KernelContext;
using tiletest::compact;
using tiletest::take_error;

namespace {

constexpr std::uint64_t kStride = 4096;

// `nranks` windows of one buffer: rank r's at r * kStride; one comm context per rank.
struct World {
    explicit World(std::uint32_t n, std::int64_t timeout_ns = 2'000'000'000)
        : nranks(n), mem(n * kStride / sizeof(float) + 16, 0.0f) {
        window = CommWindow{reinterpret_cast<std::uintptr_t>(mem.data()), kStride, kStride};
        for (std::uint32_t r = 0; r < n; ++r)
            ctx.push_back(CommContext{r, n, CommPath::SharedMemory, 1, timeout_ns, &window, nullptr});
        kctx.resize(n);
        for (std::uint32_t r = 0; r < n; ++r) kctx[r] = KernelContext{0, r, 0, &ctx[r], nullptr};
    }
    // Run the rest of the thread as rank r.
    void enter(std::uint32_t r) { simpler::current_kernel_context() = &kctx[r]; }
    float* of(std::uint32_t r) { return mem.data() + r * kStride / sizeof(float); }
    // Rank r's view of its window as a [rows, cols] tensor of T at byte `offset` in the window.
    template <class T>
    ChipTensor view(std::uint32_t r, std::initializer_list<std::uint32_t> shape, std::uint64_t offset = 0) {
        auto* base = reinterpret_cast<T*>(reinterpret_cast<char*>(of(r)) + offset);
        return compact(base, kStride - offset, shape);
    }

    std::uint32_t nranks;
    std::vector<float> mem;
    CommWindow window{};
    std::vector<CommContext> ctx;
    std::vector<KernelContext> kctx;
};

struct Leave {
    ~Leave() { simpler::current_kernel_context() = nullptr; }
};

}  // namespace

TEST_CASE("remote_load and remote_store reach the peer's window; Add accumulates") {
    World w(2);
    Leave leave;
    for (int i = 0; i < 64; ++i) w.of(1)[i] = static_cast<float>(i);
    w.enter(0);
    const ChipTensor mine = w.view<float>(0, {1, 64});
    CHECK(comm_rank(mine) == 0);
    CHECK(comm_nranks(mine) == 2);
    VecTile<float, 1, 64> t;
    REQUIRE(remote_load(t, mine, 1, {0, 0}));
    CHECK(t(0, 5) == 5.0f);
    REQUIRE(remote_store(mine, t, 1, {0, 0}, AtomicType::Add));
    CHECK(w.of(1)[7] == 14.0f);
    REQUIRE(remote_store(mine, t, 0, {0, 0}));
    CHECK(w.of(0)[7] == 7.0f);
    CHECK(take_error().empty());
}

TEST_CASE("a peer outside the ranks, a tensor outside the windows and a missing context are reported") {
    World w(2);
    Leave leave;
    w.enter(0);
    VecTile<float, 1, 64> t;
    CHECK_FALSE(remote_load(t, w.view<float>(0, {1, 64}), 2, {0, 0}));
    CHECK(take_error().find("peer 2 outside the ranks [0, 2)") != std::string::npos);
    std::vector<float> elsewhere(64);
    CHECK_FALSE(remote_load(t, compact(elsewhere.data(), 256, {1, 64}), 1, {0, 0}));
    CHECK(take_error().find("is not in a window of rank 0") != std::string::npos);
    simpler::current_kernel_context() = nullptr;
    CHECK_FALSE(remote_load(t, w.view<float>(0, {1, 64}), 1, {0, 0}));
    CHECK(take_error().find("tile remote_load: no comm context") != std::string::npos);
}

TEST_CASE("notify sets or adds to the peer's cell; wait sees it") {
    World w(2);
    Leave leave;
    w.enter(0);
    const ChipTensor sig0 = w.view<std::int32_t>(0, {2, 1});
    REQUIRE(notify(sig0, 1, {1, 0}, 5, NotifyOp::Set));
    REQUIRE(notify(sig0, 1, {1, 0}, 2, NotifyOp::AtomicAdd));
    w.enter(1);
    REQUIRE(wait(w.view<std::int32_t>(1, {2, 1}), {1, 0}, 7, WaitCmp::Eq));
    REQUIRE(wait(w.view<std::int32_t>(1, {2, 1}), {1, 0}, 6, WaitCmp::Ge));
    CHECK(take_error().empty());
    CHECK_FALSE(notify(w.view<float>(1, {1, 4}), 0, {0, 0}, 1, NotifyOp::Set));
    CHECK(take_error().find("a signal is an INT32 tensor") != std::string::npos);
}

TEST_CASE("a wait past the timeout fails naming the rank, the cell, the condition and the value seen") {
    World w(2, 20'000'000);  // 20 ms
    Leave leave;
    w.enter(1);
    const ChipTensor sig = w.view<std::int32_t>(1, {2, 1});
    REQUIRE(notify(sig, 1, {1, 0}, 2, NotifyOp::Set));
    CHECK_FALSE(wait(sig, {1, 0}, 3, WaitCmp::Ge));
    const std::string e = take_error();
    CHECK(e.find("tile wait: rank 1 timed out after 0.02 s waiting for its signal [1, 0]") != std::string::npos);
    CHECK(e.find("to become >= 3; the value seen was 2") != std::string::npos);
}

TEST_CASE("barrier: every rank passes together, many times, and leaves the cells at zero") {
    constexpr std::uint32_t n = 4;
    constexpr int rounds = 200;
    World w(n);
    std::vector<std::thread> ranks;
    std::vector<int> bad(n, 0);
    // each round: write the round number into the own data cell, barrier, check every peer's
    // cell, barrier (so nobody overwrites a cell a peer still reads)
    for (std::uint32_t r = 0; r < n; ++r)
        ranks.emplace_back([&, r] {
            Leave leave;
            w.enter(r);
            const ChipTensor sig = w.view<std::int32_t>(r, {n, 1});
            const ChipTensor data = w.view<std::int32_t>(r, {1, 1}, 1024);
            VecTile<std::int32_t, 1, 1> one, peer;
            for (int k = 1; k <= rounds; ++k) {
                one(0, 0) = k;
                store(data, one, {0, 0});
                barrier(sig);
                for (std::uint32_t p = 0; p < n; ++p) {
                    remote_load(peer, data, p, {0, 0});
                    if (peer(0, 0) != k) ++bad[r];
                }
                barrier(sig);
            }
            if (!take_error().empty()) ++bad[r];
        });
    for (auto& t : ranks) t.join();
    for (std::uint32_t r = 0; r < n; ++r) {
        CHECK(bad[r] == 0);
        const auto* cells = reinterpret_cast<const std::int32_t*>(w.of(r));
        for (std::uint32_t i = 0; i < n; ++i) CHECK(cells[i] == 0);
    }
}

TEST_CASE("put and get copy whole windows; put with Add accumulates") {
    World w(2);
    Leave leave;
    for (int i = 0; i < 8; ++i) w.of(0)[i] = static_cast<float>(i);
    w.enter(0);
    const ChipTensor mine = w.view<float>(0, {2, 4});
    REQUIRE(put(mine, 1, mine));
    REQUIRE(put(mine, 1, mine, AtomicType::Add));
    CHECK(w.of(1)[3] == 6.0f);
    std::vector<float> local(8, -1.0f);
    REQUIRE(get(compact(local.data(), 32, {2, 4}), 1, mine));
    CHECK(local[7] == 14.0f);
    CHECK_FALSE(get(compact(local.data(), 32, {4, 2}), 1, mine));
    CHECK(take_error().find("tile get: dst and src shapes differ") != std::string::npos);
}

// ---- CommPath::Host: every access is a request to the "host process" (here a function that
// applies it to the target rank's part of the same buffer, as a peer's host process would to
// its private window), and the tile library never touches a peer's memory itself.

namespace {

struct HostWorld : World {
    explicit HostWorld(std::uint32_t n, std::int64_t timeout_ns = 2'000'000'000) : World(n, timeout_ns) {
        ops = simpler::CommHostOps{this, &HostWorld::serve};
        for (auto& c : ctx) {
            c.path = CommPath::Host;
            c.host = &ops;
        }
    }
    static int serve(void* self, const simpler::CommHostRequest* r, char* error, std::uint64_t error_len) {
        auto* w = static_cast<HostWorld*>(self);
        if (r->peer >= w->nranks || r->window != 0) {
            std::snprintf(error, error_len, "bad target %u/%u", r->peer, r->window);
            return 1;
        }
        std::lock_guard<std::mutex> lk(w->mu);
        w->requests.push_back(*r);
        auto* mem = reinterpret_cast<unsigned char*>(w->of(r->peer));
        auto* data = static_cast<unsigned char*>(r->data);
        std::uint64_t at = 0;
        for (std::uint64_t i = 0; i < r->run_count; ++i) {
            const simpler::CommHostRun run = r->runs[i];
            unsigned char* m = mem + run.offset;
            switch (r->op) {
                case simpler::CommHostOp::Read: std::memcpy(data + at, m, run.nbytes); break;
                case simpler::CommHostOp::Write: std::memcpy(m, data + at, run.nbytes); break;
                case simpler::CommHostOp::AtomicAdd:
                    for (std::uint64_t k = 0; k < run.nbytes; k += sizeof(float)) {
                        float a, b;
                        std::memcpy(&a, m + k, 4);
                        std::memcpy(&b, data + at + k, 4);
                        a += b;
                        std::memcpy(m + k, &a, 4);
                    }
                    break;
                case simpler::CommHostOp::NotifyAdd:
                    __atomic_fetch_add(reinterpret_cast<std::int32_t*>(m), static_cast<std::int32_t>(r->value),
                                       __ATOMIC_SEQ_CST);
                    break;
                case simpler::CommHostOp::NotifySet:
                    __atomic_store_n(reinterpret_cast<std::int32_t*>(m), static_cast<std::int32_t>(r->value),
                                     __ATOMIC_SEQ_CST);
                    break;
            }
            at += run.nbytes;
        }
        return at == r->nbytes ? 0 : (std::snprintf(error, error_len, "runs hold %llu bytes, request says %llu",
                                                    static_cast<unsigned long long>(at),
                                                    static_cast<unsigned long long>(r->nbytes)),
                                      1);
    }

    simpler::CommHostOps ops{};
    std::mutex mu;
    std::vector<simpler::CommHostRequest> requests;
};

}  // namespace

TEST_CASE("host path: remote_load/remote_store/put/get are requests with coalesced runs") {
    HostWorld w(2);
    Leave leave;
    for (int i = 0; i < 64; ++i) w.of(1)[i] = static_cast<float>(i);
    w.enter(0);
    const ChipTensor mine = w.view<float>(0, {4, 16});
    VecTile<float, 2, 8> t;
    REQUIRE(remote_load(t, mine, 1, {1, 4}));  // rows 1..2, cols 4..11 of peer 1
    CHECK(t(0, 0) == 20.0f);
    CHECK(t(1, 7) == 43.0f);
    REQUIRE(w.requests.size() == 1);
    CHECK(w.requests[0].op == simpler::CommHostOp::Read);
    CHECK(w.requests[0].run_count == 2);  // one run per row
    CHECK(w.requests[0].nbytes == 64);
    REQUIRE(remote_store(mine, t, 1, {0, 0}, AtomicType::Add));
    CHECK(w.of(1)[0] == 20.0f);   // 0 + 20
    CHECK(w.of(1)[16] == 52.0f);  // 16 + 36
    REQUIRE(remote_store(mine, t, 0, {0, 0}));  // this rank's own window goes through the host too
    CHECK(w.of(0)[17] == 37.0f);
    CHECK(w.requests.back().op == simpler::CommHostOp::Write);
    REQUIRE(put(mine, 1, mine));  // whole window: one run
    CHECK(w.requests.back().run_count == 1);
    CHECK(w.of(1)[17] == 37.0f);
    std::vector<float> local(64, -1.0f);
    REQUIRE(get(compact(local.data(), 256, {4, 16}), 1, mine));
    CHECK(local[17] == 37.0f);
    CHECK(take_error().empty());
}

TEST_CASE("host path: notify is a request, wait reads the own cell, a failed request names both ranks") {
    HostWorld w(2, 20'000'000);
    Leave leave;
    w.enter(0);
    const ChipTensor sig = w.view<std::int32_t>(0, {2, 1});
    REQUIRE(notify(sig, 1, {1, 0}, 5, NotifyOp::Set));
    REQUIRE(notify(sig, 1, {1, 0}, 2, NotifyOp::AtomicAdd));
    CHECK(w.requests.back().op == simpler::CommHostOp::NotifyAdd);
    CHECK(w.requests.back().value == 2);
    w.enter(1);
    REQUIRE(wait(w.view<std::int32_t>(1, {2, 1}), {1, 0}, 7, WaitCmp::Eq));
    CHECK_FALSE(wait(w.view<std::int32_t>(1, {2, 1}), {0, 0}, 1, WaitCmp::Ge));
    CHECK(take_error().find("tile wait: rank 1 timed out after 0.02 s") != std::string::npos);
    w.ops = simpler::CommHostOps{&w, [](void*, const simpler::CommHostRequest*, char* e, std::uint64_t n) {
                                     std::snprintf(e, n, "peer is gone");
                                     return 1;
                                 }};
    CHECK_FALSE(notify(w.view<std::int32_t>(1, {2, 1}), 0, {0, 0}, 1, NotifyOp::Set));
    CHECK(take_error().find("tile notify: rank 1's request to rank 0 failed: peer is gone") != std::string::npos);
}

TEST_CASE("host path: a barrier of four ranks, many times, leaves the cells at zero") {
    constexpr std::uint32_t n = 4;
    HostWorld w(n);
    std::vector<std::thread> ranks;
    std::vector<int> bad(n, 0);
    for (std::uint32_t r = 0; r < n; ++r)
        ranks.emplace_back([&, r] {
            Leave leave;
            w.enter(r);
            const ChipTensor sig = w.view<std::int32_t>(r, {n, 1});
            for (int k = 0; k < 50; ++k) barrier(sig);
            if (!take_error().empty()) ++bad[r];
        });
    for (auto& t : ranks) t.join();
    for (std::uint32_t r = 0; r < n; ++r) {
        CHECK(bad[r] == 0);
        const auto* cells = reinterpret_cast<const std::int32_t*>(w.of(r));
        for (std::uint32_t i = 0; i < n; ++i) CHECK(cells[i] == 0);
    }
}

// ---------------------------------------------------------------- collectives (collectives.hpp)

namespace {

// Run `body(r)` as every rank of `w`, one thread each; true when no rank reported an error.
template <class W, class F>
bool each_rank(W& w, F body) {
    std::vector<std::thread> ranks;
    std::vector<std::string> errors(w.nranks);
    for (std::uint32_t r = 0; r < w.nranks; ++r)
        ranks.emplace_back([&, r] {
            Leave leave;
            w.enter(r);
            body(r);
            errors[r] = take_error();
        });
    for (auto& t : ranks) t.join();
    bool ok = true;
    for (std::uint32_t r = 0; r < w.nranks; ++r)
        if (!errors[r].empty()) {
            MESSAGE("rank ", r, ": ", errors[r]);
            ok = false;
        }
    return ok;
}

// Cells [0, n) of rank r's window at byte `offset`, as int32.
template <class W>
bool cells_zero(W& w, std::uint64_t offset, std::uint32_t n) {
    for (std::uint32_t r = 0; r < w.nranks; ++r) {
        const auto* c = reinterpret_cast<const std::int32_t*>(reinterpret_cast<const char*>(w.of(r)) + offset);
        for (std::uint32_t i = 0; i < n; ++i)
            if (c[i] != 0) return false;
    }
    return true;
}

// allreduce (mesh Sum, ring Max, mesh Prod) of 37 floats per rank, three rounds on one pair of
// signals; each result checked against the reduction computed here.
template <class W>
void check_allreduce(W& w) {
    const std::uint32_t n = w.nranks;
    constexpr int len = 37;
    const auto value = [](std::uint32_t r, int i, int round) {
        return 0.5f + static_cast<float>((r * 7 + i * 3 + round) % 5) * 0.25f;
    };
    std::vector<int> bad(n, 0);
    const bool ok = each_rank(w, [&](std::uint32_t r) {
        const ChipTensor data = w.template view<float>(r, {1, len}, 1024);
        const ChipTensor mesh = w.template view<std::int32_t>(r, {n, 1});
        const ChipTensor ring = w.template view<std::int32_t>(r, {2 * (n - 1), n}, 256);
        auto* mine = reinterpret_cast<float*>(reinterpret_cast<char*>(w.of(r)) + 1024);
        for (int round = 0; round < 3; ++round) {
            const ReduceOp op = round == 0 ? ReduceOp::Sum : round == 1 ? ReduceOp::Max : ReduceOp::Prod;
            for (int i = 0; i < len; ++i) mine[i] = value(r, i, round);
            if (!allreduce(data, round == 1 ? ring : mesh, op, round == 1)) return;
            for (int i = 0; i < len; ++i) {
                float want = value(0, i, round);
                for (std::uint32_t p = 1; p < n; ++p) {
                    const float v = value(p, i, round);
                    want = op == ReduceOp::Sum ? want + v : op == ReduceOp::Max ? (v > want ? v : want) : want * v;
                }
                if (mine[i] != want) ++bad[r];
            }
            barrier(mesh);  // every rank has checked before the next round rewrites the windows
        }
    });
    CHECK(ok);
    for (std::uint32_t r = 0; r < n; ++r) CHECK(bad[r] == 0);
    CHECK(cells_zero(w, 0, n));
    CHECK(cells_zero(w, 256, 2 * (n - 1) * n));
}

// all_to_all_v of blocks of 2 rows x 4 INT32 columns; send_counts from 0 to 3 (clamped to 2).
template <class W>
void check_all_to_all_v(W& w) {
    const std::uint32_t n = w.nranks;
    constexpr std::uint32_t m = 2, cols = 4;
    std::vector<int> bad(n, 0);
    const bool ok = each_rank(w, [&](std::uint32_t r) {
        const ChipTensor sig = w.template view<std::int32_t>(r, {n, 1});
        const ChipTensor recv = w.template view<std::int32_t>(r, {n, 1}, 128);
        const ChipTensor target = w.template view<std::int32_t>(r, {n * m, cols}, 1024);
        std::vector<std::int32_t> input(n * m * cols), counts(n);
        for (std::uint32_t i = 0; i < n * m * cols; ++i) input[i] = static_cast<std::int32_t>(r * 1000 + i);
        for (std::uint32_t d = 0; d < n; ++d) counts[d] = static_cast<std::int32_t>((r + d) % 4);
        const ChipTensor in = compact(input.data(), input.size() * 4, {n * m, cols});
        const ChipTensor sc = compact(counts.data(), counts.size() * 4, {n});
        if (!all_to_all_v(in, target, sig, sc, recv)) return;
        const auto* got = reinterpret_cast<const std::int32_t*>(reinterpret_cast<char*>(w.of(r)) + 1024);
        const auto* rc = reinterpret_cast<const std::int32_t*>(reinterpret_cast<char*>(w.of(r)) + 128);
        for (std::uint32_t s = 0; s < n; ++s) {
            const std::int32_t sent = static_cast<std::int32_t>((s + r) % 4);
            if (rc[s] != (sent > static_cast<std::int32_t>(m) ? static_cast<std::int32_t>(m) : sent)) ++bad[r];
            for (std::uint32_t i = 0; i < m * cols; ++i)
                if (got[s * m * cols + i] != static_cast<std::int32_t>(s * 1000 + r * m * cols + i)) ++bad[r];
        }
    });
    CHECK(ok);
    for (std::uint32_t r = 0; r < n; ++r) CHECK(bad[r] == 0);
    CHECK(cells_zero(w, 0, n));
}

}  // namespace

TEST_CASE("allreduce mesh and ring, 2 and 4 ranks, shared memory and host path; signals end at zero") {
    for (std::uint32_t n : {2u, 4u}) {
        World w(n);
        check_allreduce(w);
        HostWorld h(n);
        check_allreduce(h);
    }
}

TEST_CASE("all_to_all_v moves whole blocks and sets the clamped counts, on both paths") {
    World w(3);
    check_all_to_all_v(w);
    HostWorld h(4);
    check_all_to_all_v(h);
}

TEST_CASE("a ring allreduce with too small a signal and a broadcast root outside the ranks are reported") {
    World w(2);
    Leave leave;
    w.enter(0);
    const ChipTensor data = w.view<float>(0, {1, 8}, 1024);
    CHECK_FALSE(allreduce(data, w.view<std::int32_t>(0, {1, 2}), ReduceOp::Sum, true));
    CHECK(take_error().find("mode ring needs a [2 * (nranks - 1), nranks] = [2, 2] signal") != std::string::npos);
    CHECK_FALSE(broadcast(data, w.view<std::int32_t>(0, {2, 1}), 2));
    CHECK(take_error().find("root 2 outside the ranks [0, 2)") != std::string::npos);
}

TEST_CASE("deferred waits run when the kernel's scope ends; one that never holds times out") {
    World w(2, 50'000'000);
    Leave leave;
    w.enter(1);
    const ChipTensor sig = w.view<std::int32_t>(1, {1});
    std::thread peer([&] {
        Leave l;
        w.enter(0);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        notify(w.view<std::int32_t>(0, {1}), 1, {0}, 1, NotifyOp::AtomicAdd);
    });
    {
        DeferredWaits d;
        CHECK(d.add(sig, {0}, 1, WaitCmp::Ge));
    }  // waits here for the peer's notify
    peer.join();
    CHECK(reinterpret_cast<const std::int32_t*>(w.of(1))[0] == 1);
    CHECK(take_error().empty());
    {
        DeferredWaits d;
        CHECK(d.add(sig, {0}, 5, WaitCmp::Ge));
    }
    CHECK(take_error().find("tile wait: rank 1 timed out") != std::string::npos);
}
