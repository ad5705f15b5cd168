// Private to the chip's implementation (chip_*.cpp, tensor_overlap.cpp): the state of tasks,
// rings and runs, the context handed to orchestration code, and the clock and spin helpers
// the threads share. Nothing outside src/core/chip includes it.
#pragma once

#include <chrono>
#include <cstdlib>
#include <thread>
#include <unordered_map>
#include <vector>

#include "chip.hpp"
#include "trace.hpp"

namespace simpler::chip {

inline std::int64_t now_ns() noexcept {
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
// yields the core every 32 steps. Measured on the 2-core machine under load (14 runnable
// processes), a pure pause-spin that then parks made a handoff through the orchestrator thread
// 3-4x slower (median ~340 us against ~95 us): a parked thread waits for the scheduler to run it
// again, a yielding one stays in the run queue. Only a few threads spin at once (begin_spin).
inline bool spin_expired(unsigned i, std::int64_t deadline) noexcept {
    if ((i & 31) != 0) return false;
    if (now_ns() > deadline) return true;
    std::this_thread::yield();
    return false;
}

// The process's spinning budget for the chip's own threads (orchestrator, AICPU schedulers,
// AICore threads): true when this thread may spin-wait now (then call end_spin() when it
// stops). At most one more of them than the process has CPUs (its affinity mask) spin at once;
// one that gets no budget parks at once. The one more: a chip's idle AIC and AIV threads alone
// fill a budget of 2, and the orchestrator thread, which takes the next queued run, then always
// parked: every queued run paid a wake (measured on the 2-core machine: a round trip through
// the orchestrator thread 24-25 us against 15-17 us, a host_build_graph call 24.7 us against
// 14-16 us). Spinners yield every 32 steps (spin_expired), so the extra one shares a core
// rather than holding it. A thread waiting for a Run (Run::wait) is outside the budget.
bool begin_spin() noexcept;
void end_spin() noexcept;

struct AlignedFree {
    void operator()(std::uint8_t* p) const noexcept { std::free(p); }
};

// Byte region [lo, hi) a nonempty tensor touches (conservative for strided views).
inline bool tensor_region(const ChipTensor& t, std::uint64_t* lo, std::uint64_t* hi) noexcept {
    if (chip_tensor_is_empty(t)) return false;
    std::uint64_t extent = 0;
    if (!chip_tensor_extent(t, &extent)) return false;
    const std::uint64_t bits = dtype_bits(t.dtype);
    *lo = t.buffer.addr + t.start_offset * bits / 8;
    *hi = t.buffer.addr + ((t.start_offset + extent) * bits + 7) / 8;
    return true;
}

// The name of an argument direction, for messages.
inline const char* direction_name(ArgDirection d) noexcept {
    switch (d) {
        case ArgDirection::In: return "In";
        case ArgDirection::Out: return "Out";
        case ArgDirection::InOut: return "InOut";
        case ArgDirection::Scalar: return "Scalar";
    }
    return "unknown";
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

// One tensor access of a task in a run's whole graph (finished tasks included).
struct GraphAccess {
    std::uint64_t lo, hi;
    ChipTensor tensor;
    std::uint32_t index;
};

// A run's accesses so far, reads and writes apart: a read looks only at writes, so a long graph
// of tasks that read one tensor costs linear time, not quadratic.
struct GraphHistory {
    std::vector<GraphAccess> reads, writes;
};

// The dependencies of task `index` (the spec's tensors) on earlier accesses in `history`, by the
// tensor map's rule (tensors_may_overlap: In after writers; Out, InOut after readers and
// writers), appended to *deps; then the task's accesses join `history` (a covering write drops
// what it covers). Explicit dependencies are the caller's.
void graph_dependencies(GraphHistory& history, const OrchTaskSpec* spec, std::uint32_t index,
                        std::vector<std::uint32_t>* deps);

// alloc_tensor's request: "" with *bytes (the tensor's bytes), or what is wrong with it.
std::string alloc_request_error(DataType dtype, std::uint32_t ndims, const std::uint32_t* shape, const ChipTensor* out,
                                std::uint64_t* bytes);
// The dense row-major DEVICE descriptor of an intermediate tensor of `bytes` at `addr`.
void describe_alloc(ChipTensor* out, std::uint64_t addr, std::uint64_t bytes, DataType dtype, std::uint32_t ndims,
                    const std::uint32_t* shape);

// HBG: one task of a host-built graph. Its tensors (with their directions), scalars and
// predecessors (indices of earlier tasks, ascending) are ranges of the graph's flat arrays: a
// graph of n tasks makes a few growing allocations, not four per task.
struct HostTask {
    const CoreKernel* kernel = nullptr;
    std::uint32_t depth = 0;  // scope depth at submit: the ring it is placed on
    std::uint32_t tensor_count = 0, scalar_count = 0, pred_count = 0;
    std::size_t tensor_begin = 0, scalar_begin = 0, pred_begin = 0;
};

// HBG: a run's whole graph and the intermediate tensors it allocated (all live until the run
// ends, within byte_cap).
struct HostGraph {
    std::vector<HostTask> tasks;
    std::vector<ChipTensor> tensors;
    std::vector<ArgDirection> directions;
    std::vector<std::uint64_t> scalars;
    std::vector<std::uint32_t> preds;
    std::vector<std::uint32_t> scratch;  // a task's predecessors while they are decided
    GraphHistory history;                // the accesses of the tasks so far (graph_dependencies)
    std::vector<std::unique_ptr<std::uint8_t, AlignedFree>> blocks;
    std::uint64_t bytes = 0;
    std::uint64_t byte_cap = 0;
};

// HBG: an empty graph for a run to build on this thread. It has the capacity of a graph that a
// run finished on this thread before (recycle_host_graph), so that a long graph built again
// allocates nothing: growing fresh arrays of megabytes each run cost more in page faults than
// the graph's four small allocations a task did.
std::unique_ptr<HostGraph> take_host_graph();
// A finished run's graph: its intermediate tensors freed, its arrays emptied and kept for this
// thread's next graph, unless they hold more than kSpareGraphBytes (then freed).
void recycle_host_graph(std::unique_ptr<HostGraph> graph) noexcept;
inline constexpr std::size_t kSpareGraphBytes = std::size_t{16} << 20;

// An inline run's held tasks, oldest first: the first kInline in place, later ones (while any
// are queued there) in `more_`. A run holds one task or a few, so a run allocates nothing for
// them (std::deque allocates its map and a block when constructed: ~450 instructions a run).
template <class T>
class HeldFifo {
public:
    bool empty() const noexcept { return n_ == 0 && next_ == more_.size(); }
    T front() const noexcept { return n_ != 0 ? ring_[head_] : more_[next_]; }
    void pop_front() noexcept {
        if (n_ != 0) {
            head_ = (head_ + 1) % kInline;
            --n_;
        } else if (++next_ == more_.size()) {
            more_.clear();
            next_ = 0;
        }
    }
    void push_back(T t) {
        if (n_ < kInline && next_ == more_.size()) {  // nothing queued behind the ring
            ring_[(head_ + n_) % kInline] = t;
            ++n_;
        } else {
            more_.push_back(t);
        }
    }

private:
    static constexpr std::size_t kInline = 8;
    std::array<T, kInline> ring_{};
    std::size_t head_ = 0, n_ = 0;
    std::vector<T> more_;  // tasks from more_[next_] on, all newer than the ring's
    std::size_t next_ = 0;
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
    // dep_graph only: every access of the run so far (finished tasks included), so that the
    // graph holds every dependency of the program, not only those still pending at submit.
    GraphHistory history;
    std::unordered_map<std::int64_t, std::uint32_t> index_of_id;  // task id -> index in the run
    std::unique_ptr<HostGraph> graph;  // HBG only: the graph the host built
    // Inline run (orchestrated by the submitting thread on an idle chip, no scheduler lanes):
    // ready tasks held for that thread to run itself, oldest first (`held`): always one, so a
    // run whose tasks form a chain never hands off to a core thread, and every one whose
    // kernel's last task ran shorter than kCallerTaskNs (push_ready_locked); the others go to
    // the core threads. Cleared when the submitting thread stops draining (under mu_).
    bool inline_exec = false;
    HeldFifo<Task*> held;
};

// An inline run's submitting thread keeps every ready task whose kernel's last task ran
// shorter than this, rather than handing it to a core thread, and runs it before it places its
// next task (admit_task_locked). A hand-off per task costs more than such a task: the
// submitting thread and the core thread then contend for mu_ and the task's state on every
// task. Measured on the 2-core machine (docs/performance-threads.md), a long graph of empty
// kernels took 0.44 us a task when the kernel placed the two threads on one CPU and 4-6 us
// when it placed them on two; on the submitting thread alone, 0.14 us wherever it ran. A
// kernel not run yet counts as long. Longer tasks still go to the core threads, which run
// them in parallel with the orchestration.
inline constexpr std::int64_t kCallerTaskNs = 2'000;

// True when kernel k has run before, and its last timed task (CoreKernel::LastRunNs) took less
// than kCallerTaskNs.
inline bool short_kernel(const CoreKernel& k) noexcept {
    const std::int64_t ns = k.last_run.ns.load(std::memory_order_relaxed);
    return ns > 0 && ns < kCallerTaskNs;
}

}  // namespace simpler::chip

// The opaque context handed to orchestration code.
struct SimplerOrchContext {
    simpler::chip::Chip* chip;
    simpler::chip::Chip::RunState* state;
};

namespace simpler::chip {

// The orchestration function table handed to every orchestration entry (chip_orchestration.cpp).
extern const SimplerOrchApi kOrchApi;
// The table handed to an orchestration entry that builds a host graph (HBG).
extern const SimplerOrchApi kHostGraphApi;

// ---------------------------------------------------------------------------------------------
// Waiting on the orchestrator thread (or a caller orchestrating): spin briefly, then park on
// orch_cv_. A waiter `on_progress` is woken by every task completion; the orchestrator thread's
// wait for a queued run is not (enqueue, the end of a caller's orchestration and close wake it).

template <class Pred>
bool Chip::orch_wait_locked(std::unique_lock<std::mutex>& lk, Pred ready, bool on_progress) {
    // An inline run's orchestration (on its submitting thread; on_progress excludes the
    // orchestrator thread's wait for queued runs) runs its held tasks rather than wait for them.
    auto held = [&] { return on_progress && current_ != nullptr && !current_->held.empty(); };
    for (;;) {
        if (ready()) return true;
        if (held()) {
            run_held_locked(lk, *current_);
            continue;
        }
        // Spin without the lock on the progress counter (bumped by every task completion and
        // every queued run), re-checking under the lock only when something happened.
        bool woke = false;
        if (begin_spin()) {
            const std::int64_t deadline = now_ns() + options_.spin_ns;
            std::uint64_t seen = progress_.load(std::memory_order_acquire);
            lk.unlock();
            for (unsigned i = 1;; ++i) {
                cpu_relax();
                const std::uint64_t now = progress_.load(std::memory_order_acquire);
                if (now != seen) {
                    seen = now;
                    lk.lock();
                    if (ready() || held()) {
                        woke = true;
                        break;
                    }
                    lk.unlock();
                }
                if (spin_expired(i, deadline)) {
                    lk.lock();
                    break;
                }
            }
            end_spin();
        }
        if (woke) continue;
        if (on_progress) ++orch_waiting_;
        orch_cv_.wait(lk, [&] { return ready() || held() || stop_.load(); });
        if (on_progress) --orch_waiting_;
        if (held()) continue;
        return ready();
    }
}

template <class Label, class Collect>
bool Chip::admit_task_locked(std::unique_lock<std::mutex>& lk, RunState& rs, int r, Label label, Collect collect) {
    Ring& ring = *rings_[r];
    std::vector<Task*>& preds = preds_;  // orchestrator-thread scratch, reused across tasks
    // An inline run's held tasks of short kernels run now, before this one is placed: the tensor
    // map and the task window then hold only what is really in flight, so a long graph of short
    // tasks costs one submit and one run a task (each submit scans the tasks in flight).
    while (!rs.held.empty() && short_kernel(*rs.held.front()->kernel)) run_held_locked(lk, rs);
    for (;;) {
        const bool ok =
            orch_wait_locked(lk, [&] { return ring.next - ring.head < ring.window() || rs.failed || in_flight_ == 0; });
        if (rs.failed) return false;
        if (!ok || ring.next - ring.head >= ring.window()) {
            fail_locked(rs, label() + ": deadlock: ring " + std::to_string(r) + "'s task window is full with nothing running");
            return false;
        }
        preds.clear();
        collect(preds);
        const auto edges = static_cast<std::uint32_t>(preds.size());
        if (edges > ring.dep_cap) {
            fail_locked(rs, label() + ": needs " + std::to_string(edges) + " dependency entries but ring " +
                                std::to_string(r) + "'s dependency pool holds " + std::to_string(ring.dep_cap));
            return false;
        }
        if (ring.dep_used + edges <= ring.dep_cap) return true;
        const std::uint64_t seen = in_flight_;
        orch_wait_locked(lk, [&] { return in_flight_ < seen || rs.failed || in_flight_ == 0; });
        if (rs.failed) return false;
    }
}

}  // namespace simpler::chip
