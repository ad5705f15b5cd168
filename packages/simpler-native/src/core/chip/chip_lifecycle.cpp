// The chip's lifecycle (threads started in the constructor, drained and joined by close),
// run-configuration checks, Run::wait, and submission of runs from the host.
#include <new>
#include <stdexcept>

#include "chip_internal.hpp"

namespace simpler::chip {

namespace {

bool is_pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

void validate_run_config(const RunConfig& cfg) {
    if (cfg.aicpu_threads < 1 || cfg.aicpu_threads > static_cast<std::uint32_t>(kMaxAicpuThreads))
        throw std::invalid_argument("aicpu_thread_num: expected a value in [1, " + std::to_string(kMaxAicpuThreads) +
                                    "], got " + std::to_string(cfg.aicpu_threads));
    for (int r = 0; r < kRingCount; ++r) {
        const auto ring = [r] { return "[" + std::to_string(r) + "]"; };  // for a message only
        const std::uint64_t w = cfg.task_window[r];
        if (w < 4 || w > 0x7fffffffu || !is_pow2(w))
            throw std::invalid_argument("task_window" + ring() + ": expected a power of two in [4, 2^31-1], got " +
                                        std::to_string(w));
        if (cfg.heap[r] < 1024)
            throw std::invalid_argument("heap" + ring() + ": expected at least 1024 bytes, got " + std::to_string(cfg.heap[r]));
        if (cfg.dep_pool[r] < 4 || cfg.dep_pool[r] > 0x7fffffffu)
            throw std::invalid_argument("dep_pool" + ring() + ": expected a value in [4, 2^31-1], got " +
                                        std::to_string(cfg.dep_pool[r]));
    }
    if (cfg.workspace_budget_bytes != 0 && cfg.workspace_budget_bytes < 1024)
        throw std::invalid_argument("workspace_budget_bytes: expected at least 1024 (or 0 for unlimited), got " +
                                    std::to_string(cfg.workspace_budget_bytes));
    if ((cfg.swimlane || cfg.dep_graph) && cfg.output_prefix.empty())
        throw std::invalid_argument("output_prefix: swimlane and dependency-graph output need an output_prefix, got ''");
}

bool Run::wait(double timeout_s) const {
    if (done()) return true;
    if (timeout_s == 0) return false;
    // Spin briefly before parking: a short run finishes within microseconds, and waking a
    // parked thread costs tens of them. Outside the process's spinning budget (begin_spin),
    // which is the chip's own threads': a waiter that took a share of it would make the core
    // thread it waits for park instead (on 2 CPUs the waiter and the orchestrator fill it), and
    // the run then pays a condition-variable wake-up (~50 us here) instead of an atomic store.
    // The waiter yields every 32 steps, so the chip's threads get the cores when threads
    // outnumber them.
    std::int64_t spin = spin_ns_;
    if (timeout_s > 0 && timeout_s * 1e9 < static_cast<double>(spin)) spin = static_cast<std::int64_t>(timeout_s * 1e9);
    const std::int64_t start = now_ns();
    for (unsigned i = 1;; ++i) {
        cpu_relax();
        if (done()) return true;
        if ((i & 31) == 0) {
            if (now_ns() - start > spin) break;
            std::this_thread::yield();
        }
    }
    std::unique_lock<std::mutex> lk(mu_);
    if (timeout_s < 0) {
        cv_.wait(lk, [&] { return done(); });
        return true;
    }
    const double left = timeout_s - static_cast<double>(now_ns() - start) * 1e-9;
    if (left <= 0) return done();
    return cv_.wait_for(lk, std::chrono::duration<double>(left), [&] { return done(); });
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

Chip::Chip(ChipOptions options) : options_(options) {
    const std::string range = "expected 0.." + std::to_string(kMaxCoreThreads) + ", got ";
    if (options_.aic_threads < 0 || options_.aic_threads > kMaxCoreThreads)
        throw std::invalid_argument("aic_threads: " + range + std::to_string(options_.aic_threads));
    if (options_.aiv_threads < 0 || options_.aiv_threads > kMaxCoreThreads)
        throw std::invalid_argument("aiv_threads: " + range + std::to_string(options_.aiv_threads));
    if (options_.aic_threads + options_.aiv_threads == 0)
        throw std::invalid_argument("aic_threads + aiv_threads: expected at least one AICore thread, got 0");
    core_threads_[static_cast<int>(CoreType::AIC)] = options_.aic_threads;
    core_threads_[static_cast<int>(CoreType::AIV)] = options_.aiv_threads;
    for (int r = 0; r < kRingCount; ++r) rings_.push_back(std::make_unique<Ring>());
    // The cores: thread index 1.. (AIC threads first), each with its on-chip buffers (large
    // calloc: zero pages committed as kernels touch them). A buffer starts on a page
    // (kCoreBufferAlign): glibc's large calloc returns a page plus 16 bytes, which put every tile
    // 16 bytes off a cache line, so each 64-byte vector access of the tile library and of memcpy
    // spanned two lines.
    for (int i = 0; i < options_.aic_threads + options_.aiv_threads; ++i) {
        auto slot = std::make_unique<CoreSlot>();
        slot->thread_index = i + 1;
        const bool aic = i < options_.aic_threads;
        slot->type = aic ? CoreType::AIC : CoreType::AIV;
        slot->core_index = static_cast<std::uint32_t>(aic ? i : i - options_.aic_threads);
        for (int b = 0; b < kCoreBufferCount; ++b) {
            const std::uint64_t n = options_.core_buffer_bytes[static_cast<std::size_t>(b)];
            slot->storage[b].reset(static_cast<std::uint8_t*>(std::calloc(n + kCoreBufferAlign, 1)));
            if (!slot->storage[b]) throw std::bad_alloc();
            const auto raw = reinterpret_cast<std::uintptr_t>(slot->storage[b].get());
            slot->buffers.base[b] = reinterpret_cast<std::uint8_t*>((raw + kCoreBufferAlign - 1) & ~(kCoreBufferAlign - 1));
            slot->buffers.bytes[b] = n;
        }
        cores_.push_back(std::move(slot));
    }
    try {
        threads_.emplace_back(0, 0, [this] { orchestrator_loop(); });
        for (auto& slot : cores_) {
            CoreSlot* s = slot.get();
            threads_.emplace_back(kCoreThreadStackBytes, kCoreThreadGuardBytes, [this, s] { core_loop(*s); });
        }
    } catch (...) {
        close();  // stops and joins the threads that did start; the destructor will not run
        throw;
    }
    // Return only once every thread runs its loop: a thread still starting holds libc or
    // sanitizer allocator state, and a fork taken then would hand the child those locks held.
    while (started_.load(std::memory_order_acquire) < static_cast<int>(threads_.size()))
        std::this_thread::yield();
}

Chip::~Chip() { close(); }

void Chip::close() {
    std::lock_guard<std::mutex> guard(close_mu_);
    if (closed_.exchange(true)) return;
    {
        std::unique_lock<std::mutex> lk(mu_);
        draining_ = true;  // submit refuses new runs; queued ones finish first
        idle_cv_.wait(lk, [&] { return idle_locked(); });
        stop_.store(true);
        progress_.fetch_add(1, std::memory_order_release);
        orch_cv_.notify_all();
        for (auto& cv : core_cv_) cv.notify_all();
        for (auto& lane : lanes_) lane.cv.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
    std::vector<std::thread> schedulers;
    {
        std::lock_guard<std::mutex> lk(mu_);
        schedulers.swap(schedulers_);
    }
    for (auto& t : schedulers) t.join();
}

bool Chip::wait_idle(double timeout_s) {
    std::unique_lock<std::mutex> lk(mu_);
    if (!(timeout_s >= 0 && timeout_s <= 1e9)) {  // negative, NaN or beyond any clock: no limit
        idle_cv_.wait(lk, [&] { return idle_locked(); });
        return true;
    }
    const auto limit = std::chrono::duration<double>(timeout_s);
    return idle_cv_.wait_for(lk, std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit),
                             [&] { return idle_locked(); });
}

int Chip::scheduler_threads() const {
    std::lock_guard<std::mutex> lk(const_cast<std::mutex&>(mu_));
    return scheduler_count_;
}

bool Chip::idle_locked() const { return queue_.empty() && !busy_ && active_.empty() && finalizing_ == 0; }

// ---------------------------------------------------------------------------------------------
// Submission from the host

bool Chip::tensor_ok(const ChipTensor& t) const noexcept {
    if (check_chip_tensor_semantics(t) != InvocationStatus::Ok) return false;
    if (chip_tensor_is_empty(t)) return true;
    std::uint64_t remaining = 0;
    return !memory_.tracked_remaining(t.buffer.addr, &remaining) || t.buffer.size <= remaining;
}

void Chip::check_tensor(const ChipTensor& t, const std::string& what) const {
    if (check_chip_tensor_semantics(t) != InvocationStatus::Ok) {
        std::uint64_t extent = 0;
        const bool ok_extent = chip_tensor_extent(t, &extent);
        throw std::out_of_range(what + ": invalid descriptor (dtype " + std::to_string(t.dtype) + ", ndims " +
                                std::to_string(t.ndims) + ", start_offset " + std::to_string(t.start_offset) +
                                (ok_extent ? ", extent " + std::to_string(extent) : std::string(", bad shape/strides")) +
                                " elements, backing " + std::to_string(t.buffer.size) +
                                " bytes): expected a DEVICE tensor inside its buffer");
    }
    if (chip_tensor_is_empty(t)) return;
    std::uint64_t remaining = 0;
    if (memory_.tracked_remaining(t.buffer.addr, &remaining) && t.buffer.size > remaining)
        throw std::out_of_range(what + ": buffer of " + std::to_string(t.buffer.size) + " bytes runs past its device allocation (" +
                                std::to_string(remaining) + " bytes left)");
}

std::shared_ptr<Run> Chip::submit(std::shared_ptr<const ChipProgram> program, std::vector<ChipTensor> tensors,
                                  std::vector<std::uint64_t> scalars, RunConfig config, bool dense_host) {
    if (program == nullptr) throw std::invalid_argument("submit(callable): expected a registered callable, got none");
    if (tensors.size() != program->tensor_count || scalars.size() != program->scalar_count)
        throw std::invalid_argument("submit(args): orchestration '" + program->name + "' expects " +
                                    std::to_string(program->tensor_count) + " tensors and " +
                                    std::to_string(program->scalar_count) + " scalars, got " +
                                    std::to_string(tensors.size()) + " and " + std::to_string(scalars.size()));
    // The messages are built only for a tensor that fails (this is every program call's path).
    if (!dense_host)
        for (std::size_t i = 0; i < tensors.size(); ++i)
            if (!tensor_ok(tensors[i])) check_tensor(tensors[i], "submit(args): tensor " + std::to_string(i));
    validate_run_config(config);
    for (const auto& [func_id, k] : program->kernels)
        if (core_threads_[static_cast<int>(k->core)] == 0)
            throw std::invalid_argument("submit(callable): kernel " + k->label() + " needs an " + core_type_name(k->core) +
                                        " thread, but this Worker has none");
    if (kernel_mode()) throw std::runtime_error("submit: this chip is in kernel mode; use launch");
    Pending p;
    p.program = std::move(program);
    p.tensors = std::move(tensors);
    p.scalars = std::move(scalars);
    p.config = std::move(config);
    // HBG builds the graph here whatever the setting; an idle chip then also places and runs it
    // on this thread (an inline run, as TMR's orchestration).
    if (options_.runtime == Runtime::HostBuildGraph) build_on_host(p);
    if (p.config.orchestrate_on_caller) {
        if (std::shared_ptr<Run> run = run_on_caller(p)) return run;
    }
    return enqueue(std::move(p));
}

std::shared_ptr<Run> Chip::run_on_caller(Pending& p) {
    auto run = std::make_shared<Run>();
    run->spin_ns_ = options_.spin_ns;
    std::unique_lock<std::mutex> lk(mu_);
    if (draining_ || stop_.load()) throw std::runtime_error("submit: the Worker is closed");
    // Only an idle chip: a queued run goes first (FIFO), and a run in flight could hold
    // this one's orchestration in a back-pressure wait on tasks that are not its own.
    if (!idle_locked() || in_flight_ != 0) return nullptr;
    run->id_ = next_run_id_++;
    busy_ = true;  // the orchestrator thread leaves the queue alone until execute_run releases it
    p.run = run;
    p.on_caller = true;
    // A kernel launch's packet is consumed before the run's setup, without the lock.
    if (p.kernel_launch) lk.unlock();
    try {
        execute_run(p, lk.owns_lock() ? &lk : nullptr);  // gives the chip back (release_chip_locked)
    } catch (...) {  // out of memory: give the chip back (unless given already) before the caller sees it
        if (!lk.owns_lock()) lk.lock();
        if (p.on_caller) {
            busy_ = false;
            if (idle_locked()) idle_cv_.notify_all();
            orch_cv_.notify_all();
        }
        throw;
    }
    return run;
}

void Chip::release_chip_locked() {
    busy_ = false;
    if (idle_locked()) idle_cv_.notify_all();
    if (!queue_.empty()) {  // queued meanwhile by other threads: the orchestrator thread's now
        progress_.fetch_add(1, std::memory_order_release);
        orch_cv_.notify_all();
    }
}

std::shared_ptr<Run> Chip::enqueue(Pending p) {
    auto run = std::make_shared<Run>();
    run->spin_ns_ = options_.spin_ns;
    p.run = run;
    std::lock_guard<std::mutex> lk(mu_);
    if (draining_ || stop_.load()) throw std::runtime_error("submit: the Worker is closed");
    run->id_ = next_run_id_++;
    queue_.push_back(std::move(p));
    progress_.fetch_add(1, std::memory_order_release);
    orch_cv_.notify_all();
    return run;
}

}  // namespace simpler::chip
