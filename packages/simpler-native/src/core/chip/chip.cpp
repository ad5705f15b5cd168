#include "chip.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "simpler/wire/consume.hpp"
#include "simpler/wire/transport.hpp"
#include "trace.hpp"

namespace simpler::chip {

namespace {

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// One step `i` of a spin-wait that gives up at `deadline`: true when the budget is spent. It
// yields the core every 32 steps, so that when threads outnumber cores a spinning thread does
// not hold off, for a whole time slice, the thread whose progress it waits for.
inline bool spin_expired(unsigned i, std::int64_t deadline) noexcept {
    if ((i & 31) != 0) return false;
    if (now_ns() > deadline) return true;
    std::this_thread::yield();
    return false;
}

struct AlignedFree {
    void operator()(std::uint8_t* p) const noexcept { std::free(p); }
};

// Byte region [lo, hi) a nonempty tensor touches (conservative for strided views).
bool tensor_region(const ChipTensor& t, std::uint64_t* lo, std::uint64_t* hi) noexcept {
    if (chip_tensor_is_empty(t)) return false;
    std::uint64_t extent = 0;
    if (!chip_tensor_extent(t, &extent)) return false;
    const std::uint64_t bits = dtype_bits(t.dtype);
    *lo = t.buffer.addr + t.start_offset * bits / 8;
    *hi = t.buffer.addr + ((t.start_offset + extent) * bits + 7) / 8;
    return true;
}

// A nonempty view as a box: base in bytes, element size, and its dims of extent > 1 with their
// strides, ordered by decreasing stride. False when it cannot be described so.
struct Box {
    std::uint64_t base = 0;  // byte address of element [0, ..., 0]
    std::uint64_t elem = 0;  // bytes per element
    std::uint32_t n = 0;
    std::uint64_t shape[kMaxTensorDims] = {};
    std::uint64_t stride[kMaxTensorDims] = {};
};

bool make_box(const ChipTensor& t, Box* b) noexcept {
    const std::uint64_t bits = dtype_bits(t.dtype);
    if (bits == 0 || bits % 8 != 0 || t.ndims == 0 || t.ndims > kMaxTensorDims || chip_tensor_is_empty(t)) return false;
    b->elem = bits / 8;
    std::uint64_t off = 0;
    if (__builtin_mul_overflow(t.start_offset, b->elem, &off) || __builtin_add_overflow(t.buffer.addr, off, &b->base))
        return false;
    b->n = 0;
    for (std::uint32_t i = 0; i < t.ndims; ++i) {
        if (t.shapes[i] == 1) continue;
        std::uint32_t j = b->n++;  // insertion sort by decreasing stride
        while (j > 0 && b->stride[j - 1] < t.strides[i]) {
            b->shape[j] = b->shape[j - 1];
            b->stride[j] = b->stride[j - 1];
            --j;
        }
        b->shape[j] = t.shapes[i];
        b->stride[j] = t.strides[i];
    }
    return true;
}

// Box coordinates of b's origin in a's lattice (o, with b's base = a's base + sum o[i] *
// stride[i] elements), when a and b have one element size and one set of strides, and when
// addresses are one-to-one with coordinates over the union of both boxes (then boxes that
// share no coordinate share no element). False otherwise.
// `small` with dims of extent 1 inserted so that its strides are `big`'s (a dim of extent 1
// may take any stride). False when its strides are not a subset of big's.
bool lift_box(Box* small, const Box& big) noexcept {
    if (small->n > big.n) return false;
    Box out = *small;
    out.n = big.n;
    std::uint32_t k = 0;
    for (std::uint32_t i = 0; i < big.n; ++i) {
        out.stride[i] = big.stride[i];
        if (k < small->n && small->stride[k] == big.stride[i]) {
            out.shape[i] = small->shape[k++];
        } else {
            out.shape[i] = 1;
        }
    }
    if (k != small->n) return false;
    *small = out;
    return true;
}

// a and b are lifted to the same dims (lift_box) in place.
bool box_offsets(Box& a, Box& b, std::int64_t* o) noexcept {
    if (a.n < b.n && !lift_box(&a, b)) return false;
    if (b.n < a.n && !lift_box(&b, a)) return false;
    if (a.elem != b.elem || a.n != b.n) return false;
    for (std::uint32_t i = 0; i < a.n; ++i)
        if (a.stride[i] != b.stride[i] || a.stride[i] == 0 || a.stride[i] > (std::uint64_t{1} << 31)) return false;
    const std::uint64_t diff = b.base >= a.base ? b.base - a.base : a.base - b.base;
    if (diff % a.elem != 0 || diff / a.elem > (std::uint64_t{1} << 62)) return false;
    auto rem = static_cast<std::int64_t>(diff / a.elem);
    if (b.base < a.base) rem = -rem;
    for (std::uint32_t i = 0; i < a.n; ++i) {  // decreasing strides: rem - o[i] * s in [0, s)
        const auto s = static_cast<std::int64_t>(a.stride[i]);
        std::int64_t q = rem / s;
        if (rem % s < 0) --q;
        o[i] = q;
        rem -= q * s;
    }
    if (rem != 0) return false;  // b's origin is not on a's lattice this way: unsure
    // One-to-one over the union box: each stride exceeds the furthest reach of the inner dims.
    std::uint64_t inner = 0;  // sum over dims j > i of (width_j - 1) * stride_j
    for (std::uint32_t k = a.n; k-- > 0;) {
        if (inner >= a.stride[k]) return false;
        const std::int64_t lo = o[k] < 0 ? o[k] : 0;
        const std::int64_t hi_a = static_cast<std::int64_t>(a.shape[k]);
        const std::int64_t hi_b = o[k] + static_cast<std::int64_t>(b.shape[k]);
        const std::int64_t width = (hi_a > hi_b ? hi_a : hi_b) - lo;
        if (width <= 0 || width > (std::int64_t{1} << 32)) return false;
        std::uint64_t term = 0;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(width - 1), a.stride[k], &term) ||
            __builtin_add_overflow(inner, term, &inner))
            return false;
    }
    return true;
}

const char* direction_name(ArgDirection d) noexcept {
    switch (d) {
        case ArgDirection::In: return "In";
        case ArgDirection::Out: return "Out";
        case ArgDirection::InOut: return "InOut";
        case ArgDirection::Scalar: return "Scalar";
    }
    return "unknown";
}

}  // namespace

bool tensors_may_overlap(const ChipTensor& a, const ChipTensor& b) noexcept {
    std::uint64_t alo = 0, ahi = 0, blo = 0, bhi = 0;
    if (!tensor_region(a, &alo, &ahi) || !tensor_region(b, &blo, &bhi)) return false;  // empty: touches nothing
    if (!(alo < bhi && blo < ahi)) return false;
    Box ba, bb;
    std::int64_t o[kMaxTensorDims] = {};
    if (!make_box(a, &ba) || !make_box(b, &bb) || !box_offsets(ba, bb, o)) return true;
    for (std::uint32_t i = 0; i < ba.n; ++i)  // [0, a.shape) and [o, o + b.shape) per dim
        if (o[i] >= static_cast<std::int64_t>(ba.shape[i]) || o[i] + static_cast<std::int64_t>(bb.shape[i]) <= 0)
            return false;
    return true;
}

bool tensor_covers(const ChipTensor& outer, const ChipTensor& inner) noexcept {
    std::uint64_t olo = 0, ohi = 0, ilo = 0, ihi = 0;
    if (!tensor_region(inner, &ilo, &ihi)) return true;  // empty: nothing to cover
    if (!tensor_region(outer, &olo, &ohi) || ilo < olo || ihi > ohi) return false;
    Box bo, bi;
    std::int64_t o[kMaxTensorDims] = {};
    if (!make_box(outer, &bo) || !make_box(inner, &bi)) return false;
    // A dense row-major view touches every byte of its range.
    bool dense = bo.n == 0 || bo.stride[bo.n - 1] == 1;
    for (std::uint32_t i = 0; dense && i + 1 < bo.n; ++i) dense = bo.stride[i] == bo.stride[i + 1] * bo.shape[i + 1];
    if (dense) return true;
    if (!box_offsets(bo, bi, o)) return false;
    for (std::uint32_t i = 0; i < bo.n; ++i)
        if (o[i] < 0 || o[i] + static_cast<std::int64_t>(bi.shape[i]) > static_cast<std::int64_t>(bo.shape[i])) return false;
    return true;
}

// ---------------------------------------------------------------------------------------------
// Internal state

struct Chip::Task {
    std::uint64_t seq = 0;
    int ring = 0;
    std::uint32_t index = 0;  // submission index within its run
    const CoreKernel* kernel = nullptr;
    RunState* run = nullptr;
    std::vector<ChipTensor> tensors;
    std::vector<std::int64_t> args;
    std::vector<Task*> successors;
    std::vector<std::uint32_t> pred_indices;  // recorded only for the dependency graph
    std::int32_t fanin = 0;
    std::uint32_t edges = 0;  // dependency-pool entries held until this task finishes
    enum class State : std::uint8_t { Free, Pending, Ready, Running, Done } state = State::Free;
};

struct HeapBlock {
    std::uint64_t offset = 0;
    std::uint64_t size = 0;       // bytes reserved, including wrap padding
    std::uint32_t depth = 0;      // scope depth that allocated it
    bool closed = false;          // its scope has ended
    std::uint64_t run_id = 0;     // the run that allocated it
    std::array<std::uint64_t, kRingCount> release_after{};  // ring.next at scope end
};

struct Chip::Ring {
    std::vector<Task> slots;
    std::uint64_t mask = 0;
    std::uint64_t head = 0;  // oldest not retired
    std::uint64_t next = 0;  // next sequence to hand out
    std::uint64_t run_start = 0;
    std::uint32_t dep_used = 0;
    std::uint32_t dep_cap = 0;
    std::unique_ptr<std::uint8_t, AlignedFree> heap;
    std::uint64_t heap_cap = 0;
    std::uint64_t heap_head = 0;  // offset of the oldest live block
    std::uint64_t heap_tail = 0;  // offset where the next block starts
    std::uint64_t heap_used = 0;  // bytes reserved by live blocks
    std::deque<HeapBlock> blocks;

    std::uint64_t window() const noexcept { return mask + 1; }
};

struct Chip::RunState {
    std::shared_ptr<Run> run;
    std::shared_ptr<const ChipProgram> program_ref;  // keeps the binaries loaded until the run ends
    const ChipProgram* program = nullptr;
    std::vector<ChipTensor> tensors;  // the materialised arguments (ChipStorageTaskArgs points here)
    std::vector<std::uint64_t> scalars;
    RunConfig config;
    std::uint32_t depth = 0;
    bool failed = false;
    std::string error;
    std::uint32_t submitted = 0;
    std::uint64_t outstanding = 0;
    std::uint64_t workspace_used = 0;
    bool orch_done = false;  // the entry returned: the run completes when outstanding is 0
    int lanes = 0;           // scheduler lanes serving this run (aicpu_threads - 1; 0 = none)
    struct SchedStats {      // per scheduler lane, for the swimlane
        std::uint64_t dispatched = 0, completed = 0;
        std::int64_t first_ns = 0, last_ns = 0;
    };
    std::array<SchedStats, kMaxAicpuThreads - 1> sched{};
    std::int64_t orch_start = 0, orch_end = 0;
    std::int64_t t0 = 0;
    std::vector<TraceSlice> slices;
    std::vector<TaskNode> nodes;
};

}  // namespace simpler::chip

// The opaque context handed to orchestration code.
struct SimplerOrchContext {
    simpler::chip::Chip* chip;
    simpler::chip::Chip::RunState* state;
};

namespace simpler::chip {

namespace {

std::int64_t api_submit(SimplerOrchContext* ctx, const OrchTaskSpec* spec) {
    return ctx->chip->orch_submit(*ctx->state, spec);
}
std::int32_t api_scope_begin(SimplerOrchContext* ctx) { return ctx->chip->orch_scope_begin(*ctx->state); }
std::int32_t api_scope_end(SimplerOrchContext* ctx) { return ctx->chip->orch_scope_end(*ctx->state); }
std::int32_t api_alloc(SimplerOrchContext* ctx, DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                       ChipTensor* out) {
    return ctx->chip->orch_alloc(*ctx->state, dtype, ndims, shape, out);
}
void api_report_error(SimplerOrchContext* ctx, const char* message) {
    ctx->chip->orch_fail(*ctx->state, std::string("orchestration '") + ctx->state->program->name +
                                          "' reported: " + (message != nullptr ? message : "(null)"));
}

const SimplerOrchApi kOrchApi = {
    kOrchestrationAbiVersion, sizeof(SimplerOrchApi), api_submit, api_scope_begin, api_scope_end, api_alloc,
    api_report_error,
};

bool is_pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

void validate_run_config(const RunConfig& cfg) {
    if (cfg.aicpu_threads < 1 || cfg.aicpu_threads > static_cast<std::uint32_t>(kMaxAicpuThreads))
        throw std::invalid_argument("aicpu_thread_num: expected a value in [1, " + std::to_string(kMaxAicpuThreads) +
                                    "], got " + std::to_string(cfg.aicpu_threads));
    for (int r = 0; r < kRingCount; ++r) {
        const std::string ring = "[" + std::to_string(r) + "]";
        const std::uint64_t w = cfg.task_window[r];
        if (w < 4 || w > 0x7fffffffu || !is_pow2(w))
            throw std::invalid_argument("task_window" + ring + ": expected a power of two in [4, 2^31-1], got " +
                                        std::to_string(w));
        if (cfg.heap[r] < 1024)
            throw std::invalid_argument("heap" + ring + ": expected at least 1024 bytes, got " + std::to_string(cfg.heap[r]));
        if (cfg.dep_pool[r] < 4 || cfg.dep_pool[r] > 0x7fffffffu)
            throw std::invalid_argument("dep_pool" + ring + ": expected a value in [4, 2^31-1], got " +
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
    // parked thread costs tens of them. Yield now and then so that the chip's own threads
    // get the cores when there are more threads than cores.
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
    if (options_.aic_threads < 0 || options_.aic_threads > 64)
        throw std::invalid_argument("aic_threads: expected 0..64, got " + std::to_string(options_.aic_threads));
    if (options_.aiv_threads < 0 || options_.aiv_threads > 64)
        throw std::invalid_argument("aiv_threads: expected 0..64, got " + std::to_string(options_.aiv_threads));
    if (options_.aic_threads + options_.aiv_threads == 0)
        throw std::invalid_argument("aic_threads + aiv_threads: expected at least one AICore thread, got 0");
    core_threads_[static_cast<int>(CoreType::AIC)] = options_.aic_threads;
    core_threads_[static_cast<int>(CoreType::AIV)] = options_.aiv_threads;
    for (int r = 0; r < kRingCount; ++r) rings_.push_back(std::make_unique<Ring>());
    try {
        threads_.emplace_back(0, 0, [this] { orchestrator_loop(); });
        int index = 1;
        for (int i = 0; i < options_.aic_threads; ++i, ++index)
            threads_.emplace_back(kCoreThreadStackBytes, kCoreThreadGuardBytes,
                                  [this, index] { core_loop(index, CoreType::AIC); });
        for (int i = 0; i < options_.aiv_threads; ++i, ++index)
            threads_.emplace_back(kCoreThreadStackBytes, kCoreThreadGuardBytes,
                                  [this, index] { core_loop(index, CoreType::AIV); });
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
                                  std::vector<std::uint64_t> scalars, RunConfig config) {
    if (program == nullptr) throw std::invalid_argument("submit(callable): expected a registered callable, got none");
    const std::string what = "orchestration '" + program->name + "'";
    if (tensors.size() != program->tensor_count || scalars.size() != program->scalar_count)
        throw std::invalid_argument("submit(args): " + what + " expects " + std::to_string(program->tensor_count) +
                                    " tensors and " + std::to_string(program->scalar_count) + " scalars, got " +
                                    std::to_string(tensors.size()) + " and " + std::to_string(scalars.size()));
    for (std::size_t i = 0; i < tensors.size(); ++i) check_tensor(tensors[i], "submit(args): tensor " + std::to_string(i));
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
    return enqueue(std::move(p));
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

// ---------------------------------------------------------------------------------------------
// Waiting on the orchestrator thread: spin briefly, then park on orch_cv_.

template <class Pred>
bool Chip::orch_wait_locked(std::unique_lock<std::mutex>& lk, Pred ready) {
    if (ready()) return true;
    // Spin without the lock on the progress counter (bumped by every task completion and every
    // queued run), re-checking the predicate under the lock only when something happened.
    const std::int64_t deadline = now_ns() + options_.spin_ns;
    std::uint64_t seen = progress_.load(std::memory_order_acquire);
    lk.unlock();
    for (unsigned i = 1;; ++i) {
        cpu_relax();
        const std::uint64_t now = progress_.load(std::memory_order_acquire);
        if (now != seen) {
            seen = now;
            lk.lock();
            if (ready()) return true;
            lk.unlock();
        }
        if (spin_expired(i, deadline)) break;
    }
    lk.lock();
    orch_waiting_ = true;
    orch_cv_.wait(lk, [&] { return ready() || stop_.load(); });
    orch_waiting_ = false;
    return ready();
}

void Chip::orchestrator_loop() {
    started_.fetch_add(1, std::memory_order_release);
    // Runs are orchestrated one after another, without waiting for the previous run's tasks:
    // the tensor map spans runs, so a later run's tasks still wait for what they overlap. A run
    // completes on whichever thread retires its last task (or here, when its orchestration
    // returns with nothing outstanding), never later than that.
    for (;;) {
        Pending p;
        {
            std::unique_lock<std::mutex> lk(mu_);
            orch_wait_locked(lk, [&] { return !queue_.empty() || stop_.load(); });
            if (queue_.empty()) {
                if (stop_.load()) return;
                continue;
            }
            p = std::move(queue_.front());
            queue_.pop_front();
            busy_ = true;
        }
        execute_run(p);
        {
            std::lock_guard<std::mutex> lk(mu_);
            busy_ = false;
            if (idle_locked()) idle_cv_.notify_all();
        }
    }
}

std::unique_ptr<Chip::RunState> Chip::take_if_complete_locked(RunState& rs) {
    if (!rs.orch_done || rs.outstanding != 0) return nullptr;
    for (auto it = active_.begin(); it != active_.end(); ++it)
        if (it->get() == &rs) {
            std::unique_ptr<RunState> owned = std::move(*it);
            active_.erase(it);
            ++finalizing_;
            return owned;
        }
    return nullptr;
}

// ---------------------------------------------------------------------------------------------
// AICPU scheduler threads: each serves one lane; a run with n AICPU threads spreads its tasks
// over lanes 0..n-2 by sequence number. They spin briefly on the lane, then park.

void Chip::post_locked(Task* t, SchedEvent ev) {
    const int lane = static_cast<int>(t->seq % static_cast<std::uint64_t>(t->run->lanes));
    SchedLane& L = lanes_[lane];
    ev.task = t;
    L.queue.push_back(std::move(ev));
    L.pending.fetch_add(1, std::memory_order_release);
    if (L.sleeping) L.cv.notify_one();
}

void Chip::scheduler_loop(int lane) {
    sched_started_.fetch_add(1, std::memory_order_release);
    SchedLane& L = lanes_[lane];
    std::vector<std::unique_ptr<RunState>> completed;
    for (;;) {
        const std::int64_t deadline = now_ns() + options_.spin_ns;
        for (unsigned i = 1; L.pending.load(std::memory_order_acquire) == 0 && !stop_.load(std::memory_order_relaxed);
             ++i) {
            cpu_relax();
            if (spin_expired(i, deadline)) break;
        }
        {
            std::unique_lock<std::mutex> lk(mu_);
            if (L.queue.empty()) {
                if (stop_.load()) return;
                L.sleeping = true;
                L.cv.wait(lk, [&] { return !L.queue.empty() || stop_.load(); });
                L.sleeping = false;
                if (L.queue.empty()) return;
            }
            while (!L.queue.empty()) {
                SchedEvent ev = std::move(L.queue.front());
                L.queue.pop_front();
                L.pending.fetch_sub(1, std::memory_order_relaxed);
                RunState& rs = *ev.task->run;
                auto& st = rs.sched[lane];
                const std::int64_t now = now_ns();
                if (st.dispatched + st.completed == 0) st.first_ns = now;
                st.last_ns = now;
                if (ev.finished) {
                    ++st.completed;
                    // After this the run may be complete: do not touch rs below.
                    if (auto done = resolve_locked(ev.task, ev.thread, ev.start_ns, ev.end_ns, ev.error))
                        completed.push_back(std::move(done));
                } else {
                    ++st.dispatched;
                    push_ready_locked(ev.task);
                }
            }
        }
        for (auto& done : completed) finalize_run(std::move(done));
        completed.clear();
    }
}

void Chip::fail_locked(RunState& rs, const std::string& message) {
    if (rs.failed) return;
    rs.failed = true;
    rs.error = message;
}

void Chip::orch_fail(RunState& rs, const std::string& message) {
    std::lock_guard<std::mutex> lk(mu_);
    fail_locked(rs, message);
}

void Chip::execute_run(Pending& p) {
    if (p.kernel_launch) {
        std::string error = consume_kernel_launch(p);
        if (!error.empty()) {
            complete_run(*p.run, std::move(error), 0, {});
            return;
        }
    }
    auto owned = std::make_unique<RunState>();
    RunState& rs = *owned;
    rs.run = p.run;
    rs.program_ref = p.program;
    rs.program = p.program.get();
    rs.config = p.config;
    rs.tensors = std::move(p.tensors);
    rs.scalars = std::move(p.scalars);
    rs.t0 = now_ns();
    {
        std::unique_lock<std::mutex> lk(mu_);
        bool same = true;
        for (int r = 0; r < kRingCount; ++r) {
            const Ring& ring = *rings_[r];
            same = same && !ring.slots.empty() && ring.window() == rs.config.task_window[r] &&
                   ring.dep_cap == rs.config.dep_pool[r] && ring.heap_cap == rs.config.heap[r];
        }
        if (!same) {
            // Other ring sizes: let earlier runs drain (their tasks and heap blocks) first.
            orch_wait_locked(lk, [&] {
                if (in_flight_ != 0) return false;
                retire_locked();
                for (const auto& ring : rings_)
                    if (!ring->blocks.empty()) return false;
                return true;
            });
            tensor_map_.clear();  // every task is done; the slots are about to be replaced
            for (int r = 0; r < kRingCount; ++r) {
                Ring& ring = *rings_[r];
                const std::uint64_t window = rs.config.task_window[r];
                if (ring.window() != window || ring.slots.empty()) {
                    ring.slots = std::vector<Task>(window);
                    ring.mask = window - 1;
                }
                ring.dep_cap = rs.config.dep_pool[r];
                if (ring.heap_cap != rs.config.heap[r]) {
                    ring.heap.reset();
                    ring.heap_cap = rs.config.heap[r];
                }
                ring.heap_head = ring.heap_tail = ring.heap_used = 0;
                ring.blocks.clear();
            }
        }
        // Scheduler threads start on demand and stay until close(); a run that cannot get its
        // threads (the system refuses) runs with the ones that exist and fails with the reason.
        const int want = static_cast<int>(rs.config.aicpu_threads) - 1;
        while (scheduler_count_ < want) {
            try {
                const int lane = scheduler_count_;
                schedulers_.emplace_back([this, lane] { scheduler_loop(lane); });
                ++scheduler_count_;
            } catch (const std::exception& e) {
                fail_locked(rs, "aicpu_thread_num: cannot start AICPU scheduler thread " +
                                    std::to_string(scheduler_count_) + ": " + e.what());
                break;
            }
        }
        // As in the constructor: a scheduler still starting may hold allocator locks a fork
        // would hand to the child, so wait until each one runs its loop.
        while (sched_started_.load(std::memory_order_acquire) < scheduler_count_) std::this_thread::yield();
        rs.lanes = std::min(want, scheduler_count_);
        for (auto& ring : rings_) ring->run_start = ring->next;
        current_ = &rs;
        active_.push_back(std::move(owned));
    }

    ChipStorageTaskArgs args{};
    args.abi_version = kOrchestrationAbiVersion;
    args.tensor_count = static_cast<std::uint32_t>(rs.tensors.size());
    args.scalar_count = static_cast<std::uint32_t>(rs.scalars.size());
    args.tensors = rs.tensors.data();
    args.scalars = rs.scalars.data();
    SimplerOrchContext ctx{this, &rs};
    const std::string what = "orchestration '" + rs.program->name + "'";
    rs.orch_start = now_ns();
    try {
        const std::int32_t status = rs.program->entry(&kOrchApi, &ctx, &args);
        if (status != 0) orch_fail(rs, what + " returned status " + std::to_string(status));
    } catch (const std::exception& e) {
        orch_fail(rs, what + " threw " + e.what());
    } catch (...) {
        orch_fail(rs, what + " threw a non-standard exception");
    }
    rs.orch_end = now_ns();

    std::unique_lock<std::mutex> lk(mu_);
    while (rs.depth > 0) {  // scopes left open end with the orchestration
        lk.unlock();
        orch_scope_end(rs);
        lk.lock();
    }
    // Blocks allocated outside any scope live until the run's tasks (and earlier ones) retire.
    for (auto& ring : rings_)
        for (auto& b : ring->blocks)
            if (!b.closed && b.run_id == rs.run->id()) {
                b.closed = true;
                for (int r = 0; r < kRingCount; ++r) b.release_after[r] = rings_[r]->next;
            }
    rs.orch_done = true;
    current_ = nullptr;
    retire_locked();
    std::unique_ptr<RunState> done = take_if_complete_locked(rs);
    lk.unlock();
    if (done) finalize_run(std::move(done));
}

void Chip::finalize_run(std::unique_ptr<RunState> owned) {
    // Runs on the thread that retired the run's last task (or the orchestrator): the run is out
    // of active_, so nothing else touches it.
    RunState& rs = *owned;
    const std::string what = "orchestration '" + rs.program->name + "'";
    rs.slices.push_back(TraceSlice{0, rs.orch_start - rs.t0, rs.orch_end - rs.t0, kOrchestrationSlice, -1, what});
    // Scheduler tracks follow the AICore tracks, so AICore track ids do not depend on the run.
    const int first_sched = 1 + options_.aic_threads + options_.aiv_threads;
    for (int k = 0; k < rs.lanes; ++k) {
        const auto& st = rs.sched[k];
        if (st.dispatched + st.completed == 0) continue;
        rs.slices.push_back(TraceSlice{first_sched + k, st.first_ns - rs.t0, st.last_ns - rs.t0, kSchedulerSlice, -1,
                                       "scheduler: dispatched " + std::to_string(st.dispatched) + ", completed " +
                                           std::to_string(st.completed)});
    }
    std::vector<std::string> files;
    if (rs.config.swimlane || rs.config.dep_graph) {
        try {
            std::vector<std::string> names{"AICPU orchestrator"};
            int aic = 0, aiv = 0;
            for (int i = 0; i < options_.aic_threads; ++i) names.push_back("AIC " + std::to_string(aic++));
            for (int i = 0; i < options_.aiv_threads; ++i) names.push_back("AIV " + std::to_string(aiv++));
            for (int k = 0; k < rs.lanes; ++k) names.push_back("AICPU scheduler " + std::to_string(k));
            const std::string base = rs.config.output_prefix;
            if (rs.config.swimlane) files.push_back(write_swimlane(base, rs.run->id(), names, rs.slices));
            if (rs.config.dep_graph) files.push_back(write_dep_graph(base, rs.run->id(), rs.nodes));
        } catch (const std::exception& e) {
            if (!rs.failed) {
                rs.failed = true;
                rs.error = std::string("diagnostics: ") + e.what();
            }
        }
    }
    complete_run(*rs.run, rs.failed ? rs.error : std::string(), rs.submitted, std::move(files));
    owned.reset();  // releases the program (and its binaries) before close() may return
    std::lock_guard<std::mutex> lk(mu_);
    --finalizing_;
    if (idle_locked()) idle_cv_.notify_all();
}

void Chip::complete_run(Run& run, std::string error, std::uint64_t submitted, std::vector<std::string> files) {
    {
        std::lock_guard<std::mutex> lk(run.mu_);
        run.error_ = std::move(error);
        run.tasks_submitted_ = submitted;
        run.files_ = std::move(files);
        run.done_.store(true, std::memory_order_release);
    }
    run.cv_.notify_all();
}

// ---------------------------------------------------------------------------------------------
// The orchestration function table

std::int32_t Chip::orch_scope_begin(RunState& rs) {
    std::lock_guard<std::mutex> lk(mu_);
    ++rs.depth;
    return 0;
}

std::int32_t Chip::orch_scope_end(RunState& rs) {
    std::lock_guard<std::mutex> lk(mu_);
    if (rs.depth == 0) {
        fail_locked(rs, "orchestration '" + rs.program->name + "': scope_end without a matching scope_begin");
        return 1;
    }
    for (auto& ring : rings_)
        for (auto& b : ring->blocks)
            if (!b.closed && b.depth == rs.depth && b.run_id == rs.run->id()) {
                b.closed = true;
                for (int r = 0; r < kRingCount; ++r) b.release_after[r] = rings_[r]->next;
            }
    --rs.depth;
    retire_locked();
    return 0;
}

std::int32_t Chip::orch_alloc(RunState& rs, DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                              ChipTensor* out) {
    const std::string what = "orchestration '" + rs.program->name + "': alloc_tensor";
    std::unique_lock<std::mutex> lk(mu_);
    if (rs.failed) return 1;
    const auto code = static_cast<std::uint8_t>(dtype);
    if (!is_known_dtype(code)) {
        fail_locked(rs, what + ": unknown dtype code " + std::to_string(code));
        return 1;
    }
    if (ndims < 1 || ndims > kMaxTensorDims || shape == nullptr || out == nullptr) {
        fail_locked(rs, what + ": expected 1..5 dims with a shape and an output, got ndims " + std::to_string(ndims));
        return 1;
    }
    std::uint64_t elems = 1;
    for (std::uint32_t i = 0; i < ndims; ++i)
        if (__builtin_mul_overflow(elems, static_cast<std::uint64_t>(shape[i]), &elems)) {
            fail_locked(rs, what + ": shape overflows");
            return 1;
        }
    const std::uint64_t bytes = std::max<std::uint64_t>((elems * dtype_bits(code) + 7) / 8, 1);
    const std::uint64_t reserve = (bytes + 63) / 64 * 64;
    const int r = static_cast<int>(std::min<std::uint32_t>(rs.depth, kRingCount - 1));
    Ring& ring = *rings_[r];
    if (rs.config.workspace_budget_bytes != 0 && rs.workspace_used + reserve > rs.config.workspace_budget_bytes) {
        fail_locked(rs, what + ": " + std::to_string(reserve) + " bytes would exceed workspace_budget_bytes " +
                            std::to_string(rs.config.workspace_budget_bytes) + " (" +
                            std::to_string(rs.workspace_used) + " in use)");
        return 1;
    }
    if (reserve > ring.heap_cap) {
        fail_locked(rs, what + ": " + std::to_string(reserve) + " bytes can never fit ring " + std::to_string(r) +
                            "'s heap of " + std::to_string(ring.heap_cap) + " bytes");
        return 1;
    }
    if (!ring.heap) {
        ring.heap.reset(static_cast<std::uint8_t*>(std::aligned_alloc(64, (ring.heap_cap + 63) / 64 * 64)));
        if (!ring.heap) {
            fail_locked(rs, what + ": cannot allocate ring " + std::to_string(r) + "'s heap");
            return 1;
        }
    }
    // FIFO ring-buffer allocation: live blocks occupy [head, tail) or, wrapped, [head, cap) and
    // [0, tail). A block that does not fit before the end starts again at offset 0.
    std::uint64_t offset = 0;
    auto try_alloc = [&]() {
        if (ring.blocks.empty()) {
            ring.heap_head = ring.heap_tail = 0;
            offset = 0;
            return reserve <= ring.heap_cap;
        }
        if (ring.heap_tail > ring.heap_head) {  // not wrapped
            if (ring.heap_cap - ring.heap_tail >= reserve) {
                offset = ring.heap_tail;
                return true;
            }
            if (ring.heap_head >= reserve) {
                offset = 0;
                return true;
            }
            return false;
        }
        if (ring.heap_head - ring.heap_tail >= reserve) {  // wrapped
            offset = ring.heap_tail;
            return true;
        }
        return false;
    };
    const bool ok = orch_wait_locked(lk, [&] {
        if (try_alloc() || rs.failed) return true;
        // No progress possible: nothing in flight, or the oldest block's scope is still open.
        if (!ring.blocks.empty() && !ring.blocks.front().closed) return true;
        return in_flight_ == 0;
    });
    if (rs.failed) return 1;
    if (!ok || !try_alloc()) {
        std::uint64_t open_bytes = 0;
        for (const auto& b : ring.blocks)
            if (!b.closed) open_bytes += b.size;
        fail_locked(rs, what + ": deadlock: ring " + std::to_string(r) + "'s heap of " + std::to_string(ring.heap_cap) +
                            " bytes cannot fit " + std::to_string(reserve) + " bytes; " + std::to_string(open_bytes) +
                            " bytes are held by scopes that are still open");
        return 1;
    }
    HeapBlock b;
    b.offset = offset;
    b.size = reserve;
    b.depth = rs.depth;
    b.run_id = rs.run->id();
    if (ring.blocks.empty()) ring.heap_head = offset;
    ring.blocks.push_back(b);
    ring.heap_used += reserve;
    ring.heap_tail = offset + reserve;
    rs.workspace_used += reserve;

    std::memset(out, 0, sizeof(ChipTensor));
    out->buffer.addr = reinterpret_cast<std::uint64_t>(ring.heap.get()) + offset;
    out->buffer.size = bytes;
    out->ndims = ndims;
    out->dtype = code;
    out->address_space = static_cast<std::uint8_t>(AddressSpace::DEVICE);
    std::uint64_t stride = 1;
    for (std::uint32_t i = ndims; i-- > 0;) {
        out->shapes[i] = shape[i];
        out->strides[i] = static_cast<std::uint32_t>(stride);
        stride *= std::max<std::uint32_t>(shape[i], 1);
    }
    out->is_contiguous = 1;
    return 0;
}

std::int64_t Chip::orch_submit(RunState& rs, const OrchTaskSpec* spec) {
    const std::uint32_t index = rs.submitted;
    // Messages are built only on failure: the success path allocates nothing here.
    auto orch = [&] { return "orchestration '" + rs.program->name + "'"; };
    auto reject = [&](const std::string& message) -> std::int64_t {
        orch_fail(rs, message);
        return -1;
    };
    if (spec == nullptr) return reject(orch() + ": task " + std::to_string(index) + ": submit got a null task");
    const CoreKernel* k = rs.program->kernel(spec->func_id);
    auto task = [&] { return orch() + ": task " + std::to_string(index); };
    if (k == nullptr) {
        std::string ids;
        for (const auto& [id, kk] : rs.program->kernels) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
        return reject(task() + ": func_id " + std::to_string(spec->func_id) + " is not a child of this callable (children: " +
                      (ids.empty() ? "none" : ids) + ")");
    }
    auto label = [&] { return task() + " (kernel " + k->label() + ")"; };
    if (spec->tensor_count != k->tensor_count || spec->scalar_count != k->scalar_count)
        return reject(label() + ": expected " + std::to_string(k->tensor_count) + " tensors and " +
                      std::to_string(k->scalar_count) + " scalars, got " + std::to_string(spec->tensor_count) + " and " +
                      std::to_string(spec->scalar_count));
    if ((spec->tensor_count && spec->tensors == nullptr) || (spec->scalar_count && spec->scalars == nullptr) ||
        (spec->dep_count && spec->deps == nullptr))
        return reject(label() + ": null argument array");
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        const OrchTensorArg& a = spec->tensors[i];
        if (a.tensor == nullptr) return reject(label() + ": tensor " + std::to_string(i) + " is null");
        if (a.direction != k->signature[i])
            return reject(label() + ": tensor " + std::to_string(i) + " is tagged " + direction_name(a.direction) +
                          " but the kernel signature says " + direction_name(k->signature[i]));
        if (!tensor_ok(*a.tensor)) {
            try {
                check_tensor(*a.tensor, label() + ": tensor " + std::to_string(i));
            } catch (const std::exception& e) {
                return reject(e.what());
            }
        }
    }

    std::unique_lock<std::mutex> lk(mu_);
    if (rs.failed) return -1;
    const int r = static_cast<int>(std::min<std::uint32_t>(rs.depth, kRingCount - 1));
    Ring& ring = *rings_[r];
    // Explicit dependencies must name earlier tasks of this run.
    for (std::uint32_t d = 0; d < spec->dep_count; ++d) {
        const std::int64_t id = spec->deps[d];
        const int dr = static_cast<int>(static_cast<std::uint64_t>(id) >> 48);
        const std::uint64_t dseq = static_cast<std::uint64_t>(id) & ((std::uint64_t{1} << 48) - 1);
        if (id < 0 || dr >= kRingCount || dseq < rings_[dr]->run_start || dseq >= rings_[dr]->next) {
            fail_locked(rs, label() + ": explicit dependency " + std::to_string(d) + " (" + std::to_string(id) +
                                ") is not a task id returned by an earlier submit of this run");
            return -1;
        }
    }

    // Back-pressure: wait for a task-window slot, then for enough dependency-pool entries.
    std::vector<Task*>& preds = preds_;  // orchestrator-thread scratch, reused across submits
    for (;;) {
        const bool ok = orch_wait_locked(lk, [&] { return ring.next - ring.head < ring.window() || rs.failed || in_flight_ == 0; });
        if (rs.failed) return -1;
        if (!ok || ring.next - ring.head >= ring.window()) {
            fail_locked(rs, label() + ": deadlock: ring " + std::to_string(r) + "'s task window is full with nothing running");
            return -1;
        }
        // Dependencies from overlapping regions against tasks that are still in flight.
        preds.clear();
        auto add_pred = [&](Task* p) {
            if (std::find(preds.begin(), preds.end(), p) == preds.end()) preds.push_back(p);
        };
        auto& map = tensor_map_;
        for (std::size_t e = 0; e < map.size();) {
            MapEntry& en = map[e];
            if (en.task->state == Task::State::Done || en.task->seq != en.seq ||
                en.task->state == Task::State::Free) {
                en = map.back();
                map.pop_back();
                continue;
            }
            ++e;
        }
        for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
            const ChipTensor& view = *spec->tensors[i].tensor;
            std::uint64_t lo = 0, hi = 0;
            if (!tensor_region(view, &lo, &hi)) continue;
            const ArgDirection dir = spec->tensors[i].direction;
            const bool reads = dir != ArgDirection::Out;
            const bool writes = dir != ArgDirection::In;
            for (const MapEntry& en : map)
                if (en.lo < hi && lo < en.hi && (writes || (reads && en.write)) && tensors_may_overlap(*en.tensor, view))
                    add_pred(en.task);
        }
        for (std::uint32_t d = 0; d < spec->dep_count; ++d) {
            const auto id = static_cast<std::uint64_t>(spec->deps[d]);
            Ring& dring = *rings_[id >> 48];
            const std::uint64_t dseq = id & ((std::uint64_t{1} << 48) - 1);
            if (dseq < dring.head) continue;  // retired
            Task* p = &dring.slots[dseq & dring.mask];
            if (p->seq == dseq && p->state != Task::State::Done && p->state != Task::State::Free) add_pred(p);
        }
        const auto edges = static_cast<std::uint32_t>(preds.size());
        if (edges > ring.dep_cap) {
            fail_locked(rs, label() + ": needs " + std::to_string(edges) + " dependency entries but ring " + std::to_string(r) +
                                "'s dependency pool holds " + std::to_string(ring.dep_cap));
            return -1;
        }
        if (ring.dep_used + edges <= ring.dep_cap) break;
        const std::uint64_t seen = in_flight_;
        const bool progressed = orch_wait_locked(lk, [&] { return in_flight_ < seen || rs.failed || in_flight_ == 0; });
        (void)progressed;
        if (rs.failed) return -1;
    }

    const std::uint64_t seq = ring.next++;
    Task& t = ring.slots[seq & ring.mask];
    t.seq = seq;
    t.ring = r;
    t.index = index;
    t.kernel = k;
    t.run = &rs;
    t.tensors.resize(spec->tensor_count);
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        t.tensors[i] = *spec->tensors[i].tensor;
        t.tensors[i].owner_task_id = seq;
    }
    t.args.resize(spec->tensor_count + spec->scalar_count);
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) t.args[i] = reinterpret_cast<std::int64_t>(&t.tensors[i]);
    for (std::uint32_t i = 0; i < spec->scalar_count; ++i)
        t.args[spec->tensor_count + i] = static_cast<std::int64_t>(spec->scalars[i]);
    t.successors.clear();
    t.pred_indices.clear();
    t.edges = static_cast<std::uint32_t>(preds.size());
    t.fanin = static_cast<std::int32_t>(preds.size());
    ring.dep_used += t.edges;
    for (Task* p : preds) {
        p->successors.push_back(&t);
        if (rs.config.dep_graph && p->run == &rs) t.pred_indices.push_back(p->index);
    }
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        std::uint64_t lo = 0, hi = 0;
        if (!tensor_region(t.tensors[i], &lo, &hi)) continue;
        if (spec->tensors[i].direction != ArgDirection::In) {
            // A write that covers every element of an older entry is ordered after it (WAR/WAW
            // above), so later accesses need only depend on this task: drop covered entries
            // (keeps fan-in small). Covered elements, not bytes: a strided write whose byte
            // range spans an older entry's may leave the older entry's elements untouched.
            auto& map = tensor_map_;
            for (std::size_t e = 0; e < map.size();) {
                if (map[e].task != &t && map[e].lo >= lo && map[e].hi <= hi && tensor_covers(t.tensors[i], *map[e].tensor)) {
                    map[e] = map.back();
                    map.pop_back();
                    continue;
                }
                ++e;
            }
        }
        tensor_map_.push_back(MapEntry{lo, hi, &t.tensors[i], &t, seq, spec->tensors[i].direction != ArgDirection::In});
    }
    if (rs.config.dep_graph) rs.nodes.push_back(TaskNode{index, spec->func_id, k->name, t.pred_indices});
    ++rs.submitted;
    ++rs.outstanding;
    ++in_flight_;
    if (t.fanin == 0) {
        if (rs.lanes > 0) {
            t.state = Task::State::Pending;  // a scheduler thread dispatches it
            post_locked(&t, SchedEvent{});
        } else {
            push_ready_locked(&t);
        }
    } else {
        t.state = Task::State::Pending;
    }
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(r) << 48) | seq);
}

// ---------------------------------------------------------------------------------------------
// Scheduling and execution

void Chip::push_ready_locked(Task* t) {
    t->state = Task::State::Ready;
    const int type = static_cast<int>(t->kernel->core);
    ready_[type].push_back(t);
    ready_count_[type].fetch_add(1, std::memory_order_release);
    if (sleepers_[type] > 0) core_cv_[type].notify_one();
}

Chip::Task* Chip::pop_ready(CoreType core) {
    const int type = static_cast<int>(core);
    auto take = [&]() -> Task* {
        Task* t = ready_[type].front();
        ready_[type].pop_front();
        ready_count_[type].fetch_sub(1, std::memory_order_relaxed);
        t->state = Task::State::Running;
        return t;
    };
    const std::int64_t deadline = now_ns() + options_.spin_ns;
    for (unsigned i = 1;; ++i) {
        if (ready_count_[type].load(std::memory_order_acquire) > 0) {
            std::lock_guard<std::mutex> lk(mu_);
            if (!ready_[type].empty()) return take();
        }
        if (stop_.load(std::memory_order_relaxed)) break;
        cpu_relax();
        if (spin_expired(i, deadline)) break;
    }
    std::unique_lock<std::mutex> lk(mu_);
    ++sleepers_[type];
    core_cv_[type].wait(lk, [&] { return !ready_[type].empty() || stop_.load(); });
    --sleepers_[type];
    if (ready_[type].empty()) return nullptr;
    return take();
}

void Chip::core_loop(int thread_index, CoreType type) {
    started_.fetch_add(1, std::memory_order_release);
    for (;;) {
        Task* t = pop_ready(type);
        if (t == nullptr) {
            if (stop_.load()) return;
            continue;
        }
        const CoreKernel* k = t->kernel;
        std::string error;
        const std::int64_t start = now_ns();
        bool skip;
        {
            // A failed run drains without running more kernels.
            std::lock_guard<std::mutex> lk(mu_);
            skip = t->run->failed;
        }
        if (!skip) {
            try {
                k->entry(t->args.data());
                if (const char* msg = k->take_error()) error = msg;
            } catch (const std::exception& e) {
                error = std::string("threw ") + e.what();
                k->take_error();
            } catch (...) {
                error = "threw a non-standard exception";
                k->take_error();
            }
        }
        if (!skip) t->run->run->tasks_executed_.fetch_add(1, std::memory_order_relaxed);
        // After finish_task the run may complete and its state go away: do not touch t->run.
        finish_task(t, thread_index, start, now_ns(), skip ? std::string() : std::move(error));
    }
}

void Chip::finish_task(Task* t, int thread_index, std::int64_t start_ns, std::int64_t end_ns, std::string error) {
    std::unique_ptr<RunState> done;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (t->run->lanes > 0) {
            // The AICore only signals completion; a scheduler thread resolves it.
            SchedEvent ev;
            ev.finished = true;
            ev.thread = thread_index;
            ev.start_ns = start_ns;
            ev.end_ns = end_ns;
            ev.error = std::move(error);
            post_locked(t, std::move(ev));
            return;
        }
        done = resolve_locked(t, thread_index, start_ns, end_ns, error);
    }
    if (done) finalize_run(std::move(done));
}

std::unique_ptr<Chip::RunState> Chip::resolve_locked(Task* t, int thread_index, std::int64_t start_ns,
                                                     std::int64_t end_ns, const std::string& error) {
    RunState& rs = *t->run;
    if (!error.empty())
        fail_locked(rs, "orchestration '" + rs.program->name + "': task " + std::to_string(t->index) + " (kernel " +
                            t->kernel->label() + ") failed: " + error);
    if (rs.config.swimlane)
        rs.slices.push_back(TraceSlice{thread_index, start_ns - rs.t0, end_ns - rs.t0, static_cast<std::int64_t>(t->index),
                                       t->kernel->func_id, t->kernel->name});
    t->state = Task::State::Done;
    for (Task* s : t->successors)
        if (--s->fanin == 0) push_ready_locked(s);
    rings_[t->ring]->dep_used -= t->edges;
    t->edges = 0;
    --rs.outstanding;
    --in_flight_;
    retire_locked();
    progress_.fetch_add(1, std::memory_order_release);
    if (orch_waiting_) orch_cv_.notify_one();
    return take_if_complete_locked(rs);
}

void Chip::retire_locked() {
    for (auto& rp : rings_) {
        Ring& ring = *rp;
        while (ring.head < ring.next) {
            Task& t = ring.slots[ring.head & ring.mask];
            if (t.state != Task::State::Done) break;
            t.state = Task::State::Free;
            ++ring.head;
        }
    }
    for (auto& rp : rings_) {
        Ring& ring = *rp;
        while (!ring.blocks.empty()) {
            const HeapBlock& b = ring.blocks.front();
            if (!b.closed) break;
            bool released = true;
            for (int r = 0; r < kRingCount; ++r)
                if (rings_[r]->head < b.release_after[r]) released = false;
            if (!released) break;
            ring.heap_used -= b.size;
            if (current_ != nullptr && b.run_id == current_->run->id())
                current_->workspace_used -= std::min(current_->workspace_used, b.size);
            ring.blocks.pop_front();
            if (ring.blocks.empty()) {
                ring.heap_head = ring.heap_tail = 0;
            } else {
                ring.heap_head = ring.blocks.front().offset;
            }
        }
    }
}

}  // namespace simpler::chip

// ---------------------------------------------------------------------------------------------
// Kernel mode

namespace simpler::chip {

// Copy-on-enqueue runner of one launch: copies the block into a queued item for the simulated
// AICPU consumer. Never throws; a nonzero code means nothing was enqueued.
class Chip::LaunchRunner final : public AicpuPayloadRunner {
public:
    LaunchRunner(Chip& chip, const RunConfig& config) : chip_(chip), config_(config) {}
    int launch_aicpu_payload(const void* block, std::size_t bytes) noexcept override {
        try {
            Pending p;
            p.kernel_launch = true;
            p.config = config_;
            p.block.assign(static_cast<const std::uint8_t*>(block), static_cast<const std::uint8_t*>(block) + bytes);
            run = chip_.enqueue(std::move(p));
            return 0;
        } catch (const std::bad_alloc&) {
            return 2;
        } catch (...) {
            return 1;  // closed
        }
    }
    std::shared_ptr<Run> run;

private:
    Chip& chip_;
    const RunConfig& config_;
};

void Chip::enable_kernel_mode(std::uint64_t context_generation) {
    if (context_generation == 0)
        throw std::invalid_argument("borrowed_context_generation: expected a nonzero generation, got 0");
    std::lock_guard<std::mutex> lk(slots_mu_);
    if (binding_.context_generation != 0) throw std::runtime_error("kernel mode is already enabled on this chip");
    binding_.device_binding_addr = reinterpret_cast<std::uint64_t>(this);
    binding_.context_generation = context_generation;
}

int Chip::kernel_register(std::shared_ptr<const ChipProgram> program) {
    if (!kernel_mode()) throw std::runtime_error("kernel_register: the chip is not in kernel mode");
    if (program == nullptr) throw std::invalid_argument("register(callable): expected a loaded callable, got none");
    // Kernel-entry admission: the signature's effective counts, within the wire limits.
    std::vector<std::uint8_t> codes;
    for (ArgDirection d : program->signature) codes.push_back(static_cast<std::uint8_t>(d));
    InvocationCounts counts{};
    const InvocationStatus st = derive_invocation_counts(codes.data(), codes.size(), 0, &counts);
    if (st != InvocationStatus::Ok)
        throw std::invalid_argument("register(callable): '" + program->name + "' rejected by kernel-entry admission: " +
                                    status_name(st));
    for (const auto& [func_id, k] : program->kernels)
        if (core_threads_[static_cast<int>(k->core)] == 0)
            throw std::invalid_argument("register(callable): kernel " + k->label() + " needs an " +
                                        core_type_name(k->core) + " thread, but this Worker has none");
    std::lock_guard<std::mutex> lk(slots_mu_);
    for (int i = 0; i < kMaxCallables; ++i) {
        KernelSlot& slot = slots_[i];
        if (slot.live) continue;
        slot.program = std::move(program);
        slot.generation += 1;  // residency generation: live slots start at 1
        slot.view = PreparedInvocationView{i, counts.tensor_count, counts.scalar_count, slot.generation};
        if (!slot.owner) slot.owner = std::make_unique<TmrSubmissionOwner>();
        const InvocationStatus ps = slot.owner->publish(slot.view, binding_);
        if (ps != InvocationStatus::Ok) {
            slot.program.reset();
            throw std::invalid_argument(std::string("register(callable): cannot publish the slot: ") + status_name(ps));
        }
        slot.live = true;
        return i;
    }
    throw std::invalid_argument("register(callable): all 64 kernel-mode slots are in use");
}

void Chip::kernel_unregister(int slot) {
    std::lock_guard<std::mutex> lk(slots_mu_);
    if (slot < 0 || slot >= kMaxCallables || !slots_[slot].live)
        throw std::invalid_argument("unregister(handle): slot " + std::to_string(slot) + " is not live");
    slots_[slot].live = false;
    slots_[slot].owner->close();
    slots_[slot].program.reset();
}

std::uint64_t Chip::kernel_generation(int slot) const {
    std::lock_guard<std::mutex> lk(slots_mu_);
    if (slot < 0 || slot >= kMaxCallables) throw std::out_of_range("slot out of range");
    return slots_[slot].generation;
}

std::size_t Chip::kernel_template_bytes(int slot) const {
    std::lock_guard<std::mutex> lk(slots_mu_);
    if (slot < 0 || slot >= kMaxCallables || !slots_[slot].owner) return 0;
    return slots_[slot].owner->template_bytes();
}

std::shared_ptr<Run> Chip::kernel_launch(int slot, const std::vector<ChipTensor>& tensors,
                                         const std::vector<std::uint64_t>& scalars, RunConfig config) {
    if (!kernel_mode()) throw std::runtime_error("launch: the chip is not in kernel mode");
    validate_run_config(config);
    TmrSubmissionOwner* owner = nullptr;
    {
        std::lock_guard<std::mutex> lk(slots_mu_);
        if (slot < 0 || slot >= kMaxCallables || !slots_[slot].owner)
            throw std::invalid_argument("launch(handle): slot " + std::to_string(slot) + " was never registered");
        owner = slots_[slot].owner.get();  // owners live as long as the chip; close() makes them stale
    }
    for (std::size_t i = 0; i < tensors.size(); ++i)
        if (!tensor_ok(tensors[i])) check_tensor(tensors[i], "launch(args): tensor " + std::to_string(i));
    LaunchRunner runner(*this, config);
    const EnqueueOutcome r = owner->submit(runner, tensors.data(), tensors.size(), scalars.data(), scalars.size());
    if (r.status != InvocationStatus::Ok)
        throw std::invalid_argument(std::string("launch: TMR encode/enqueue rejected the invocation: ") +
                                    status_name(r.status));
    if (r.launch_rc != 0) throw std::runtime_error("launch: the Worker is closed");
    return runner.run;
}

std::shared_ptr<Run> Chip::kernel_enqueue_block(const void* block, std::size_t bytes, RunConfig config) {
    if (!kernel_mode()) throw std::runtime_error("enqueue: the chip is not in kernel mode");
    validate_run_config(config);
    LaunchRunner runner(*this, config);
    if (runner.launch_aicpu_payload(block, bytes) != 0) throw std::runtime_error("enqueue: the Worker is closed");
    return runner.run;
}

// The simulated AICPU consumer: decode and validate the copied packet against the trusted view
// of the slot it names and the trusted binding, before anything runs. Returns an error message,
// or "" with p.program/p.tensors/p.scalars filled.
std::string Chip::consume_kernel_launch(Pending& p) {
    const std::string what = "kernel launch rejected by the AICPU consumer: ";
    ByteSpan packet;
    InvocationStatus st = tmr_block_packet(p.block.data(), p.block.size(), &packet);
    if (st != InvocationStatus::Ok) return what + status_name(st) + " (transport block)";
    std::int32_t id = -1;
    if (!packet.read_at(offsetof(InvocationHeader, callable_id), &id)) return what + "InvalidSize (short header)";
    PreparedInvocationView view{};
    TmrBindingRef binding{};
    std::shared_ptr<const ChipProgram> program;
    {
        std::lock_guard<std::mutex> lk(slots_mu_);
        if (!callable_id_in_range(id)) return what + "InvalidHeader (callable_id " + std::to_string(id) + ")";
        const KernelSlot& slot = slots_[id];
        if (!slot.live) return what + "StaleCallable (slot " + std::to_string(id) + " is not registered)";
        view = slot.view;
        binding = binding_;
        program = slot.program;
    }
    auto storage = std::make_unique<EntryArgsStorage>();
    st = consume_tmr_invocation(packet, view, binding, storage.get());
    if (st != InvocationStatus::Ok) return what + status_name(st);
    for (std::int32_t i = 0; i < storage->tensor_count; ++i)
        if (!tensor_ok(storage->tensors[i]))
            return what + "InvalidTensor (tensor " + std::to_string(i) + " is outside its device allocation)";
    p.program = std::move(program);
    p.tensors.assign(storage->tensors, storage->tensors + storage->tensor_count);
    p.scalars.assign(storage->scalars, storage->scalars + storage->scalar_count);
    return {};
}

}  // namespace simpler::chip
