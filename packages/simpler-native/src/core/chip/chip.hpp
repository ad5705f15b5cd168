// The simulated chip: one AICPU orchestrator thread that runs orchestration entries, up to three
// AICPU scheduler threads (a run with aicpu_threads = n uses n - 1 of them; with n = 1 the
// orchestrator publishes ready tasks and the AICore threads resolve completions themselves),
// and AICore threads (AIC for cube kernels, AIV for vector kernels)
// that run kernel entries. The tensormap-and-ringbuffer (TMR) runtime lives here: tasks are
// kept in four rings (one per scope depth; deeper scopes share the last), each with a task
// window, a heap for intermediate tensors and a dependency pool; dependencies come from
// overlapping tensor regions (RAW, WAR, WAW) plus explicit ones. See docs/simpler-runtime.md.
//
// Knows nothing of Python. Errors at the API surface are std exceptions; errors of a run
// (kernel failure, orchestration failure, invalid task, deadlock) are reported by its Run.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../backend.hpp"
#include "callable.hpp"
#include "device_memory.hpp"
#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/submission.hpp"
#include "thread.hpp"

struct SimplerOrchContext;

namespace simpler::chip {

inline constexpr int kRingCount = 4;
inline constexpr int kMaxAicpuThreads = 4;  // one orchestrator + up to three schedulers
inline constexpr int kMaxCoreThreads = 64;  // AIC threads, and AIV threads, of one chip

// Stack of every AICore thread. Kernels keep every tile they declare on the stack for the whole
// call; for a simulated platform pypto-ir refuses a kernel that declares more than 8 MiB of
// tiles (SIM_DECLARED_TILE_BYTES in pypto/ir/platforms.py; the tiles live at once must also fit
// the on-chip buffers), and the tile library adds at most a converted copy of a Right tile (4x
// L0B for int8 matmul). 16 MiB holds the largest legal kernel with room for the library and the
// call frames, whatever RLIMIT_STACK says; it is virtual memory, committed only as a kernel
// touches it. The guard region below it turns a frame that overruns the stack into a fault
// instead of a write into a neighbouring mapping.
inline constexpr std::size_t kCoreThreadStackBytes = std::size_t{16} << 20;
inline constexpr std::size_t kCoreThreadGuardBytes = std::size_t{1} << 20;
// Where a core's on-chip buffer starts: on a page, so a tile at a 64-byte offset sits on a cache
// line (chip_lifecycle.cpp).
inline constexpr std::uintptr_t kCoreBufferAlign = 4096;

// On-chip buffer capacities per platform (pypto/ir/platforms.py): UB, L1, L0A, L0B, L0C, BT.
inline constexpr std::array<std::uint64_t, kCoreBufferCount> kA2A3CoreBufferBytes{
    192u << 10, 512u << 10, 64u << 10, 64u << 10, 128u << 10, 1u << 10};
inline constexpr std::array<std::uint64_t, kCoreBufferCount> kA5CoreBufferBytes{
    192u << 10, 512u << 10, 64u << 10, 64u << 10, 256u << 10, 4u << 10};

// Per-run configuration (CallConfig after validation).
struct RunConfig {
    std::array<std::uint32_t, kRingCount> task_window{256, 256, 256, 256};  // powers of two
    std::array<std::uint64_t, kRingCount> heap{16u << 20, 16u << 20, 16u << 20, 16u << 20};  // bytes
    std::array<std::uint32_t, kRingCount> dep_pool{1024, 1024, 1024, 1024};
    std::uint64_t workspace_budget_bytes = 0;  // 0 = unlimited; intermediate tensors only
    // AICPU threads of the run, 1..kMaxAicpuThreads: the orchestrator plus aicpu_threads - 1
    // scheduler threads that dispatch its ready tasks and resolve its task completions.
    std::uint32_t aicpu_threads = 1;
    // When the chip is idle at submit (nothing queued, orchestrating or in flight), run the
    // orchestration on the submitting thread instead of handing it to the orchestrator thread:
    // one thread handoff fewer per run. submit then returns once the orchestration has returned,
    // which includes its back-pressure waits (a full task window, heap or dependency pool) on
    // its own tasks; so it is for callers that wait for the run anyway (simpler's Worker.run and
    // CallPlan runs set it). HBG always builds its graph on the submitting thread; this then
    // also places and runs it there when the chip is idle.
    bool orchestrate_on_caller = false;
    bool swimlane = false;
    bool dep_graph = false;
    std::string output_prefix;
};

// Throws std::invalid_argument naming the field, expected range and the value found.
void validate_run_config(const RunConfig& cfg);

// The tensor map's overlap test, as hardware's: false only when the two nonempty tensors touch
// no common element. Two views of one buffer with the same element size and strides (dims of
// extent 1 left out) whose start offsets differ by a whole number of elements are compared as
// N-D boxes (side-by-side column tiles do not overlap although their byte ranges interleave),
// exactly when their addresses are one-to-one with their box coordinates; anything else falls
// back to their [first byte, last byte) ranges (conservative: a dependency too many, never one
// too few).
bool tensors_may_overlap(const ChipTensor& a, const ChipTensor& b) noexcept;

// True when every element ``inner`` touches is also touched by ``outer`` (false when unsure).
bool tensor_covers(const ChipTensor& outer, const ChipTensor& inner) noexcept;

// The chip runtime: how a run's task graph is built. TMR: the orchestration runs on the AICPU
// orchestrator thread and each task is dispatched as it is submitted. HBG (host_build_graph):
// the orchestration runs on the submitting host thread and builds the run's whole graph, which
// the orchestrator thread then hands to the scheduler and AICore threads (chip_host_graph.cpp).
enum class Runtime : std::uint8_t { TensormapAndRingbuffer, HostBuildGraph };
inline constexpr const char* kRuntimeNames[] = {"tensormap_and_ringbuffer", "host_build_graph"};

struct ChipOptions {
    Runtime runtime = Runtime::TensormapAndRingbuffer;
    int aic_threads = 1;  // 0..kMaxCoreThreads each, at least one in all
    int aiv_threads = 1;
    // How long an idle thread spins (pause instructions, a yield every 32) before it parks, in
    // nanoseconds; at most as many threads of the process as it has CPUs spin at once, the
    // others park at once.
    std::int64_t spin_ns = 50'000;
    // Bytes of each AICore's on-chip buffers (UB, L1, L0A, L0B, L0C: KernelContext.buffers),
    // one set per AICore thread. The default is the a2a3 table of pypto/ir/platforms.py; a5 has
    // a 256 KiB L0C (kA5CoreBufferBytes).
    std::array<std::uint64_t, kCoreBufferCount> core_buffer_bytes = kA2A3CoreBufferBytes;
};

// One submitted run: completion, error and statistics. Shared by the submitter and the chip.
class Run final : public simpler::BackendRun {
public:
    std::uint64_t id() const noexcept override { return id_; }
    bool done() const noexcept override { return done_.load(std::memory_order_acquire); }
    // Waits up to `timeout_s` seconds (negative: forever; 0: a poll); true when done. Spins
    // for up to the chip's spin_ns before parking on the condition variable.
    bool wait(double timeout_s) const override;
    // Valid once done(): empty when the run succeeded.
    const std::string& error() const noexcept override { return error_; }
    std::uint64_t tasks_submitted() const noexcept override { return tasks_submitted_; }
    std::uint64_t tasks_executed() const noexcept override { return tasks_executed_.load(); }
    const std::vector<std::string>& diagnostics_files() const noexcept override { return files_; }

private:
    friend class Chip;
    friend struct ::SimplerOrchContext;
    std::uint64_t id_ = 0;
    std::int64_t spin_ns_ = 0;  // how long wait() spins before parking (the chip's spin_ns)
    std::atomic<bool> done_{false};
    mutable std::mutex mu_;
    mutable std::condition_variable cv_;
    std::string error_;
    std::uint64_t tasks_submitted_ = 0;
    std::atomic<std::uint64_t> tasks_executed_{0};
    std::vector<std::string> files_;
};

class Chip final : public simpler::ChipBackend {
public:
    explicit Chip(ChipOptions options);
    ~Chip() override;
    Chip(const Chip&) = delete;
    Chip& operator=(const Chip&) = delete;

    // Validates the arguments against the program and every descriptor against device memory
    // (throws std::invalid_argument / std::out_of_range before anything runs), then queues the
    // run FIFO. Thread-safe. `dense_host` says the descriptors are valid by construction: dense
    // tensors over the whole of host memory the caller holds (a CallPlan's arrays, which own
    // their memory: never a device allocation), so their checks are skipped.
    std::shared_ptr<Run> submit(std::shared_ptr<const ChipProgram> program, std::vector<ChipTensor> tensors,
                                std::vector<std::uint64_t> scalars, RunConfig config, bool dense_host = false);
    // Empty vectors for submit's arguments, with the capacity of the arguments of the last run
    // this thread finalised (an inline run is finalised on its submitting thread): a caller
    // that submits from the same thread again fills them without allocating (ChipTensor's
    // 64-byte alignment makes that allocation cost as much as the rest of a small submit).
    static void argument_vectors(std::vector<ChipTensor>* tensors, std::vector<std::uint64_t>* scalars) noexcept;
    // Finishes queued runs, then stops and joins every thread. Idempotent.
    void close() override;
    // Waits up to `timeout_s` seconds (negative: forever) until no run is queued, orchestrating
    // or in flight; true when idle. Lets the exit drain close a Worker without waiting forever
    // on a kernel that never returns.
    bool wait_idle(double timeout_s) override;
    bool closed() const noexcept override { return closed_.load(); }

    // ---- ChipBackend (core/backend.hpp): the forms the Worker shares with the NPU backend ----
    std::uint64_t device_malloc(std::uint64_t nbytes) override { return memory_.allocate(nbytes); }
    void device_free(std::uint64_t addr) override { memory_.release(addr); }
    void copy_to_device(std::uint64_t dst, const void* src, std::uint64_t nbytes) override {
        memory_.copy_to_device(dst, src, nbytes);
    }
    void copy_from_device(void* dst, std::uint64_t src, std::uint64_t nbytes) override {
        memory_.copy_from_device(dst, src, nbytes);
    }
    std::shared_ptr<const BackendProgram> load_program(const ProgramImage& image) override {
        std::vector<std::pair<std::int32_t, std::shared_ptr<const CoreKernel>>> children;
        for (const KernelImage& k : image.children) {
            if (k.core_type > 1)
                throw std::invalid_argument("load_program: kernel '" + k.name + "' has core_type " +
                                            std::to_string(k.core_type) + ", expected 0 (AIV) or 1 (AIC)");
            children.emplace_back(k.func_id, load_core_kernel(k.bytes, k.size, k.name, k.entry,
                                                              static_cast<CoreType>(k.core_type), k.signature));
        }
        return load_chip_program(image.bytes, image.size, image.func_name, image.signature, children);
    }
    std::shared_ptr<BackendRun> submit_run(std::shared_ptr<const BackendProgram> program, std::vector<ChipTensor> tensors,
                                           std::vector<std::uint64_t> scalars, const RunConfig& config) override {
        return submit(as_chip_program(program, "submit"), std::move(tensors), std::move(scalars), config);
    }
    int register_kernel(std::shared_ptr<const BackendProgram> program) override {
        return kernel_register(as_chip_program(program, "kernel_register"));
    }
    std::shared_ptr<BackendRun> launch_kernel(int slot, const std::vector<ChipTensor>& tensors,
                                              const std::vector<std::uint64_t>& scalars, const RunConfig& config) override {
        return kernel_launch(slot, tensors, scalars, config);
    }

    // ---- Kernel mode (see docs/simpler-runtime.md, "Kernel mode") ----
    // Latch kernel mode with the borrowed context's generation (nonzero). Throws if called twice.
    void enable_kernel_mode(std::uint64_t context_generation) override;
    bool kernel_mode() const noexcept override { return binding_.context_generation != 0; }
    // Admit a callable into a free slot (kernel-entry checks: signature counts, limits); returns
    // the slot id (0..63). Its residency generation starts at 1 and grows on every re-admission.
    int kernel_register(std::shared_ptr<const ChipProgram> program);
    // Retire a slot: later launches and packets still queued for it are rejected as stale.
    void kernel_unregister(int slot) override;
    std::uint64_t kernel_generation(int slot) const override;
    // Encode a TMR packet through the slot's encoding cache and enqueue it copy-on-enqueue on
    // the simulated AICPU. Throws std::invalid_argument naming the InvocationStatus on rejection.
    std::shared_ptr<Run> kernel_launch(int slot, const std::vector<ChipTensor>& tensors,
                                       const std::vector<std::uint64_t>& scalars, RunConfig config);
    // Enqueue a raw transport block as if from a launch (tests of the consumer's validation).
    std::shared_ptr<Run> kernel_enqueue_block(const void* block, std::size_t bytes, RunConfig config);
    std::size_t kernel_template_bytes(int slot) const;

    DeviceMemory& memory() noexcept { return memory_; }
    const ChipOptions& options() const noexcept { return options_; }
    // AICPU scheduler threads started so far (started on demand by the first run that needs
    // them, kept until close()); the AICPU thread count is this plus the orchestrator.
    int scheduler_threads() const;

    // Internal (used by the orchestration function table).
    struct Task;
    struct Ring;
    struct RunState;
    std::int64_t orch_submit(RunState& rs, const OrchTaskSpec* spec);
    std::int32_t orch_scope_begin(RunState& rs);
    std::int32_t orch_scope_end(RunState& rs);
    std::int32_t orch_alloc(RunState& rs, DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                            ChipTensor* out);
    void orch_fail(RunState& rs, const std::string& message);
    void record_graph_node(RunState& rs, const Task& t, const OrchTaskSpec* spec, std::uint32_t index,
                           std::int64_t task_id);
    // HBG: the function table's calls while the host builds a run's graph (chip_host_graph.cpp).
    std::int64_t graph_submit(RunState& rs, const OrchTaskSpec* spec);
    std::int32_t graph_scope_end(RunState& rs);
    std::int32_t graph_alloc(RunState& rs, DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                             ChipTensor* out);

private:
    // Traced runs of each program so far (under mu_): names the diagnostics files "<program>_call<k>".
    std::map<std::string, std::uint64_t> traced_calls_;
    struct Pending {
        std::shared_ptr<Run> run;
        bool on_caller = false;  // run_on_caller: the submitting thread orchestrates it
        std::shared_ptr<const ChipProgram> program;
        std::vector<ChipTensor> tensors;
        std::vector<std::uint64_t> scalars;
        RunConfig config;
        std::vector<std::uint8_t> block;  // kernel mode: the copied transport block
        bool kernel_launch = false;
        std::unique_ptr<RunState> built;  // HBG: the run with its graph, built on the host
        std::string rejected;             // HBG kernel mode: the consumer's rejection, if any
    };
    struct KernelSlot {
        std::shared_ptr<const ChipProgram> program;
        PreparedInvocationView view{};
        std::unique_ptr<TmrSubmissionOwner> owner;
        bool live = false;
        std::uint64_t generation = 0;
    };
    class LaunchRunner;
    // One simulated AICore: its on-chip buffers (UB, L1, L0A, L0B, L0C: zero-filled virtual
    // memory, committed as kernels touch it, never cleared between kernels, as on the device)
    // and who runs it. Its thread runs its tasks; a caller running an inline run's task claims
    // an idle core and runs it as that core (same buffers, core index and trace track).
    struct CoreSlot {
        int thread_index = 0;  // 1.. (0 is the orchestrator): the trace track
        CoreType type = CoreType::AIV;
        std::uint32_t core_index = 0;  // among the cores of its kind
        CoreBuffers buffers{};
        std::unique_ptr<std::uint8_t, void (*)(void*)> storage[kCoreBufferCount] = {
            {nullptr, std::free}, {nullptr, std::free}, {nullptr, std::free},
            {nullptr, std::free}, {nullptr, std::free}, {nullptr, std::free}};
        bool busy = false;       // running a task (under mu_)
        bool by_caller = false;  // claimed by a caller running an inline run's task
    };
    class CallerStack;
    struct CallerStackFree {
        void operator()(CallerStack* s) const noexcept;
    };
    // A message to an AICPU scheduler lane: a submitted task with no pending dependencies
    // (dispatch it), or a task an AICore thread finished (resolve its successors).
    struct SchedEvent {
        Task* task = nullptr;
        bool finished = false;
        int thread = 0;
        std::int64_t start_ns = 0, end_ns = 0;
        std::string error;
    };
    struct SchedLane {
        std::deque<SchedEvent> queue;  // guarded by mu_
        std::atomic<int> pending{0};   // queue size, read while spinning without the lock
        std::condition_variable cv;
        bool sleeping = false;
    };
    static constexpr int kMaxSchedulers = kMaxAicpuThreads - 1;

    std::shared_ptr<Run> enqueue(Pending p);
    // orchestrate_on_caller: when the chip is idle, claim it (busy_) and execute the run on this
    // thread; nullptr (p untouched) when it is not idle.
    std::shared_ptr<Run> run_on_caller(Pending& p);
    // HBG: run the orchestration on this (the submitting) thread and keep its graph in p.built;
    // a kernel launch's copied packet is consumed here first (p.rejected on failure).
    void build_on_host(Pending& p);
    void call_entry(RunState& rs, const SimplerOrchApi* api);
    void publish_graph(RunState& rs);
    std::string consume_kernel_launch(Pending& p);
    // Marks the run done with its outcome and wakes its waiters. `unshared`: only the submitting
    // thread, before submit returns, holds the Run (an inline run finished on that thread):
    // nothing can wait on it, so no lock and no wake-up.
    static void complete_run(Run& run, std::string error, std::uint64_t submitted, std::vector<std::string> files,
                             bool unshared = false);

    struct MapEntry {  // one tensor argument of a task in flight: its byte range and its view
        std::uint64_t lo, hi;
        const ChipTensor* tensor;  // the task's copy (valid while the task is in flight)
        Task* task;
        std::uint64_t seq;
        bool write;
    };

    void orchestrator_loop();
    void scheduler_loop(int lane);
    void post_locked(Task* t, SchedEvent ev);
    bool idle_locked() const;
    std::unique_ptr<RunState> take_if_complete_locked(RunState& rs);
    std::unique_ptr<RunState> resolve_locked(Task* t, int thread_index, std::int64_t start_ns, std::int64_t end_ns,
                                             const std::string& error);
    // `held`: mu_, held by the caller and held again on return (a run without diagnostics
    // files only: nothing then runs long, or takes mu_, before the end).
    void finalize_run(std::unique_ptr<RunState> owned, bool unshared = false, std::unique_lock<std::mutex>* held = nullptr);
    // Keeps a finished run's argument vectors for this thread's next argument_tensors() and
    // argument_scalars() (small ones only).
    static void recycle_arguments(std::vector<ChipTensor>&& tensors, std::vector<std::uint64_t>&& scalars) noexcept;
    void core_loop(CoreSlot& slot);
    // Runs t's kernel as `slot` on this thread, then finishes it (and releases the slot).
    void execute_task(Task* t, CoreSlot& slot);
    // execute_task's run of t, the run's failure read by the caller under mu_ (`skip`: the run has
    // failed, the kernel is not called). Releases the slot. `relock`: returns with mu_ held in
    // it (the lock that finishes the task, kept for the caller's next step).
    void run_task(Task* t, CoreSlot& slot, bool skip, std::unique_lock<std::mutex>* relock = nullptr);
    // The oldest of an inline run's held tasks (ready tasks the submitting thread keeps): runs it on
    // this thread as an idle core of its kind, on the chip's caller stack; when every such
    // core is busy, hands it to the core threads instead. Called with lk held; returns with it.
    void run_held_locked(std::unique_lock<std::mutex>& lk, RunState& rs);
    CoreSlot* claim_core_locked(CoreType type);
    // Orchestrates p's run and runs what it holds. `claimed`: run_on_caller's lock of mu_, held
    // since it claimed the chip (the run's setup then takes no lock of its own; released
    // before the orchestration). The thread that claimed the chip for p (the caller, or the
    // orchestrator thread) gives it back (release_chip_locked) under the lock that ends the
    // orchestration, before the run completes: its waiter, woken, finds the chip free.
    void execute_run(Pending& p, std::unique_lock<std::mutex>* claimed = nullptr);
    static std::unique_ptr<RunState>& spare_run_state() noexcept;
    // A claim of the chip (busy_, by run_on_caller or the orchestrator thread) ends: busy_
    // cleared, waiters and the orchestrator told.
    void release_chip_locked();
    Task* pop_ready(CoreSlot& slot);
    void push_ready_locked(Task* t);
    void finish_task(Task* t, CoreSlot& slot, std::int64_t start_ns, std::int64_t end_ns, std::string error,
                     std::unique_lock<std::mutex>* relock = nullptr);
    void retire_locked();
    void fail_locked(RunState& rs, const std::string& message);
    template <class Pred>
    bool orch_wait_locked(std::unique_lock<std::mutex>& lk, Pred ready, bool on_progress = true);
    // Placing one task on ring r (the orchestrator thread): back-pressure (task window, then
    // the dependency pool for the predecessors `collect` gathers into preds_), the task's slot,
    // and its dispatch once the caller has finished with it.
    template <class Label, class Collect>
    bool admit_task_locked(std::unique_lock<std::mutex>& lk, RunState& rs, int r, Label label, Collect collect);
    Task& place_task_locked(RunState& rs, int r, const CoreKernel* k, std::uint32_t index, const OrchTaskSpec* spec,
                            const std::vector<Task*>& preds);
    void dispatch_placed_locked(RunState& rs, Task& t);
    // The kernel a task spec names, after every check of the spec (nullptr and *error otherwise).
    // `checked` are the run's argument tensors, each checked (tensor_ok) when the run was
    // submitted: a task tensor that is one of them (the orchestration passes its argument) is
    // not checked again; every other task tensor is.
    const CoreKernel* check_task(const ChipProgram& program, const OrchTaskSpec* spec, std::uint32_t index,
                                 const std::vector<ChipTensor>& checked, std::string* error) const;
    void check_tensor(const ChipTensor& t, const std::string& what) const;
    bool tensor_ok(const ChipTensor& t) const noexcept;
    void write_diagnostics(RunState& rs);

    ChipOptions options_;
    DeviceMemory memory_;
    std::mutex mu_;  // guards everything below that is not atomic
    std::condition_variable orch_cv_;
    std::array<std::condition_variable, 2> core_cv_;
    std::array<std::deque<Task*>, 2> ready_;
    std::array<std::atomic<int>, 2> ready_count_{};
    std::array<int, 2> sleepers_{};
    std::array<int, 2> core_threads_{};
    std::array<int, 2> claimed_{};  // cores of each kind claimed by a caller (under mu_)
    std::vector<std::unique_ptr<CoreSlot>> cores_;  // by thread index - 1
    std::unique_ptr<CallerStack, CallerStackFree> caller_stack_;  // made by the first inline task
    int orch_waiting_ = 0;  // threads parked in orch_wait_locked on_progress (under mu_)
    std::atomic<std::uint64_t> progress_{0};  // bumped on task completion, queued run, stop
    bool draining_ = false;  // close() in progress: no new runs
    bool busy_ = false;      // the orchestrator is executing a run
    std::condition_variable idle_cv_;
    std::deque<Pending> queue_;
    std::vector<std::unique_ptr<Ring>> rings_;
    RunState* current_ = nullptr;                   // the run being orchestrated
    std::vector<std::unique_ptr<RunState>> active_;  // orchestrated or orchestrating, not completed
    std::vector<MapEntry> tensor_map_;
    std::vector<Task*> preds_;  // scratch of orch_submit (orchestrator thread only)
    // scratch of orch_submit: the byte region of each of the task's tensors ({0, 0}: empty)
    std::vector<std::pair<std::uint64_t, std::uint64_t>> regions_;              // spans runs: later runs wait for overlaps
    std::uint64_t in_flight_ = 0;  // submitted, not finished
    std::uint64_t next_run_id_ = 1;
    std::atomic<bool> stop_{false};
    std::atomic<int> started_{0};  // threads that reached their loop (see the constructor)
    std::atomic<bool> closed_{false};
    std::mutex close_mu_;
    std::vector<Thread> threads_;  // the orchestrator, then the AICore threads
    std::array<SchedLane, kMaxSchedulers> lanes_{};
    int scheduler_count_ = 0;             // guarded by mu_
    std::atomic<int> sched_started_{0};  // scheduler threads that reached their loop
    std::vector<std::thread> schedulers_;  // guarded by mu_ (started by the orchestrator thread)
    std::uint32_t finalizing_ = 0;         // runs taken out of active_ whose Run is being completed
    mutable std::mutex slots_mu_;  // guards slots_ and binding_ (kernel mode)
    std::array<KernelSlot, kMaxCallables> slots_{};
    TmrBindingRef binding_{};
};

}  // namespace simpler::chip
