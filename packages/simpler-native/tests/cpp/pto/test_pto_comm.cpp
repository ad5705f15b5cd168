// PTO-ISA's communication instructions in our backend (pto/comm/pto_comm_inst.hpp) and the
// kernel-side comm helpers built on them (simpler/kernel_comm.hpp, kernel_collectives.hpp), with
// two to four "ranks" in one process: one buffer holds every rank's window back to back, and each
// rank is a thread whose kernel context names its own CommContext, as a rank process's chip does.
// The host path (CommPath::Host) is served by a function that applies each request to the target
// rank's part of the same buffer, as a peer's host process would to its private window.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pto/comm/pto_comm_inst.hpp"
#include "pto_test_util.hpp"
#include "simpler/kernel_collectives.hpp"
#include "simpler/kernel_comm.hpp"

using namespace pto;
using ptotest::take_error;
using ptotest::VecT;
using simpler::ChipTensor;
using simpler::CommContext;
using simpler::CommPath;
using simpler::CommWindow;
using simpler::KernelContext;
namespace sk = simpler::kernel;

namespace {

constexpr std::uint64_t kStride = 4096;

// A row-major descriptor of `shape` over `base` (backing `bytes` long).
template <class T>
ChipTensor compact(const T* base, std::uint64_t bytes, std::initializer_list<std::uint32_t> shape) {
    ChipTensor t;
    std::memset(&t, 0, sizeof t);
    t.buffer.addr = reinterpret_cast<std::uintptr_t>(base);
    t.buffer.size = bytes;
    t.ndims = static_cast<std::uint32_t>(shape.size());
    t.dtype = static_cast<std::uint8_t>(sim::comm::dtype_code<T>());
    t.address_space = static_cast<std::uint8_t>(simpler::AddressSpace::DEVICE);
    int i = 0;
    for (std::uint32_t s : shape) t.shapes[i++] = s;
    std::uint32_t s = 1;
    for (int d = static_cast<int>(t.ndims) - 1; d >= 0; --d) {
        t.strides[d] = s;
        s *= t.shapes[d];
    }
    return t;
}

template <class T>
constexpr std::uint8_t code() {
    return static_cast<std::uint8_t>(sim::comm::dtype_code<T>());
}

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
    void enter(std::uint32_t r) { simpler::current_kernel_context() = &kctx[r]; }
    float* of(std::uint32_t r) { return mem.data() + r * kStride / sizeof(float); }
    template <class T>
    T* at(std::uint32_t r, std::uint64_t offset) {
        return reinterpret_cast<T*>(reinterpret_cast<char*>(of(r)) + offset);
    }
    // Rank r's view of its window as a tensor of T at byte `offset` in the window.
    template <class T>
    ChipTensor view(std::uint32_t r, std::initializer_list<std::uint32_t> shape, std::uint64_t offset = 0) {
        return compact(at<T>(r, offset), kStride - offset, shape);
    }

    std::uint32_t nranks;
    std::vector<float> mem;
    CommWindow window{};
    std::vector<CommContext> ctx;
    std::vector<KernelContext> kctx;
};

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
        return at == r->nbytes ? 0
                               : (std::snprintf(error, error_len, "runs hold %llu bytes, request says %llu",
                                                static_cast<unsigned long long>(at),
                                                static_cast<unsigned long long>(r->nbytes)),
                                  1);
    }

    simpler::CommHostOps ops{};
    std::mutex mu;
    std::vector<simpler::CommHostRequest> requests;
};

struct Leave {
    ~Leave() { simpler::current_kernel_context() = nullptr; }
};

bool has(const std::string& s, const char* part) {
    if (s.find(part) != std::string::npos) return true;
    MESSAGE("not found: ", part, " in: ", s);
    return false;
}

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

template <class W>
bool cells_zero(W& w, std::uint64_t offset, std::uint32_t n) {
    for (std::uint32_t r = 0; r < w.nranks; ++r)
        for (std::uint32_t i = 0; i < n; ++i)
            if (w.template at<std::int32_t>(r, offset)[i] != 0) return false;
    return true;
}

}  // namespace

TEST_CASE("TLOAD/TSTORE through a peer's view reach its window; TSTORE's AtomicAdd form adds") {
    World w(2);
    Leave leave;
    for (int i = 0; i < 64; ++i) w.of(1)[i] = static_cast<float>(i);
    w.enter(0);
    ptotest::fresh();
    const ChipTensor mine = w.view<float>(0, {1, 64});
    CHECK(sk::comm_rank(mine) == 0);
    CHECK(sk::comm_nranks(mine) == 2);
    VecT<float, 1, 64> t(1, 64);
    TASSIGN(t, 0x0);
    sk::GmView<float> peer, self;
    REQUIRE(sk::peer_gm_view<float>(peer, "remote_load", mine, 1, code<float>(), {0, 0}, 1, 64));
    REQUIRE(sk::peer_gm_view<float>(self, "remote_store", mine, 0, code<float>(), {0, 0}, 1, 64));
    TLOAD(t, peer);
    pipe_barrier(PIPE_ALL);
    TSTORE<decltype(t), sk::GmView<float>, AtomicType::AtomicAdd>(peer, t);
    pipe_barrier(PIPE_ALL);
    CHECK(w.of(1)[7] == 14.0f);
    TSTORE(self, t);
    CHECK(w.of(0)[7] == 7.0f);
    CHECK(take_error().empty());
}

TEST_CASE("a peer outside the ranks, a tensor outside the windows and a missing context are reported") {
    World w(2);
    Leave leave;
    w.enter(0);
    sk::GmView<float> v;
    CHECK_FALSE(sk::peer_gm_view<float>(v, "remote_load", w.view<float>(0, {1, 64}), 2, code<float>(), {0, 0}, 1, 64));
    CHECK(has(take_error(), "remote_load: peer 2 outside the ranks [0, 2)"));
    std::vector<float> elsewhere(64);
    CHECK_FALSE(sk::peer_gm_view<float>(v, "remote_load", compact(elsewhere.data(), 256, {1, 64}), 1, code<float>(),
                                        {0, 0}, 1, 64));
    CHECK(has(take_error(), "is not in a window of rank 0"));
    CHECK_FALSE(sk::peer_gm_view<float>(v, "remote_load", w.view<float>(0, {1, 64}), 1, code<float>(), {0, 0}, 2, 64));
    CHECK(has(take_error(), "outside the tensor's last dims"));
    simpler::current_kernel_context() = nullptr;
    CHECK(sk::comm_rank(w.view<float>(0, {1, 64})) == 0);
    CHECK(has(take_error(), "comm_rank: no comm context"));
}

TEST_CASE("TNOTIFY sets or adds to the peer's cell; TWAIT and TTEST see it") {
    World w(2);
    Leave leave;
    w.enter(0);
    const ChipTensor sig0 = w.view<std::int32_t>(0, {2, 1});
    comm::Signal cell;
    REQUIRE(sk::signal_cell(cell, "notify", sig0, 1, {1, 0}));
    comm::TNOTIFY(cell, 5, comm::NotifyOp::Set);
    comm::TNOTIFY(cell, 2, comm::NotifyOp::AtomicAdd);
    CHECK(w.at<std::int32_t>(1, 0)[1] == 7);
    w.enter(1);
    REQUIRE(sk::signal_cell(cell, "wait", w.view<std::int32_t>(1, {2, 1}), -1, {1, 0}));
    comm::TWAIT(cell, 7, comm::WaitCmp::EQ);
    comm::TWAIT(cell, 6, comm::WaitCmp::GE);
    CHECK(comm::TTEST(cell, 7, comm::WaitCmp::LE));
    CHECK_FALSE(comm::TTEST(cell, 7, comm::WaitCmp::NE));
    CHECK(take_error().empty());
    CHECK_FALSE(sk::signal_cell(cell, "notify", w.view<float>(1, {1, 4}), 0, {0, 0}));
    CHECK(has(take_error(), "notify: a signal is an INT32 tensor"));
    std::int32_t v = 0;
    CHECK_FALSE(sk::int32_value("notify", std::int64_t{1} << 40, &v));
    CHECK(has(take_error(), "does not fit an INT32 signal"));
}

TEST_CASE("a TWAIT past the timeout fails naming the rank, the cell, the condition and the value seen") {
    World w(2, 20'000'000);  // 20 ms
    Leave leave;
    w.enter(1);
    comm::Signal cell;
    REQUIRE(sk::signal_cell(cell, "wait", w.view<std::int32_t>(1, {2, 1}), -1, {1, 0}));
    comm::TNOTIFY(cell, 2, comm::NotifyOp::Set);
    comm::TWAIT(cell, 3, comm::WaitCmp::GE);
    const std::string e = take_error();
    CHECK(has(e, "TWAIT: rank 1 timed out after 0.02 s waiting for its signal (element 1 of window buffer 0)"));
    CHECK(has(e, "to become >= 3; the value seen was 2"));
}

TEST_CASE("barrier: every rank passes together, many times, and leaves the cells at zero") {
    constexpr std::uint32_t n = 4;
    constexpr int rounds = 200;
    World w(n);
    std::vector<int> bad(n, 0);
    // each round: write the round number into the own data cell, barrier, check every peer's
    // cell, barrier (so nobody overwrites a cell a peer still reads)
    CHECK(each_rank(w, [&](std::uint32_t r) {
        const ChipTensor sig = w.view<std::int32_t>(r, {n, 1});
        for (int k = 1; k <= rounds; ++k) {
            *w.at<std::int32_t>(r, 1024) = k;
            sk::barrier(sig);
            for (std::uint32_t p = 0; p < n; ++p)
                if (__atomic_load_n(w.at<std::int32_t>(p, 1024), __ATOMIC_SEQ_CST) != k) ++bad[r];
            sk::barrier(sig);
        }
    }));
    for (std::uint32_t r = 0; r < n; ++r) CHECK(bad[r] == 0);
    CHECK(cells_zero(w, 0, n));
}

TEST_CASE("TPUT and TGET copy regions between ranks; TPUT's AtomicAdd accumulates; shapes must agree") {
    World w(2);
    Leave leave;
    for (int i = 0; i < 8; ++i) w.of(0)[i] = static_cast<float>(i);
    w.enter(0);
    ptotest::fresh();
    VecT<float, 16, 64> stage(16, 64);
    TASSIGN(stage, 0x0);
    const ChipTensor mine = w.view<float>(0, {2, 4});
    sk::GmN<float> dst, src;
    REQUIRE(sk::tensor_gm<float>(dst, "put", "dst", mine, code<float>(), 1));
    REQUIRE(sk::tensor_gm<float>(src, "put", "src", mine, code<float>(), -1));
    comm::TPUT(dst, src, stage);
    comm::TPUT(dst, src, stage, AtomicType::AtomicAdd);
    CHECK(w.of(1)[3] == 6.0f);
    REQUIRE(sk::tensor_gm<float>(dst, "put", "dst", mine, code<float>(), 1, {1, 1}, {1, 2}));  // row 1, cols 1..2
    REQUIRE(sk::tensor_gm<float>(src, "put", "src", mine, code<float>(), -1, {0, 0}, {1, 2}));
    comm::TPUT<AtomicType::AtomicAdd>(dst, src, stage);
    CHECK(w.of(1)[5] == 10.0f);  // 2 * 5 + 0
    CHECK(w.of(1)[6] == 13.0f);  // 2 * 6 + 1
    std::vector<float> local(8, -1.0f);
    REQUIRE(sk::tensor_gm<float>(dst, "get", "dst", compact(local.data(), 32, {2, 4}), code<float>(), -1));
    REQUIRE(sk::tensor_gm<float>(src, "get", "src", mine, code<float>(), 1));
    comm::TGET(dst, src, stage);
    CHECK(local[7] == 14.0f);
    CHECK(take_error().empty());
    REQUIRE(sk::tensor_gm<float>(dst, "get", "dst", compact(local.data(), 32, {4, 2}), code<float>(), -1));
    comm::TGET(dst, src, stage);
    CHECK(has(take_error(), "TGET: destination and source shapes differ"));
    CHECK_FALSE(sk::tensor_gm<float>(dst, "put", "dst", mine, code<float>(), 1, {1, 3}, {1, 2}));
    CHECK(has(take_error(), "put: dst region [3, 5) of dim 1 is outside its extent 4"));
    VecT<float, 16, 64> unplaced(16, 64);
    comm::TPUT(dst, src, unplaced);
    CHECK(has(take_error(), "TPUT: the staging tile was not placed by TASSIGN"));
}

TEST_CASE("TREDUCE, TBROADCAST, TGATHER and TSCATTER over a group of one process's tensors") {
    World w(3);
    Leave leave;
    w.enter(0);
    ptotest::fresh();
    VecT<float, 16, 64> a(16, 64), b(16, 64);
    TASSIGN(a, 0x0);
    TASSIGN(b, 0x1000);
    float data[3][4] = {{1, 2, 3, 4}, {10, 20, 30, 40}, {-5, 50, 0, 7}};
    float out[12] = {};
    sk::GmN<float> g[3], dst;
    for (int r = 0; r < 3; ++r)
        REQUIRE(sk::tensor_gm<float>(g[r], "t", "g", compact(data[r], 16, {1, 4}), code<float>(), -1));
    comm::ParallelGroup<sk::GmN<float>> group(g, 3, 1);
    REQUIRE(sk::tensor_gm<float>(dst, "t", "dst", compact(out, 16, {1, 4}), code<float>(), -1));
    comm::TREDUCE(group, dst, a, b, comm::ReduceOp::Sum);
    CHECK(out[0] == 6.0f);
    CHECK(out[1] == 72.0f);
    comm::TREDUCE(group, dst, a, b, comm::ReduceOp::Max);
    CHECK(out[3] == 40.0f);
    comm::TREDUCE(group, dst, a, b, comm::ReduceOp::Min);
    CHECK(out[0] == -5.0f);
    comm::TBROADCAST(group, g[1], a);  // the root's tensor into every other member
    CHECK(data[0][2] == 30.0f);
    CHECK(data[2][0] == 10.0f);
    data[0][0] = 1;
    data[2][0] = 3;
    REQUIRE(sk::tensor_gm<float>(dst, "t", "dst", compact(out, 48, {3, 4}), code<float>(), -1));
    comm::TGATHER(group, dst, a);  // rank r's row at row r
    CHECK(out[0] == 1.0f);
    CHECK(out[4] == 10.0f);
    CHECK(out[8] == 3.0f);
    out[5] = 99.0f;
    comm::TSCATTER(group, dst, a);
    CHECK(data[1][1] == 99.0f);
    CHECK(take_error().empty());
    sk::GmN<float> wrong;
    REQUIRE(sk::tensor_gm<float>(wrong, "t", "dst", compact(out, 48, {2, 4}), code<float>(), -1));
    comm::TGATHER(group, wrong, a);
    CHECK(has(take_error(), "TGATHER: dst has 2 rows in dim 3, expected 3 ranks x 1"));
}

TEST_CASE("host path: TLOAD/TSTORE/TPUT/TGET on a peer's window are requests with coalesced runs") {
    HostWorld w(2);
    Leave leave;
    for (int i = 0; i < 64; ++i) w.of(1)[i] = static_cast<float>(i);
    w.enter(0);
    ptotest::fresh();
    const ChipTensor mine = w.view<float>(0, {4, 16});
    VecT<float, 2, 8> t(2, 8);
    TASSIGN(t, 0x0);
    sk::GmView<float> peer;
    REQUIRE(sk::peer_gm_view<float>(peer, "remote_load", mine, 1, code<float>(), {1, 4}, 2, 8));
    TLOAD(t, peer);  // rows 1..2, cols 4..11 of peer 1
    pipe_barrier(PIPE_ALL);
    CHECK(t.GetValue(0) == 20.0f);
    CHECK(t.GetValue(15) == 43.0f);
    REQUIRE(w.requests.size() == 1);
    CHECK(w.requests[0].op == simpler::CommHostOp::Read);
    CHECK(w.requests[0].run_count == 2);  // one run per row
    CHECK(w.requests[0].nbytes == 64);
    REQUIRE(sk::peer_gm_view<float>(peer, "remote_store", mine, 1, code<float>(), {0, 0}, 2, 8));
    pipe_barrier(PIPE_ALL);
    TSTORE<decltype(t), sk::GmView<float>, AtomicType::AtomicAdd>(peer, t);
    CHECK(w.requests.back().op == simpler::CommHostOp::AtomicAdd);
    CHECK(w.of(1)[0] == 20.0f);   // 0 + 20
    CHECK(w.of(1)[16] == 52.0f);  // 16 + 36
    REQUIRE(sk::peer_gm_view<float>(peer, "remote_store", mine, 0, code<float>(), {0, 0}, 2, 8));
    const std::size_t before = w.requests.size();
    TSTORE(peer, t);  // this rank's own window is memory of this process
    CHECK(w.requests.size() == before);
    CHECK(w.of(0)[1] == 21.0f);
    VecT<float, 16, 64> stage(16, 64);
    TASSIGN(stage, 0x1000);
    sk::GmN<float> d, s;
    REQUIRE(sk::tensor_gm<float>(d, "put", "dst", mine, code<float>(), 1));
    REQUIRE(sk::tensor_gm<float>(s, "put", "src", mine, code<float>(), -1));
    comm::TPUT(d, s, stage);  // the whole window: one run
    CHECK(w.requests.back().run_count == 1);
    CHECK(w.requests.back().op == simpler::CommHostOp::Write);
    CHECK(w.of(1)[1] == 21.0f);
    std::vector<float> local(64, -1.0f);
    REQUIRE(sk::tensor_gm<float>(d, "get", "dst", compact(local.data(), 256, {4, 16}), code<float>(), -1));
    REQUIRE(sk::tensor_gm<float>(s, "get", "src", mine, code<float>(), 1));
    comm::TGET(d, s, stage);
    CHECK(local[1] == 21.0f);
    CHECK(take_error().empty());
}

TEST_CASE("host path: TNOTIFY is a request, TWAIT reads the own cell, a failed request names both ranks") {
    HostWorld w(2, 20'000'000);
    Leave leave;
    w.enter(0);
    comm::Signal cell;
    REQUIRE(sk::signal_cell(cell, "notify", w.view<std::int32_t>(0, {2, 1}), 1, {1, 0}));
    comm::TNOTIFY(cell, 5, comm::NotifyOp::Set);
    comm::TNOTIFY(cell, 2, comm::NotifyOp::AtomicAdd);
    CHECK(w.requests.back().op == simpler::CommHostOp::NotifyAdd);
    CHECK(w.requests.back().value == 2);
    w.enter(1);
    REQUIRE(sk::signal_cell(cell, "wait", w.view<std::int32_t>(1, {2, 1}), -1, {1, 0}));
    comm::TWAIT(cell, 7, comm::WaitCmp::EQ);
    CHECK(take_error().empty());
    REQUIRE(sk::signal_cell(cell, "wait", w.view<std::int32_t>(1, {2, 1}), 0, {0, 0}));
    comm::TWAIT(cell, 1, comm::WaitCmp::GE);
    CHECK(has(take_error(), "TWAIT: the signal lies in rank 0's window; a rank waits on its own signals"));
    w.ops = simpler::CommHostOps{&w, [](void*, const simpler::CommHostRequest*, char* e, std::uint64_t n) {
                                     std::snprintf(e, n, "peer is gone");
                                     return 1;
                                 }};
    comm::TNOTIFY(cell, 1, comm::NotifyOp::Set);
    CHECK(has(take_error(), "TNOTIFY: rank 1's request to rank 0 failed: peer is gone"));
}

TEST_CASE("host path: a barrier of four ranks, many times, leaves the cells at zero") {
    constexpr std::uint32_t n = 4;
    HostWorld w(n);
    CHECK(each_rank(w, [&](std::uint32_t r) {
        const ChipTensor sig = w.view<std::int32_t>(r, {n, 1});
        for (int k = 0; k < 50; ++k) sk::barrier(sig);
    }));
    CHECK(cells_zero(w, 0, n));
}

namespace {

// allreduce (mesh Sum, ring Max, mesh Prod, ring Prod) of [5, 9] floats per rank, on one pair of
// signals; each result checked against the reduction computed here.
template <class W>
void check_allreduce(W& w) {
    const std::uint32_t n = w.nranks;
    constexpr std::uint32_t rows = 5, cols = 9;
    const auto value = [](std::uint32_t r, std::uint32_t i, int round) {
        return 0.5f + static_cast<float>((r * 7 + i * 3 + static_cast<std::uint32_t>(round)) % 5) * 0.25f;
    };
    std::vector<int> bad(n, 0);
    CHECK(each_rank(w, [&](std::uint32_t r) {
        ptotest::fresh();
        VecT<float, 16, 64> acc(16, 64), recv(16, 64);
        TASSIGN(acc, 0x0);
        TASSIGN(recv, 0x1000);
        const ChipTensor data = w.template view<float>(r, {rows, cols}, 1024);
        const ChipTensor mesh = w.template view<std::int32_t>(r, {n, 1});
        const ChipTensor ring = w.template view<std::int32_t>(r, {2 * (n - 1), n}, 256);
        float* mine = w.template at<float>(r, 1024);
        for (int round = 0; round < 4; ++round) {
            const sk::CollOp op = round == 0 ? sk::CollOp::Sum : round == 1 ? sk::CollOp::Max : sk::CollOp::Prod;
            const bool use_ring = round % 2 == 1;
            for (std::uint32_t i = 0; i < rows * cols; ++i) mine[i] = value(r, i, round);
            if (!sk::allreduce<float>(data, use_ring ? ring : mesh, op, use_ring, acc, recv)) return;
            for (std::uint32_t i = 0; i < rows * cols; ++i) {
                float want = value(0, i, round);
                for (std::uint32_t p = 1; p < n; ++p) {
                    const float v = value(p, i, round);
                    want = op == sk::CollOp::Sum ? want + v : op == sk::CollOp::Max ? (v > want ? v : want) : want * v;
                }
                if (mine[i] != want) ++bad[r];
            }
            sk::barrier(mesh);  // every rank has checked before the next round rewrites the windows
        }
    }));
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
    CHECK(each_rank(w, [&](std::uint32_t r) {
        ptotest::fresh();
        VecT<std::int32_t, 16, 64> stage(16, 64);
        TASSIGN(stage, 0x0);
        const ChipTensor sig = w.template view<std::int32_t>(r, {n, 1});
        const ChipTensor recv = w.template view<std::int32_t>(r, {n, 1}, 128);
        const ChipTensor target = w.template view<std::int32_t>(r, {n * m, cols}, 1024);
        std::vector<std::int32_t> input(n * m * cols), counts(n);
        for (std::uint32_t i = 0; i < n * m * cols; ++i) input[i] = static_cast<std::int32_t>(r * 1000 + i);
        for (std::uint32_t d = 0; d < n; ++d) counts[d] = static_cast<std::int32_t>((r + d) % 4);
        const ChipTensor in = compact(input.data(), input.size() * 4, {n * m, cols});
        const ChipTensor sc = compact(counts.data(), counts.size() * 4, {n});
        if (!sk::all_to_all_v<std::int32_t>(in, target, sig, sc, recv, stage)) return;
        const auto* got = w.template at<std::int32_t>(r, 1024);
        const auto* rc = w.template at<std::int32_t>(r, 128);
        for (std::uint32_t s = 0; s < n; ++s) {
            const std::int32_t sent = static_cast<std::int32_t>((s + r) % 4);
            if (rc[s] != (sent > static_cast<std::int32_t>(m) ? static_cast<std::int32_t>(m) : sent)) ++bad[r];
            for (std::uint32_t i = 0; i < m * cols; ++i)
                if (got[s * m * cols + i] != static_cast<std::int32_t>(s * 1000 + r * m * cols + i)) ++bad[r];
        }
    }));
    for (std::uint32_t r = 0; r < n; ++r) CHECK(bad[r] == 0);
    CHECK(cells_zero(w, 0, n));
}

// broadcast from the last rank, allgather of one row, reduce_scatter (Sum) of n rows, all_to_all.
template <class W>
void check_others(W& w) {
    const std::uint32_t n = w.nranks;
    constexpr std::uint32_t cols = 3;
    std::vector<int> bad(n, 0);
    CHECK(each_rank(w, [&](std::uint32_t r) {
        ptotest::fresh();
        VecT<float, 16, 64> acc(16, 64), recv(16, 64);
        TASSIGN(acc, 0x0);
        TASSIGN(recv, 0x1000);
        const ChipTensor sig = w.template view<std::int32_t>(r, {n, 1});
        const ChipTensor row = w.template view<float>(r, {1, cols}, 512);
        const ChipTensor blocks = w.template view<float>(r, {n, cols}, 1024);
        float* rowp = w.template at<float>(r, 512);
        float* bp = w.template at<float>(r, 1024);
        for (std::uint32_t c = 0; c < cols; ++c) rowp[c] = static_cast<float>(r * 10 + c);
        if (!sk::broadcast<float>(row, sig, n - 1, acc)) return;
        for (std::uint32_t c = 0; c < cols; ++c)
            if (rowp[c] != static_cast<float>((n - 1) * 10 + c)) ++bad[r];
        std::vector<float> local(cols);
        for (std::uint32_t c = 0; c < cols; ++c) local[c] = static_cast<float>(r + c * 100);
        if (!sk::allgather<float>(compact(local.data(), cols * 4, {cols}), blocks, sig, acc)) return;
        for (std::uint32_t p = 0; p < n; ++p)
            for (std::uint32_t c = 0; c < cols; ++c)
                if (bp[p * cols + c] != static_cast<float>(p + c * 100)) ++bad[r];
        sk::barrier(sig);
        for (std::uint32_t i = 0; i < n * cols; ++i) bp[i] = static_cast<float>(r + i);
        if (!sk::reduce_scatter<float>(blocks, sig, sk::CollOp::Sum, acc, recv)) return;
        for (std::uint32_t c = 0; c < cols; ++c) {
            float want = 0;
            for (std::uint32_t p = 0; p < n; ++p) want += static_cast<float>(p + r * cols + c);
            if (bp[r * cols + c] != want) ++bad[r];
        }
        std::vector<float> input(n * cols);
        for (std::uint32_t i = 0; i < n * cols; ++i) input[i] = static_cast<float>(r * 100 + i);
        if (!sk::all_to_all<float>(compact(input.data(), n * cols * 4, {n, cols}), blocks, sig, acc)) return;
        for (std::uint32_t s = 0; s < n; ++s)
            for (std::uint32_t c = 0; c < cols; ++c)
                if (bp[s * cols + c] != static_cast<float>(s * 100 + r * cols + c)) ++bad[r];
    }));
    for (std::uint32_t r = 0; r < n; ++r) CHECK(bad[r] == 0);
    CHECK(cells_zero(w, 0, n));
}

}  // namespace

TEST_CASE("allreduce mesh and ring, Sum, Max and Prod, 2 and 4 ranks, both paths; signals end at zero") {
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

TEST_CASE("broadcast, allgather, reduce_scatter and all_to_all on 3 ranks, both paths") {
    World w(3);
    check_others(w);
    HostWorld h(3);
    check_others(h);
}

TEST_CASE("a ring allreduce with too small a signal and a broadcast root outside the ranks are reported") {
    World w(2);
    Leave leave;
    w.enter(0);
    ptotest::fresh();
    VecT<float, 16, 64> acc(16, 64), recv(16, 64);
    TASSIGN(acc, 0x0);
    TASSIGN(recv, 0x1000);
    const ChipTensor data = w.view<float>(0, {1, 8}, 1024);
    CHECK_FALSE(sk::allreduce<float>(data, w.view<std::int32_t>(0, {1, 2}), sk::CollOp::Sum, true, acc, recv));
    CHECK(has(take_error(), "mode ring needs a [2 * (nranks - 1), nranks] = [2, 2] signal"));
    CHECK_FALSE(sk::broadcast<float>(data, w.view<std::int32_t>(0, {2, 1}), 2, acc));
    CHECK(has(take_error(), "pld.tensor.broadcast: root 2 outside the ranks [0, 2)"));
    CHECK_FALSE(sk::reduce_scatter<float>(w.view<float>(0, {3, 8}, 1024), w.view<std::int32_t>(0, {2, 1}),
                                          sk::CollOp::Sum, acc, recv));
    CHECK(has(take_error(), "the window's leading dim 3 does not split into 2 equal blocks"));
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
        comm::Signal cell;
        if (sk::signal_cell(cell, "notify", w.view<std::int32_t>(0, {1}), 1, {0}))
            comm::TNOTIFY(cell, 1, comm::NotifyOp::AtomicAdd);
    });
    {
        sk::DeferredWaits d;
        CHECK(d.add(sig, {0}, 1));
    }  // waits here for the peer's notify
    peer.join();
    CHECK(w.at<std::int32_t>(1, 0)[0] == 1);
    CHECK(take_error().empty());
    {
        sk::DeferredWaits d;
        CHECK(d.add(sig, {0}, 5));
    }
    CHECK(has(take_error(), "TWAIT: rank 1 timed out"));
}
