// Running: the orchestrator thread's loop over queued runs and its execution of one run, the
// AICPU scheduler lanes, the AICore threads, task completion and retirement, and the end of a
// run (diagnostics files, Run completion).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <exception>

#include <new>

#include "chip_internal.hpp"
#include "comm.hpp"

namespace simpler::chip {

// ---------------------------------------------------------------------------------------------
// The orchestrator thread: runs one queued run after another; the end of a run

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
            // busy_ without this thread: a submitting thread orchestrates (orchestrate_on_caller).
            orch_wait_locked(lk, [&] { return (!queue_.empty() && !busy_) || stop_.load(); }, false);
            if (queue_.empty() || busy_) {
                if (stop_.load()) return;
                continue;
            }
            p = std::move(queue_.front());
            queue_.pop_front();
            busy_ = true;
        }
        execute_run(p);  // gives the chip back (release_chip_locked)
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

void Chip::fail_locked(RunState& rs, const std::string& message) {
    if (rs.failed) return;
    rs.failed = true;
    rs.error = message;
}

void Chip::orch_fail(RunState& rs, const std::string& message) {
    std::lock_guard<std::mutex> lk(mu_);
    fail_locked(rs, message);
}

// A finished run's state, destroyed and constructed again, that this thread's next run takes
// instead of allocating one (a run on the caller finishes and starts on the same thread).
std::unique_ptr<Chip::RunState>& Chip::spare_run_state() noexcept {
    static thread_local std::unique_ptr<RunState> spare;
    return spare;
}

void Chip::execute_run(Pending& p, std::unique_lock<std::mutex>* claimed) {
    if (p.kernel_launch) p.rejected = consume_kernel_launch(p);
    if (!p.rejected.empty()) {
        {
            std::unique_lock<std::mutex> lk = claimed != nullptr ? std::move(*claimed) : std::unique_lock<std::mutex>(mu_);
            release_chip_locked();
            p.on_caller = false;  // given back: run_on_caller's failure path leaves busy_ alone
        }
        complete_run(*p.run, std::move(p.rejected), 0, {});
        return;
    }
    std::unique_ptr<RunState> owned = std::move(p.built);  // HBG: built on the host
    if (!owned) {
        owned = spare_run_state() ? std::move(spare_run_state()) : std::make_unique<RunState>();
        owned->program = p.program.get();
        owned->program_ref = std::move(p.program);  // p is spent once its run starts
        owned->config = std::move(p.config);
        owned->tensors = std::move(p.tensors);
        owned->scalars = std::move(p.scalars);
        if (owned->config.swimlane) owned->t0 = now_ns();  // the origin of its trace slices
    }
    const bool on_caller = p.on_caller;
    RunState& rs = *owned;
    rs.run = std::move(p.run);
    {
        std::unique_lock<std::mutex> lk = claimed != nullptr ? std::move(*claimed) : std::unique_lock<std::mutex>(mu_);
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
        rs.inline_exec = on_caller && rs.lanes == 0;
        for (auto& ring : rings_) ring->run_start = ring->next;
        current_ = &rs;
        active_.push_back(std::move(owned));
    }

    if (rs.graph) {
        publish_graph(rs);  // HBG: the orchestration already ran on the host
    } else {
        call_entry(rs, &kOrchApi);
    }

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
    // An inline run: the submitting thread runs what it holds (and the chain behind it) before
    // it lets go; later ready tasks go to the core threads.
    while (!rs.held.empty()) run_held_locked(lk, rs);
    rs.inline_exec = false;
    rs.orch_done = true;
    current_ = nullptr;
    retire_locked();
    std::unique_ptr<RunState> done = take_if_complete_locked(rs);
    if (done && on_caller && !done->config.swimlane && !done->config.dep_graph)
        finalize_run(std::move(done), true, &lk);  // no files to write: under the lock already held
    release_chip_locked();
    p.on_caller = false;
    lk.unlock();
    if (done) finalize_run(std::move(done), on_caller);  // on the submitting thread, before submit returns
}

void Chip::finalize_run(std::unique_ptr<RunState> owned, bool unshared, std::unique_lock<std::mutex>* held) {
    // Runs on the thread that retired the run's last task (or the orchestrator): the run is out
    // of active_, so nothing else touches it.
    RunState& rs = *owned;
    // The trace's slices (only a swimlane file reads them, as resolve_locked's task slices).
    // Scheduler tracks follow the AICore tracks, so AICore track ids do not depend on the run.
    if (rs.config.swimlane)
        rs.slices.push_back(TraceSlice{0, rs.orch_start - rs.t0, rs.orch_end - rs.t0, kOrchestrationSlice, -1,
                                       "orchestration '" + rs.program->name + "'"});
    const int first_sched = 1 + options_.aic_threads + options_.aiv_threads;
    for (int k = 0; rs.config.swimlane && k < rs.lanes; ++k) {
        const auto& st = rs.sched[k];
        if (st.dispatched + st.completed == 0) continue;
        rs.slices.push_back(TraceSlice{first_sched + k, st.first_ns - rs.t0, st.last_ns - rs.t0, kSchedulerSlice, -1,
                                       "scheduler: dispatched " + std::to_string(st.dispatched) + ", completed " +
                                           std::to_string(st.completed)});
    }
    std::vector<std::string> files;
    if (rs.config.swimlane || rs.config.dep_graph) {
        TraceName trace_name{rs.program != nullptr ? rs.program->name : std::string(), 0, rs.run->id()};
        {
            std::lock_guard<std::mutex> lk(mu_);
            trace_name.call = ++traced_calls_[trace_name.program];
        }
        try {
            std::vector<std::string> names{rs.graph ? "host orchestration (graph build)" : "AICPU orchestrator"};
            int aic = 0, aiv = 0;
            for (int i = 0; i < options_.aic_threads; ++i) names.push_back("AIC " + std::to_string(aic++));
            for (int i = 0; i < options_.aiv_threads; ++i) names.push_back("AIV " + std::to_string(aiv++));
            for (int k = 0; k < rs.lanes; ++k) names.push_back("AICPU scheduler " + std::to_string(k));
            const std::string base = rs.config.output_prefix;
            if (rs.config.swimlane) files.push_back(write_swimlane(base, trace_name, names, rs.slices));
            if (rs.config.dep_graph) files.push_back(write_dep_graph(base, trace_name, rs.nodes));
        } catch (const std::exception& e) {
            if (!rs.failed) {
                rs.failed = true;
                rs.error = std::string("diagnostics: ") + e.what();
            }
        }
    }
    const std::shared_ptr<Run> run = std::move(rs.run);
    std::string error = rs.failed ? std::move(rs.error) : std::string();
    const std::uint64_t submitted = rs.submitted;
    recycle_arguments(std::move(rs.tensors), std::move(rs.scalars));
    if (rs.graph) recycle_host_graph(std::move(rs.graph));
    // Releases the program (and its binaries) before close() may return; the block is kept
    // for this thread's next run.
    rs.~RunState();
    new (&rs) RunState();
    if (!spare_run_state()) spare_run_state() = std::move(owned);
    owned.reset();
    std::unique_lock<std::mutex> lk = held != nullptr ? std::move(*held) : std::unique_lock<std::mutex>(mu_);
    --finalizing_;
    if (idle_locked()) idle_cv_.notify_all();
    if (held != nullptr) {
        *held = std::move(lk);
    } else {
        lk.unlock();
    }
    // Only now the run completes: its waiter, woken, finds the chip counting it finished (idle,
    // when nothing else runs), so that thread's next submit runs inline rather than queueing
    // behind this thread's bookkeeping.
    complete_run(*run, std::move(error), submitted, std::move(files), unshared);
}

void Chip::complete_run(Run& run, std::string error, std::uint64_t submitted, std::vector<std::string> files,
                        bool unshared) {
    if (unshared) {
        run.error_ = std::move(error);
        run.tasks_submitted_ = submitted;
        run.files_ = std::move(files);
        run.done_.store(true, std::memory_order_release);
        return;
    }
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
        if (L.pending.load(std::memory_order_acquire) == 0 && begin_spin()) {
            const std::int64_t deadline = now_ns() + options_.spin_ns;
            for (unsigned i = 1;
                 L.pending.load(std::memory_order_acquire) == 0 && !stop_.load(std::memory_order_relaxed); ++i) {
                cpu_relax();
                if (spin_expired(i, deadline)) break;
            }
            end_spin();
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

// ---------------------------------------------------------------------------------------------
// Scheduling and execution

void Chip::push_ready_locked(Task* t) {
    t->state = Task::State::Ready;
    RunState& rs = *t->run;
    if (rs.inline_exec && (rs.held.empty() || short_kernel(*t->kernel))) {
        rs.held.push_back(t);  // the submitting thread runs it (run_held_locked)
        return;
    }
    const int type = static_cast<int>(t->kernel->core);
    ready_[type].push_back(t);
    ready_count_[type].fetch_add(1, std::memory_order_release);
    if (sleepers_[type] > 0) {
        // A core claimed by a caller does not take tasks: wake every sleeper so that a free one
        // does not miss this one.
        if (claimed_[type] > 0) {
            core_cv_[type].notify_all();
        } else {
            core_cv_[type].notify_one();
        }
    }
}

Chip::Task* Chip::pop_ready(CoreSlot& slot) {
    const int type = static_cast<int>(slot.type);
    auto take = [&]() -> Task* {
        Task* t = ready_[type].front();
        ready_[type].pop_front();
        ready_count_[type].fetch_sub(1, std::memory_order_relaxed);
        t->state = Task::State::Running;
        slot.busy = true;
        return t;
    };
    if (begin_spin()) {
        const std::int64_t deadline = now_ns() + options_.spin_ns;
        for (unsigned i = 1;; ++i) {
            if (ready_count_[type].load(std::memory_order_acquire) > 0) {
                std::lock_guard<std::mutex> lk(mu_);
                if (!ready_[type].empty() && !slot.busy) {
                    end_spin();
                    return take();
                }
            }
            if (stop_.load(std::memory_order_relaxed)) break;
            cpu_relax();
            if (spin_expired(i, deadline)) break;
        }
        end_spin();
    }
    std::unique_lock<std::mutex> lk(mu_);
    ++sleepers_[type];
    core_cv_[type].wait(lk, [&] { return (!ready_[type].empty() && !slot.busy) || stop_.load(); });
    --sleepers_[type];
    if (ready_[type].empty() || slot.busy) return nullptr;
    return take();
}

void Chip::core_loop(CoreSlot& slot) {
    started_.fetch_add(1, std::memory_order_release);
    for (;;) {
        Task* t = pop_ready(slot);
        if (t == nullptr) {
            if (stop_.load()) return;
            continue;
        }
        execute_task(t, slot);
    }
}

void Chip::execute_task(Task* t, CoreSlot& slot) {
    bool skip;
    {
        // A failed run drains without running more kernels.
        std::lock_guard<std::mutex> lk(mu_);
        skip = t->run->failed;
    }
    run_task(t, slot, skip);
}

void Chip::run_task(Task* t, CoreSlot& slot, bool skip, std::unique_lock<std::mutex>* relock) {
    const CoreKernel* k = t->kernel;
    std::string error;
    // A swimlane needs every task's times; otherwise only the sampled ones are read
    // (CoreKernel::LastRunNs), and the others pass 0, 0 to finish_task.
    const bool timed = !skip && (t->run->config.swimlane || k->last_run.time_next());
    const std::int64_t start = timed || t->run->config.swimlane ? now_ns() : 0;  // a skipped task's slice too
    if (!skip) {
        const KernelContext context{t->index, slot.core_index, static_cast<std::uint32_t>(slot.type), comm_context(),
                                    &slot.buffers};
        if (k->set_context != nullptr) k->set_context(&context);
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
        if (k->set_context != nullptr) k->set_context(nullptr);  // never left pointing at this frame
    }
    const std::int64_t end = start != 0 ? now_ns() : 0;
    if (!skip) {
        t->run->run->tasks_executed_.fetch_add(1, std::memory_order_relaxed);
        if (timed) k->last_run.ns.store(std::max<std::int64_t>(end - start, 1), std::memory_order_relaxed);
    }
    // After finish_task the run may complete and its state go away: do not touch t->run.
    finish_task(t, slot, start, end, skip ? std::string() : std::move(error), relock);
}

void Chip::finish_task(Task* t, CoreSlot& slot, std::int64_t start_ns, std::int64_t end_ns, std::string error,
                       std::unique_lock<std::mutex>* relock) {
    std::unique_ptr<RunState> done;
    {
        std::unique_lock<std::mutex> lk(mu_);
        // Whatever the outcome, the caller of `relock` gets mu_ back held.
        struct Keep {
            std::unique_lock<std::mutex>& lk;
            std::unique_lock<std::mutex>* relock;
            ~Keep() {
                if (relock != nullptr && lk.owns_lock()) *relock = std::move(lk);
            }
        } keep{lk, relock};
        slot.busy = false;
        if (slot.by_caller) {
            slot.by_caller = false;
            const int type = static_cast<int>(slot.type);
            --claimed_[type];
            if (sleepers_[type] > 0 && !ready_[type].empty()) core_cv_[type].notify_all();
        }
        if (t->run->lanes > 0) {
            // The AICore only signals completion; a scheduler thread resolves it.
            SchedEvent ev;
            ev.finished = true;
            ev.thread = slot.thread_index;
            ev.start_ns = start_ns;
            ev.end_ns = end_ns;
            ev.error = std::move(error);
            post_locked(t, std::move(ev));
            return;
        }
        done = resolve_locked(t, slot.thread_index, start_ns, end_ns, error);
        if (done) lk.unlock();  // finalised below, without the lock
    }
    if (done) {
        finalize_run(std::move(done));
        if (relock != nullptr) relock->lock();
    }
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
    if (orch_waiting_ > 0) orch_cv_.notify_all();
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
