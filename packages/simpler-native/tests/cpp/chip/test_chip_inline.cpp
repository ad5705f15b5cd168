// Inline runs: a run orchestrated by its submitting thread on an idle chip runs the tasks it
// holds on that thread, as an idle core of their kind (its buffers, index, trace track), on a
// core-sized stack; results, errors and the core seen by the kernel are those of a core thread.
#include <doctest/doctest.h>

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

// What the last kernel saw: its thread, its core, its buffers.
struct Seen {
    std::thread::id thread;
    std::uint32_t core_index = 99, core_kind = 99;
    const std::uint8_t* ub = nullptr;
};
Seen g_seen;
thread_local const KernelContext* g_context = nullptr;
void set_context(const KernelContext* c) { g_context = c; }

// x = x * 2 + k, recording where it ran.
void k_muladd(std::int64_t* args) {
    const auto& x = *reinterpret_cast<const ChipTensor*>(args[0]);
    for (std::uint32_t i = 0; i < x.shapes[0]; ++i) elems(x)[i] = elems(x)[i] * 2 + args[1];
    g_seen.thread = std::this_thread::get_id();
    if (g_context != nullptr) {
        g_seen.core_index = g_context->core_index;
        g_seen.core_kind = g_context->core_kind;
        g_seen.ub = g_context->buffers->base[0];
    }
}

// 12 MiB of locals: more than a default 8 MiB thread stack, within a core thread's.
__attribute__((noinline)) void k_deep(std::int64_t* args) {
    const auto& x = *reinterpret_cast<const ChipTensor*>(args[0]);
    volatile std::uint8_t big[12u << 20];
    for (std::size_t i = 0; i < sizeof big; i += 4096) big[i] = static_cast<std::uint8_t>(i >> 12);
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < sizeof big; i += 4096) sum += big[i];
    elems(x)[0] = sum;
    g_seen.thread = std::this_thread::get_id();
}

std::shared_ptr<ChipProgram> program(const char* name, OrchestrationEntryFn entry) {
    return program_of(name, entry, {ArgDirection::InOut},
                      {kernel("muladd", k_muladd, {ArgDirection::InOut, ArgDirection::Scalar}, no_error, set_context),
                       kernel("fail", k_fail, {ArgDirection::In}, take_test_error, set_context),
                       kernel("deep", k_deep, {ArgDirection::InOut}, no_error, set_context)});
}

std::int32_t orch_one(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    return o.submit(0, {inout(args->tensor(0))}, {scalar_bits<std::int64_t>(3)}) < 0;
}

// 40 muladds in a chain on x (RAW/WAW): with a 4-task window the orchestration waits for its
// own tasks, which the submitting thread holds.
std::int32_t orch_chain(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    for (int r = 0; r < 40; ++r)
        if (o.submit(0, {inout(args->tensor(0))}, {scalar_bits<std::int64_t>(r % 3)}) < 0) return 1;
    return 0;
}

// Four independent muladds (one per quarter), then a failing task.
std::int32_t orch_fanout_fail(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor& x = args->tensor(0);
    const std::uint32_t q = x.shapes[0] / 4;
    for (std::uint32_t i = 0; i < 4; ++i)
        if (o.submit(0, {inout(slice_1d(x, i * q, q))}, {scalar_bits<std::int64_t>(i)}) < 0) return 1;
    return o.submit(1, {in(x)}) < 0;
}

std::int32_t orch_deep(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    return o.submit(2, {inout(args->tensor(0))}) < 0;
}

RunConfig config(bool on_caller) {
    RunConfig c;
    c.orchestrate_on_caller = on_caller;
    return c;
}

}  // namespace

TEST_CASE("inline run: a one-task run on an idle chip runs on the submitting thread, as core 0") {
    // host_build_graph builds its graph on the submitting thread either way; placed and run
    // there too when the run asks for it, as TMR's orchestration is.
    for (Runtime runtime : {Runtime::TensormapAndRingbuffer, Runtime::HostBuildGraph}) {
    CAPTURE(kRuntimeNames[static_cast<int>(runtime)]);
    ChipOptions options = cores(1, 1);  // one AIV core: the threaded run uses it too
    options.runtime = runtime;
    Chip chip(options);
    auto prog = program("one", orch_one);
    Seen on_thread;
    for (bool on_caller : {false, true}) {
        CAPTURE(on_caller);
        std::vector<std::int64_t> x(8, 1);
        REQUIRE(chip.wait_idle(0.0));  // the previous run's wait returned: idle, so inline
        auto run = chip.submit(prog, {vec(x)}, {}, config(on_caller));
        if (on_caller) CHECK(run->done());  // nothing left to wait for
        REQUIRE(run->wait(10.0));
        CHECK(run->error() == "");
        CHECK(run->tasks_executed() == 1);
        CHECK(x == std::vector<std::int64_t>(8, 5));
        CHECK((g_seen.thread == std::this_thread::get_id()) == on_caller);
        CHECK(g_seen.core_kind == 0);  // AIV
        CHECK(g_seen.core_index == 0);
        if (!on_caller) {
            on_thread = g_seen;
        } else {
            CHECK(g_seen.ub == on_thread.ub);  // the same core's buffers as its thread's
        }
    }
    }
}

TEST_CASE("inline run: a run completes after the chip is free again, so the next submit runs inline") {
    // The thread that finalises a threaded run (a core thread or the orchestrator thread) lets
    // go of it before the run completes: its waiter, woken, finds the chip idle. The run holds
    // the only reference to its program, whose release (part of finalising) takes 20 ms here:
    // a waiter woken before it would find the chip still busy finalising.
    for (Runtime runtime : {Runtime::TensormapAndRingbuffer, Runtime::HostBuildGraph}) {
        CAPTURE(kRuntimeNames[static_cast<int>(runtime)]);
        ChipOptions options = cores(0, 2);
        options.runtime = runtime;
        Chip chip(options);
        for (int i = 0; i < 4; ++i) {
            std::shared_ptr<ChipProgram> slow(new ChipProgram(*program("one", orch_one)), [](ChipProgram* p) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                delete p;
            });
            std::vector<std::int64_t> x(8, 1);
            auto run = chip.submit(std::move(slow), {vec(x)}, {}, config(false));
            REQUIRE(run->wait(10.0));
            CHECK(chip.wait_idle(0.0));
            CHECK(x == std::vector<std::int64_t>(8, 5));
        }
    }
}

TEST_CASE("inline run: back-pressure on its own tasks, a failing task, a deep stack") {
    Chip chip(cores(0, 2));
    RunConfig tiny = config(true);
    tiny.task_window = {4, 4, 4, 4};
    tiny.dep_pool = {4, 4, 4, 4};
    std::vector<std::int64_t> expect(4, 1);
    for (int r = 0; r < 40; ++r)
        for (auto& v : expect) v = v * 2 + r % 3;
    for (const RunConfig& cfg : {config(false), config(true), tiny}) {
        std::vector<std::int64_t> x(4, 1);
        auto run = chip.submit(program("chain", orch_chain), {vec(x)}, {}, cfg);
        REQUIRE(run->wait(20.0));
        CHECK(run->error() == "");
        CHECK(x == expect);
    }
    std::string errors[2];
    for (bool on_caller : {false, true}) {
        std::vector<std::int64_t> x(8, 1);
        auto run = chip.submit(program("fanout_fail", orch_fanout_fail), {vec(x)}, {}, config(on_caller));
        REQUIRE(run->wait(20.0));
        errors[on_caller] = run->error();
        CHECK(run->tasks_submitted() == 5);
        CHECK(x == std::vector<std::int64_t>{2, 2, 3, 3, 4, 4, 5, 5});
    }
    CHECK(errors[0] == "orchestration 'fanout_fail': task 4 (kernel 'fail' (func_id 1, AIV)) failed: synthetic kernel failure");
    CHECK(errors[1] == errors[0]);
    std::vector<std::int64_t> x(1, 0);
    REQUIRE(chip.wait_idle(0.0));  // the failed run was waited for: the chip is free
    auto run = chip.submit(program("deep", orch_deep), {vec(x)}, {}, config(true));
    REQUIRE(run->wait(20.0));
    CHECK(run->error() == "");
    const bool on_caller = g_seen.thread == std::this_thread::get_id();
    CHECK(on_caller);  // on the caller's thread, on the chip's stack
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < (12u << 20); i += 4096) sum += static_cast<std::uint8_t>(i >> 12);
    CHECK(x[0] == sum);
}
