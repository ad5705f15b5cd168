// C++ side of the chip scheduler: kernels and orchestrations linked into the test (no loader),
// so the TMR rules are checked without Python: RAW/WAR/WAW ordering, explicit dependencies,
// back-pressure through tiny rings, deadlock reporting, kernel errors naming task and kernel; the
// host_build_graph runtime on the same programs.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chip_test_util.hpp"
#include "simpler/runtime/orchestration.hpp"

using namespace simpler;
using namespace simpler::chip;
using namespace chiptest;

namespace {

// x = x * 2 + k (InOut), slow enough that ordering bugs show.
void k_muladd(std::int64_t* args) {
    const auto& x = *reinterpret_cast<const ChipTensor*>(args[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    for (std::uint32_t i = 0; i < x.shapes[0]; ++i) elems(x)[i] = elems(x)[i] * 2 + args[1];
}

// b = a
void k_copy(std::int64_t* args) {
    const auto& a = *reinterpret_cast<const ChipTensor*>(args[0]);
    const auto& b = *reinterpret_cast<const ChipTensor*>(args[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    for (std::uint32_t i = 0; i < b.shapes[0]; ++i) elems(b)[i] = elems(a)[i];
}

// x[0] += 1 after sleeping args[1] microseconds: a task that outlasts its orchestration.
void k_slow(std::int64_t* args) {
    const auto& x = *reinterpret_cast<const ChipTensor*>(args[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(args[1]));
    elems(x)[0] += 1;
}

std::shared_ptr<ChipProgram> program(const char* name, OrchestrationEntryFn entry, std::vector<ArgDirection> sig) {
    return program_of(name, entry, std::move(sig),
                      {kernel("muladd", k_muladd, {ArgDirection::InOut, ArgDirection::Scalar}),
                       kernel("copy", k_copy, {ArgDirection::In, ArgDirection::Out}),
                       kernel("fail", k_fail, {ArgDirection::In}, take_test_error),
                       kernel("slow", k_slow, {ArgDirection::InOut, ArgDirection::Scalar})});
}

// x (n elements): copy halves around and apply muladd chains; result depends on order.
std::int32_t orch_chain(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor& x = args->tensor(0);
    const std::uint32_t half = x.shapes[0] / 2;
    ChipTensor lo = slice_1d(x, 0, half), hi = slice_1d(x, half, half);
    for (int r = 0; r < 6; ++r) {
        if (o.submit(0, {inout(lo)}, {scalar_bits<std::int64_t>(r)}) < 0) return 1;  // WAW/RAW chain on lo
        if (o.submit(1, {in(lo), out(hi)}) < 0) return 1;                             // RAW on lo, WAW on hi
        o.scope_begin();
        if (o.submit(0, {inout(lo)}, {scalar_bits<std::int64_t>(1)}) < 0) return 1;   // WAR against the copy
        o.scope_end();
    }
    return 0;
}

std::int32_t orch_fail(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    if (o.submit(0, {inout(args->tensor(0))}, {scalar_bits<std::int64_t>(0)}) < 0) return 1;
    return o.submit(2, {in(args->tensor(0))}) < 0;
}

std::int32_t orch_heap_deadlock(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs*) {
    Orchestrator o(api, ctx);
    ChipTensor a, b;
    const std::uint32_t shape[1] = {100};
    if (o.alloc_tensor(DataType::INT64, 1, shape, &a) != 0) return 1;  // 800 bytes, never freed at depth 0
    return o.alloc_tensor(DataType::INT64, 1, shape, &b) != 0;       // cannot fit in 1024
}

// x (4 quarters), `rounds` (scalar 0) rounds: muladd every quarter, then copy one quarter onto
// the next: 5 tasks a round, each depending on the earlier ones that touch its quarters (RAW,
// WAR, WAW). Values double every round: keep rounds x runs on one x under ~55 (no overflow).
std::int32_t orch_long(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor& x = args->tensor(0);
    const std::uint32_t q = x.shapes[0] / 4;
    const auto rounds = static_cast<int>(args->scalar_as<std::int64_t>(0));
    for (int r = 0; r < rounds; ++r) {
        for (std::uint32_t i = 0; i < 4; ++i)
            if (o.submit(0, {inout(slice_1d(x, i * q, q))}, {scalar_bits<std::int64_t>(r + i)}) < 0) return 1;
        const std::uint32_t from = r % 4, to = (r + 1) % 4;
        if (o.submit(1, {in(slice_1d(x, from * q, q)), out(slice_1d(x, to * q, q))}) < 0) return 1;
    }
    return 0;
}

void reference_long(std::vector<std::int64_t>& x, int rounds) {
    const std::size_t q = x.size() / 4;
    for (int r = 0; r < rounds; ++r) {
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = 0; j < q; ++j) x[i * q + j] = x[i * q + j] * 2 + r + static_cast<std::int64_t>(i);
        const std::size_t from = r % 4, to = (r + 1) % 4;
        for (std::size_t j = 0; j < q; ++j) x[to * q + j] = x[from * q + j];
    }
}

// One task that sleeps 30 ms, then returns: the task finishes long after the orchestration.
std::int32_t orch_one_slow(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    return o.submit(3, {inout(args->tensor(0))}, {scalar_bits<std::int64_t>(30'000)}) < 0;
}

// An orchestration that blocks until the test opens the gate (bounded: 20 s, then it fails).
std::atomic<int> g_gate{0};
std::atomic<int> g_gate_entered{0};
std::int32_t orch_gated(const SimplerOrchApi*, SimplerOrchContext*, const ChipStorageTaskArgs*) {
    g_gate_entered.store(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (g_gate.load() == 0) {
        if (std::chrono::steady_clock::now() > deadline) return 7;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
}

// Which thread ran the orchestration, and whether the gate was open when it started.
std::atomic<std::thread::id> g_orch_thread{};
std::atomic<int> g_orch_saw_gate{-1};
std::int32_t orch_where(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    g_orch_thread.store(std::this_thread::get_id());
    g_orch_saw_gate.store(g_gate.load());
    Orchestrator o(api, ctx);
    return o.submit(0, {inout(args->tensor(0))}, {scalar_bits<std::int64_t>(3)}) < 0;
}

void reference_chain(std::vector<std::int64_t>& x) {
    const std::size_t half = x.size() / 2;
    for (int r = 0; r < 6; ++r) {
        for (std::size_t i = 0; i < half; ++i) x[i] = x[i] * 2 + r;
        for (std::size_t i = 0; i < half; ++i) x[half + i] = x[i];
        for (std::size_t i = 0; i < half; ++i) x[i] = x[i] * 2 + 1;
    }
}

// One muladd, then a nonzero status: TMR has dispatched the task; HBG runs nothing.
std::int32_t orch_submit_then_fail(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    if (o.submit(0, {inout(args->tensor(0))}, {scalar_bits<std::int64_t>(1)}) < 0) return 1;
    return 5;
}

RunConfig tiny() {
    RunConfig c;
    c.task_window = {4, 4, 4, 4};
    c.dep_pool = {4, 4, 4, 4};
    c.heap = {1024, 1024, 1024, 1024};
    return c;
}

// orch_chain on x = 0..15, with the default rings and tiny ones: 18 tasks, reference_chain's result.
void check_chain(Chip& chip) {
    auto prog = program("chain", orch_chain, {ArgDirection::InOut});
    for (const RunConfig& cfg : {RunConfig{}, tiny()}) {
        std::vector<std::int64_t> x(16), expected(16);
        for (int i = 0; i < 16; ++i) x[i] = expected[i] = i;
        reference_chain(expected);
        auto run = chip.submit(prog, {vec(x)}, {}, cfg);
        REQUIRE(run->wait(30.0));
        CHECK(run->error() == "");
        CHECK(run->tasks_submitted() == 18);
        CHECK(x == expected);
    }
}

// orch_fail on x: the run fails naming the task and the kernel that reported the error.
void run_failing_kernel(Chip& chip, std::vector<std::int64_t>& x) {
    auto run = chip.submit(program("fails", orch_fail, {ArgDirection::InOut}), {vec(x)}, {}, RunConfig{});
    REQUIRE(run->wait(30.0));
    CHECK(run->error().find("task 1 (kernel 'fail' (func_id 2, AIV)) failed: synthetic kernel failure") !=
          std::string::npos);
}

}  // namespace

TEST_CASE("overlap dependencies give sequential results on two AIV threads, with tiny rings") {
    Chip chip(cores(0, 2));
    check_chain(chip);
}

TEST_CASE("a kernel error fails the run naming task and kernel; the chip stays usable") {
    Chip chip(cores(0, 1));
    std::vector<std::int64_t> x(4, 1);
    run_failing_kernel(chip, x);
    auto ok = chip.submit(program("chain", orch_chain, {ArgDirection::InOut}), {vec(x)}, {}, RunConfig{});
    REQUIRE(ok->wait(30.0));
    CHECK(ok->error() == "");
}

TEST_CASE("a heap that can never fit fails within bounded time") {
    Chip chip(cores(0, 1));
    std::vector<std::int64_t> x(4, 1);
    auto run = chip.submit(program("heap", orch_heap_deadlock, {ArgDirection::InOut}), {vec(x)}, {}, tiny());
    REQUIRE(run->wait(30.0));
    CHECK(run->error().find("deadlock: ring 0's heap of 1024 bytes cannot fit 832 bytes") != std::string::npos);
}

TEST_CASE("host-side checks reject bad arguments before anything runs") {
    Chip chip(cores(0, 1));
    std::vector<std::int64_t> x(4, 1);
    auto prog = program("chain", orch_chain, {ArgDirection::InOut});
    CHECK_THROWS_AS(chip.submit(prog, {}, {}, RunConfig{}), std::invalid_argument);
    ChipTensor bad = vec(x);
    bad.shapes[0] = 5;  // one element past the buffer
    CHECK_THROWS_AS(chip.submit(prog, {bad}, {}, RunConfig{}), std::out_of_range);
    RunConfig cfg;
    cfg.task_window[0] = 3;
    CHECK_THROWS_AS(chip.submit(prog, {vec(x)}, {}, cfg), std::invalid_argument);
}

TEST_CASE("aicpu_threads 1..4: sequential results on a long dependency-ordered graph; schedulers start on demand") {
    Chip chip(cores(0, 2));
    CHECK(chip.scheduler_threads() == 0);
    auto prog = program("long", orch_long, {ArgDirection::InOut, ArgDirection::Scalar});
    constexpr int kRounds = 50;  // 250 tasks
    std::uint32_t max_n = 1;
    for (std::uint32_t n : {1u, 2u, 3u, 4u, 1u}) {
        CAPTURE(n);
        std::vector<std::int64_t> x(32), expected(32);
        for (int i = 0; i < 32; ++i) x[i] = expected[i] = i % 7;
        reference_long(expected, kRounds);
        RunConfig cfg;
        cfg.aicpu_threads = n;
        auto run = chip.submit(prog, {vec(x)}, {kRounds}, cfg);
        REQUIRE(run->wait(60.0));
        CHECK(run->error() == "");
        CHECK(run->tasks_submitted() == 5 * kRounds);
        CHECK(run->tasks_executed() == 5 * kRounds);
        CHECK(x == expected);
        max_n = std::max(max_n, n);
        CHECK(chip.scheduler_threads() == static_cast<int>(max_n) - 1);  // started once, kept until close
    }
}

TEST_CASE("runs with different aicpu_threads overlap on one chip and still order by their tensors") {
    Chip chip(cores(0, 2));
    auto prog = program("long", orch_long, {ArgDirection::InOut, ArgDirection::Scalar});
    constexpr int kRounds = 10;  // 5 runs of 50 tasks on one x
    std::vector<std::int64_t> x(32), expected(32);
    for (int i = 0; i < 32; ++i) x[i] = expected[i] = i % 5;
    std::vector<std::shared_ptr<Run>> runs;
    for (std::uint32_t n : {3u, 1u, 2u, 1u, 3u}) {
        reference_long(expected, kRounds);
        RunConfig cfg;
        cfg.aicpu_threads = n;
        runs.push_back(chip.submit(prog, {vec(x)}, {kRounds}, cfg));  // queued back to back, not awaited
    }
    for (auto& run : runs) {
        REQUIRE(run->wait(60.0));
        CHECK(run->error() == "");
    }
    CHECK(x == expected);
    CHECK(chip.scheduler_threads() == 2);
    RunConfig bad;
    bad.aicpu_threads = 5;
    CHECK_THROWS_WITH_AS(chip.submit(prog, {vec(x)}, {kRounds}, bad), "aicpu_thread_num: expected a value in [1, 4], got 5",
                         std::invalid_argument);
    bad.aicpu_threads = 0;
    CHECK_THROWS_AS(chip.submit(prog, {vec(x)}, {kRounds}, bad), std::invalid_argument);
}

TEST_CASE("a run is done when its last task finishes, even while a later orchestration is still running") {
    for (std::uint32_t n : {1u, 2u}) {
        CAPTURE(n);
        Chip chip(cores(0, 1));
        g_gate.store(0);
        g_gate_entered.store(0);
        std::vector<std::int64_t> x(4, 0), y(4, 0);
        RunConfig cfg;
        cfg.aicpu_threads = n;
        auto first = chip.submit(program("one_slow", orch_one_slow, {ArgDirection::InOut}), {vec(x)}, {}, cfg);
        auto gated = chip.submit(program("gated", orch_gated, {ArgDirection::InOut}), {vec(y)}, {}, cfg);
        // The first run's task sleeps 30 ms after its orchestration returned; the gated
        // orchestration has started by then and does not return until the gate opens.
        const bool first_done = first->wait(10.0);
        const bool gated_running = g_gate_entered.load() == 1 && !gated->done();
        g_gate.store(1);
        REQUIRE(gated->wait(30.0));
        CHECK(first_done);
        CHECK(gated_running);
        CHECK(first->error() == "");
        CHECK(x[0] == 1);
        CHECK(gated->error() == "");
    }
}

TEST_CASE("orchestrate_on_caller: an idle chip orchestrates on the submitting thread, else on its orchestrator") {
    Chip chip(cores(0, 1));
    auto where = program("where", orch_where, {ArgDirection::InOut});
    for (bool on_caller : {true, false}) {
        CAPTURE(on_caller);
        std::vector<std::int64_t> x(4, 1);
        RunConfig cfg;
        cfg.orchestrate_on_caller = on_caller;
        g_gate.store(1);
        auto run = chip.submit(where, {vec(x)}, {}, cfg);
        REQUIRE(run->wait(10.0));
        CHECK(run->error() == "");
        CHECK(x[0] == 5);
        const bool here = g_orch_thread.load() == std::this_thread::get_id();
        CHECK(here == on_caller);
    }
    // A run in flight (queued for the orchestrator thread: a caller's own run is done when its
    // submit returns): the next run is queued for the orchestrator thread too, in order.
    RunConfig on_caller;
    on_caller.orchestrate_on_caller = true;
    std::vector<std::int64_t> x(4, 0);
    auto slow = chip.submit(program("one_slow", orch_one_slow, {ArgDirection::InOut}), {vec(x)}, {}, RunConfig{});
    auto next = chip.submit(where, {vec(x)}, {}, on_caller);
    REQUIRE(next->wait(10.0));
    CHECK(slow->done());
    CHECK(next->error() == "");
    CHECK(x[0] == 5);  // (0 + 1) * 2 + 3: the slow task first (WAW), then muladd
    const bool here = g_orch_thread.load() == std::this_thread::get_id();
    CHECK_FALSE(here);
}

TEST_CASE("orchestrate_on_caller: a run submitted while a caller orchestrates waits for it (FIFO, one at a time)") {
    Chip chip(cores(0, 1));
    g_gate.store(0);
    g_gate_entered.store(0);
    g_orch_saw_gate.store(-1);
    std::vector<std::int64_t> x(4, 0), y(4, 1);
    RunConfig on_caller;
    on_caller.orchestrate_on_caller = true;
    std::shared_ptr<Run> gated;
    std::thread caller([&] {
        gated = chip.submit(program("gated", orch_gated, {ArgDirection::InOut}), {vec(x)}, {}, on_caller);
    });
    while (g_gate_entered.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // The chip is busy with the caller's orchestration: this submit only queues.
    auto second = chip.submit(program("where", orch_where, {ArgDirection::InOut}), {vec(y)}, {}, on_caller);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(second->done());
    CHECK(g_orch_saw_gate.load() == -1);  // not started while the gated orchestration runs
    g_gate.store(1);
    caller.join();
    REQUIRE(gated->wait(30.0));
    REQUIRE(second->wait(30.0));
    CHECK(gated->error() == "");
    CHECK(second->error() == "");
    CHECK(g_orch_saw_gate.load() == 1);
    CHECK(y[0] == 5);
    CHECK(chip.wait_idle(10.0));
}

namespace {

// A host_build_graph chip with two AIV threads.
ChipOptions host_graph_options() {
    ChipOptions o;
    o.runtime = Runtime::HostBuildGraph;
    o.aic_threads = 0;
    o.aiv_threads = 2;
    return o;
}

// orch_long's 250 tasks (50 rounds) on x[i] = i % 7 + offset, against reference_long.
void check_long(Chip& chip, const RunConfig& cfg, int offset) {
    auto long_prog = program("long", orch_long, {ArgDirection::InOut, ArgDirection::Scalar});
    std::vector<std::int64_t> x(32), expected(32);
    for (int i = 0; i < 32; ++i) x[i] = expected[i] = i % 7 + offset;
    reference_long(expected, 50);
    auto run = chip.submit(long_prog, {vec(x)}, {50}, cfg);
    REQUIRE(run->wait(60.0));
    CHECK(run->error() == "");
    CHECK(run->tasks_executed() == 250);
    CHECK(x == expected);
}

}  // namespace

TEST_CASE("host_build_graph: the same results with tiny rings and 1..4 AICPU threads; a failed build runs nothing") {
    Chip chip(host_graph_options());
    check_chain(chip);
    for (std::uint32_t n : {1u, 2u, 4u}) {
        CAPTURE(n);
        RunConfig cfg = tiny();
        cfg.aicpu_threads = n;
        check_long(chip, cfg, 0);
    }
    std::vector<std::int64_t> x(4, 1);
    run_failing_kernel(chip, x);
    auto built_wrong = chip.submit(program("late", orch_submit_then_fail, {ArgDirection::InOut}), {vec(x)}, {}, RunConfig{});
    REQUIRE(built_wrong->wait(30.0));
    CHECK(built_wrong->error() == "orchestration 'late' returned status 5");
    CHECK(built_wrong->tasks_submitted() == 0);
    CHECK(x == std::vector<std::int64_t>{2, 2, 2, 2});  // only the muladd of `fails` ran (1 * 2 + 0)
    RunConfig budget = tiny();
    budget.workspace_budget_bytes = 1024;
    auto heap = chip.submit(program("heap", orch_heap_deadlock, {ArgDirection::InOut}), {vec(x)}, {}, budget);
    REQUIRE(heap->wait(30.0));
    CHECK(heap->error().find("832 bytes would exceed the host-built graph's 1024 bytes") != std::string::npos);
    auto fits = chip.submit(program("heap", orch_heap_deadlock, {ArgDirection::InOut}), {vec(x)}, {}, tiny());
    REQUIRE(fits->wait(30.0));
    CHECK(fits->error() == "");  // 2 x 832 bytes live at once, within the four heaps' 4096
}

TEST_CASE("host_build_graph: runs on the caller build one graph after another on a recycled graph") {
    // Each run here is built and finished on this thread, which keeps the finished graph's arrays
    // for its next build (recycle_host_graph): every graph must start empty (no tasks, no
    // predecessors or accesses of the previous one, no intermediate bytes in use).
    Chip chip(host_graph_options());
    RunConfig on_caller;
    on_caller.orchestrate_on_caller = true;
    auto chain = program("chain", orch_chain, {ArgDirection::InOut});
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        check_long(chip, on_caller, round);
        std::vector<std::int64_t> y(16), want(16);
        for (int i = 0; i < 16; ++i) y[i] = want[i] = i + round;
        reference_chain(want);
        auto short_run = chip.submit(chain, {vec(y)}, {}, on_caller);
        REQUIRE(short_run->wait(30.0));
        CHECK(short_run->error() == "");
        CHECK(short_run->tasks_executed() == 18);
        CHECK(y == want);
        // 2 x 832 intermediate bytes, exactly the budget, run after run: the bytes of an
        // earlier graph are not counted again.
        RunConfig budget = on_caller;
        budget.workspace_budget_bytes = 2 * 832;
        for (int again = 0; again < 3; ++again) {
            std::vector<std::int64_t> z(4, 1);
            auto heap = chip.submit(program("heap", orch_heap_deadlock, {ArgDirection::InOut}), {vec(z)}, {}, budget);
            REQUIRE(heap->wait(30.0));
            CHECK(heap->error() == "");
        }
    }
}
