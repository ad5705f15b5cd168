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
#if defined(__x86_64__) || defined(__aarch64__)
#define SIMPLER_CALL_ON_STACK 1  // CallerStack::call_on_stack; elsewhere swapcontext
#endif

namespace simpler::chip {

namespace {

std::atomic<int> g_spinning{0};

int spin_limit() noexcept {
    static const int limit = [] {
        cpu_set_t set;
        int cpus = 1;
        if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
        return cpus + 1;
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

// A stack of kCoreThreadStackBytes with a guard region below it, entered with a plain call on
// it (call_on_stack; swapcontext where that is not written for the target): a
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
        current() = this;
#if defined(SIMPLER_CALL_ON_STACK)
        // The call is strictly nested (fn returns before run does), so switching the stack
        // pointer around a plain call is the whole switch: no signal-mask system calls, which
        // swapcontext and the return through uc_link make (two per inline run).
        char* top = static_cast<char*>(mem_) + kCoreThreadGuardBytes + kCoreThreadStackBytes;
#ifdef SIMPLER_ASAN_FIBERS
        void* fake = nullptr;
        __sanitizer_start_switch_fiber(&fake, static_cast<char*>(mem_) + kCoreThreadGuardBytes, kCoreThreadStackBytes);
#endif
        call_on_stack(top, &CallerStack::entry);
#ifdef SIMPLER_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
#else
        std::memcpy(&callee_, &initial_, sizeof callee_);
        callee_.uc_stack.ss_sp = static_cast<char*>(mem_) + kCoreThreadGuardBytes;
        callee_.uc_stack.ss_size = kCoreThreadStackBytes;
        callee_.uc_link = &back_;
        makecontext(&callee_, &CallerStack::entry, 0);
#ifdef SIMPLER_ASAN_FIBERS
        void* fake = nullptr;
        __sanitizer_start_switch_fiber(&fake, callee_.uc_stack.ss_sp, kCoreThreadStackBytes);
#endif
        swapcontext(&back_, &callee_);
#ifdef SIMPLER_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
#endif
    }

private:
#if defined(SIMPLER_CALL_ON_STACK)
    // Calls fn() with the stack pointer at `top` (16-byte aligned), then restores it. Every
    // register the ABI lets fn change is declared clobbered; the old stack pointer waits in a
    // callee-saved register.
    static void call_on_stack(char* top, void (*fn)()) {
#if defined(__x86_64__)
        // While fn runs, this frame's CFA is taken from rbx (the old stack pointer, with the
        // offset the rule had): an unwinder walking up from fn (backtrace(), which the official
        // PTO-ISA headers' TWAIT calls) would otherwise read the caller's frame off the new stack.
        asm volatile(
            "mov %%rsp, %%rbx\n\t"
            ".cfi_remember_state\n\t"
            ".cfi_def_cfa_register %%rbx\n\t"
            "mov %0, %%rsp\n\t"
            "call *%1\n\t"
            "mov %%rbx, %%rsp\n\t"
            ".cfi_restore_state\n\t"
            : "+r"(top), "+r"(fn)
            :
            : "rbx", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0", "xmm1",
              "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
              "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)"
#ifdef __AVX512F__
              ,
              "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",
              "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7"
#endif
        );
#elif defined(__aarch64__)
        asm volatile(
            "mov x19, sp\n\t"
            "mov sp, %0\n\t"
            "blr %1\n\t"
            "mov sp, x19\n\t"
            : "+r"(top), "+r"(fn)
            :
            : "x19", "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
              "x15", "x16", "x17", "x18", "x30", "memory", "cc", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7",
              "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29",
              "v30", "v31");
#endif
    }
#endif

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
    if (rs.held.empty()) return;
    Task* t = rs.held.front();
    rs.held.pop_front();
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
    const bool skip = rs.failed;  // as execute_task reads it, under the lock already held
    lk.unlock();
    struct Job {
        Chip* chip;
        Task* task;
        CoreSlot* slot;
        bool skip;
        std::unique_lock<std::mutex>* lk;
    } job{this, t, slot, skip, &lk};
    caller_stack_->run([](void* p) {
        auto* j = static_cast<Job*>(p);
        j->chip->run_task(j->task, *j->slot, j->skip, j->lk);  // releases the slot; returns with lk held
    }, &job);
    if (!lk.owns_lock()) lk.lock();
}

}  // namespace simpler::chip
