// Inline runs: the submitting thread runs the tasks of its own run that it holds, as an idle
// simulated core (that core's buffers, index and trace track), on a stack the size of a core
// thread's. Also the process's spinning budget.
#include <sched.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstring>
#include <new>

#include "chip_internal.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define SIMPLER_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIMPLER_ASAN_FIBERS 1
#endif
#endif
#ifdef SIMPLER_ASAN_FIBERS
#include <sanitizer/common_interface_defs.h>
#endif

namespace simpler::chip {

namespace {

std::atomic<int> g_spinning{0};

int spin_limit() noexcept {
    static const int limit = [] {
        cpu_set_t set;
        int cpus = 1;
        if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
        return cpus > 1 ? cpus : 1;
    }();
    return limit;
}

}  // namespace

bool begin_spin() noexcept {
    if (g_spinning.fetch_add(1, std::memory_order_relaxed) < spin_limit()) return true;
    g_spinning.fetch_sub(1, std::memory_order_relaxed);
    return false;
}

void end_spin() noexcept { g_spinning.fetch_sub(1, std::memory_order_relaxed); }

// A stack of kCoreThreadStackBytes with a guard region below it, entered with swapcontext: a
// kernel may keep up to the core stack's worth of locals (kCoreThreadStackBytes in chip.hpp),
// more than a caller's thread may have. One per chip: only the thread that holds the chip
// (busy_, run_on_caller) runs inline tasks.
class Chip::CallerStack {
public:
    static CallerStack* make() {
        const std::size_t total = kCoreThreadStackBytes + kCoreThreadGuardBytes;
        void* mem = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                         -1, 0);
        if (mem == MAP_FAILED) throw std::bad_alloc();
        if (mprotect(mem, kCoreThreadGuardBytes, PROT_NONE) != 0) {
            munmap(mem, total);
            throw std::bad_alloc();
        }
        auto* s = new CallerStack;
        s->mem_ = mem;
        if (getcontext(&s->initial_) != 0) {
            delete s;
            throw std::bad_alloc();
        }
        return s;
    }
    ~CallerStack() {
        if (mem_ != nullptr) munmap(mem_, kCoreThreadStackBytes + kCoreThreadGuardBytes);
    }

    // Runs fn(arg) on this stack and returns when it has returned (fn must not throw).
    void run(void (*fn)(void*), void* arg) {
        fn_ = fn;
        arg_ = arg;
        std::memcpy(&callee_, &initial_, sizeof callee_);
        callee_.uc_stack.ss_sp = static_cast<char*>(mem_) + kCoreThreadGuardBytes;
        callee_.uc_stack.ss_size = kCoreThreadStackBytes;
        callee_.uc_link = &back_;
        current() = this;
        makecontext(&callee_, &CallerStack::entry, 0);
#ifdef SIMPLER_ASAN_FIBERS
        void* fake = nullptr;
        __sanitizer_start_switch_fiber(&fake, callee_.uc_stack.ss_sp, kCoreThreadStackBytes);
#endif
        swapcontext(&back_, &callee_);
#ifdef SIMPLER_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    }

private:
    static CallerStack*& current() noexcept {
        static thread_local CallerStack* s = nullptr;
        return s;
    }
    static void entry() {
        CallerStack* s = current();
#ifdef SIMPLER_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(nullptr, &s->caller_bottom_, &s->caller_size_);
#endif
        s->fn_(s->arg_);
#ifdef SIMPLER_ASAN_FIBERS
        // Returning resumes back_ (uc_link); this fiber's frames end here.
        __sanitizer_start_switch_fiber(nullptr, s->caller_bottom_, s->caller_size_);
#endif
    }

    void* mem_ = nullptr;
    ucontext_t initial_{}, callee_{}, back_{};
    void (*fn_)(void*) = nullptr;
    void* arg_ = nullptr;
#ifdef SIMPLER_ASAN_FIBERS
    const void* caller_bottom_ = nullptr;
    std::size_t caller_size_ = 0;
#endif
};

void Chip::CallerStackFree::operator()(CallerStack* s) const noexcept { delete s; }

Chip::CoreSlot* Chip::claim_core_locked(CoreType type) {
    for (auto& slot : cores_)
        if (slot->type == type && !slot->busy) {
            slot->busy = true;
            slot->by_caller = true;
            ++claimed_[static_cast<int>(type)];
            return slot.get();
        }
    return nullptr;
}

void Chip::run_held_locked(std::unique_lock<std::mutex>& lk, RunState& rs) {
    Task* t = rs.held;
    if (t == nullptr) return;
    rs.held = nullptr;
    CoreSlot* slot = claim_core_locked(t->kernel->core);
    if (slot == nullptr || (!caller_stack_ && [&] {
            try {
                caller_stack_.reset(CallerStack::make());
                return false;
            } catch (const std::bad_alloc&) {
                return true;
            }
        }())) {
        // Every core of its kind is busy (or no stack for it): the core threads take it.
        if (slot != nullptr) {
            slot->busy = slot->by_caller = false;
            --claimed_[static_cast<int>(slot->type)];
        }
        const bool was = rs.inline_exec;
        rs.inline_exec = false;
        push_ready_locked(t);
        rs.inline_exec = was;
        return;
    }
    t->state = Task::State::Running;
    lk.unlock();
    struct Job {
        Chip* chip;
        Task* task;
        CoreSlot* slot;
    } job{this, t, slot};
    caller_stack_->run([](void* p) {
        auto* j = static_cast<Job*>(p);
        j->chip->execute_task(j->task, *j->slot);  // releases the slot
    }, &job);
    lk.lock();
}

}  // namespace simpler::chip
