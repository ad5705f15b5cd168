// C++ side of the chip domain: device memory tracking, run-config validation, loader rejection,
// the sampling of kernel task times.
// The end-to-end scheduling tests are in tests/test_worker*.py (they need compiled kernels).
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "../../../src/core/chip/chip.hpp"
#include "../../../src/core/chip/device_memory.hpp"
#include "../../../src/core/chip/loader.hpp"

using namespace simpler::chip;

TEST_CASE("device memory tracks allocations and checks ranges") {
    DeviceMemory mem;
    const std::uint64_t a = mem.allocate(100);
    CHECK(a % 64 == 0);
    CHECK(mem.live_allocations() == 1);
    CHECK(mem.live_bytes() == 100);
    std::uint64_t rem = 0;
    CHECK(mem.tracked_remaining(a + 10, &rem));
    CHECK(rem == 90);
    CHECK_FALSE(mem.tracked_remaining(a + 100, &rem));
    char src[100];
    std::memset(src, 7, sizeof src);
    mem.copy_to_device(a, src, 100);
    CHECK_THROWS_AS(mem.copy_to_device(a + 1, src, 100), std::out_of_range);
    char dst[100] = {};
    mem.copy_from_device(dst, a, 100);
    CHECK(std::memcmp(src, dst, 100) == 0);
    CHECK_THROWS_AS(mem.release(a + 1), std::invalid_argument);
    mem.release(a);
    CHECK(mem.live_allocations() == 0);
    CHECK_THROWS_AS(mem.release(a), std::invalid_argument);
    CHECK_THROWS_AS(mem.allocate(0), std::invalid_argument);
}

TEST_CASE("run config validation names the field") {
    RunConfig cfg;
    CHECK_NOTHROW(validate_run_config(cfg));
    cfg.task_window[2] = 12;
    try {
        validate_run_config(cfg);
        FAIL("expected a rejection");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()).find("task_window[2]") != std::string::npos);
    }
    cfg = RunConfig{};
    cfg.heap[0] = 1023;
    CHECK_THROWS_AS(validate_run_config(cfg), std::invalid_argument);
    cfg = RunConfig{};
    cfg.dep_pool[3] = 3;
    CHECK_THROWS_AS(validate_run_config(cfg), std::invalid_argument);
    cfg = RunConfig{};
    cfg.swimlane = true;
    CHECK_THROWS_AS(validate_run_config(cfg), std::invalid_argument);
}

TEST_CASE("loader rejects bytes that are not a shared object") {
    const char junk[] = "definitely not ELF";
    CHECK_THROWS_AS(LoadedBinary::load(junk, sizeof junk, "junk"), std::runtime_error);
    CHECK_THROWS_AS(LoadedBinary::load(junk, 0, "empty"), std::invalid_argument);
}

TEST_CASE("chip starts and stops its threads") {
    ChipOptions o;
    o.aic_threads = 1;
    o.aiv_threads = 2;
    Chip chip(o);
    CHECK_FALSE(chip.closed());
    chip.close();
    CHECK(chip.closed());
    chip.close();  // idempotent
    ChipOptions none;
    none.aic_threads = 0;
    none.aiv_threads = 0;
    CHECK_THROWS_AS(Chip{none}, std::invalid_argument);
}

namespace {
// A program some other backend loaded: the simulated chip must refuse it by name.
struct ForeignProgram final : simpler::BackendProgram {
    const char* loaded_by() const noexcept override { return "npu"; }
};
}  // namespace

TEST_CASE("the simulated chip serves the backend interface: memory, programs of another backend, close") {
    Chip chip(ChipOptions{});
    simpler::ChipBackend& backend = chip;
    const std::uint64_t a = backend.device_malloc(256);
    char src[256];
    for (int i = 0; i < 256; ++i) src[i] = static_cast<char>(i);
    backend.copy_to_device(a, src, sizeof src);
    char dst[256] = {};
    backend.copy_from_device(dst, a, sizeof dst);
    CHECK(std::memcmp(src, dst, sizeof src) == 0);
    CHECK_THROWS_AS(backend.copy_to_device(a + 8, src, sizeof src), std::out_of_range);
    backend.device_free(a);
    CHECK_THROWS_AS(backend.device_free(a), std::invalid_argument);

    auto foreign = std::make_shared<const ForeignProgram>();
    try {
        backend.submit_run(foreign, {}, {}, RunConfig{});
        FAIL("expected a rejection");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()).find("loaded by 'npu'") != std::string::npos);
    }
    CHECK_THROWS_AS(backend.register_kernel(foreign), std::invalid_argument);

    CHECK(backend.wait_idle(1.0));
    backend.close();
    CHECK(backend.closed());
}

TEST_CASE("a kernel's tasks are timed until it has a figure, then every kTimedEvery-th one") {
    using LastRun = CoreKernel::LastRunNs;
    constexpr std::uint32_t every = LastRun::kTimedEvery;
    LastRun r;
    CHECK(r.time_next());  // the first task
    CHECK(r.time_next());  // no figure yet (that task has not finished)
    r.ns.store(500);
    for (std::uint32_t n = 2; n < 3 * every + 2; ++n) {
        CAPTURE(n);
        CHECK(r.time_next() == (n % every == 0));
    }
    // A copy of the kernel (a program registered again) starts with no figure: timed at once.
    const LastRun copy(r);
    CHECK(copy.ns.load() == 0);
    CHECK(copy.time_next());
    CHECK(copy.time_next());
}
