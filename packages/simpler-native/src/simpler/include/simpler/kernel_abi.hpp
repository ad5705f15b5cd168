// The kernel side of the kernel ABI (KERNEL_ABI.md): what a compiled kernel binary includes so
// that the simulated chip can call it and hear about its failures.
//
// Consumers: generated kernels (pypto-ir codegen), our PTO-ISA backend (include_pto/pto/sim/), and
// the loader in simpler's chip runtime, which resolves the exported functions below once per
// binary at registration.
//
// Error channel: a kernel never aborts the process. Our PTO-ISA backend and generated code call
// simpler::report_kernel_error(); the first report on a thread wins until the runtime takes it
// with simpler_kernel_take_error() right after the entry returns on that same thread. Each
// binary is loaded RTLD_LOCAL with hidden visibility, so every binary has its own slot.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "simpler/comm_context.hpp"

namespace simpler {

// 2: KernelContext gained `comm` (the cross-rank operations of multi-chip programs).
// 3: KernelContext gained `buffers` (the running core's on-chip buffers, where PTO-ISA tiles live).
// 4: CoreBuffers gained BT, the bias table (Bias tiles).
inline constexpr std::uint32_t kKernelAbiVersion = 4;

// Signature of a kernel entry: args[i] is a ChipTensor* (as an integer) or raw scalar bits.
using KernelEntryFn = void (*)(std::int64_t* args);

struct KernelErrorSlot {
    bool set;
    char message[512];
};

struct KernelContext;

// A binary's per-thread kernel state, one small thread-local object: a kernel binary is a
// dlopen'ed library, so each access to one of its thread-locals goes through the dynamic TLS
// resolver; one trivially constructed object costs one such call where the state is read
// together (no construction guard, no exit handler) instead of one per variable. A binary's
// thread-locals are kept small (the error slot is on the heap, reached through `error`) so that
// glibc can place them in the static TLS block: kernels are built with TLS descriptors on
// x86-64 (simpler.toolchain), which then resolve an access in ~3 instructions instead of ~18
// for __tls_get_addr (a binary whose block does not fit takes the dynamic path, as before).
struct KernelThread {
    const KernelContext* context;  // current_kernel_context()
    std::uint64_t invocation;      // kernel_invocation()
    void* backend;                 // the PTO-ISA backend's per-thread core state (pto::sim::core())
    KernelErrorSlot* error;        // kernel_error_slot(): null until the thread's first use
};

inline KernelThread& kernel_thread() noexcept {
    static thread_local KernelThread state{};
    return state;
}

// The thread's error slot, made on its first use and freed at thread exit.
struct KernelErrorOwner {
    std::unique_ptr<KernelErrorSlot> slot;
    ~KernelErrorOwner() { kernel_thread().error = nullptr; }
};

[[gnu::noinline, gnu::cold]] inline KernelErrorSlot& make_kernel_error_slot(KernelThread& t) noexcept {
    static thread_local KernelErrorOwner owner;
    owner.slot.reset(new KernelErrorSlot{});
    t.error = owner.slot.get();
    return *t.error;
}

inline KernelErrorSlot& kernel_error_slot() noexcept {
    KernelThread& t = kernel_thread();
    return __builtin_expect(t.error != nullptr, 1) ? *t.error : make_kernel_error_slot(t);
}

// Record a kernel failure (printf-style). Only the first report before the runtime takes the
// error is kept: later ones are usually consequences of the first.
inline void report_kernel_error(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
inline void report_kernel_error(const char* fmt, ...) noexcept {
    KernelErrorSlot& slot = kernel_error_slot();
    if (slot.set) return;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(slot.message, sizeof slot.message, fmt, ap);
    va_end(ap);
    slot.set = true;
}

inline bool kernel_error_pending() noexcept { return kernel_error_slot().set; }

// The on-chip buffers of one simulated AICore, owned by the runtime (one set per AICore thread,
// sized from the platform table): PTO-ISA tiles are placed in them by TASSIGN's byte offset.
// Index order: UB (Vec tiles), L1 (Mat), L0A (Left), L0B (Right), L0C (Acc), BT (Bias: the
// cube's bias table, one row added to a product).
inline constexpr int kCoreBufferCount = 6;
struct CoreBuffers {
    std::uint8_t* base[kCoreBufferCount];
    std::uint64_t bytes[kCoreBufferCount];
};

static_assert(sizeof(CoreBuffers) == 96, "kernel ABI changed: CoreBuffers size");

// Who is running the kernel, for debug output (TPRINT), the rank's comm context for the
// communication instructions (pto/comm/pto_comm_inst.hpp, simpler/kernel_comm.hpp) and the
// core's on-chip buffers: set by the runtime through the optional export
// simpler_kernel_set_context before each entry call on the calling thread.
struct KernelContext {
    std::uint64_t task_id;       // the run's task number, from 0 in submission order
    std::uint32_t core_index;    // the simulated core (thread) of its kind
    std::uint32_t core_kind;     // 0 AIV (vector), 1 AIC (cube)
    const CommContext* comm;     // this process's comm context; null outside a multi-chip program
    const CoreBuffers* buffers;  // the core's UB/L1/L0A/L0B/L0C/BT; null: the kernel uses its own
};

static_assert(sizeof(KernelContext) == 32, "kernel ABI changed: KernelContext size");
static_assert(offsetof(KernelContext, comm) == 16, "kernel ABI changed: KernelContext.comm");
static_assert(offsetof(KernelContext, buffers) == 24, "kernel ABI changed: KernelContext.buffers");

inline const KernelContext*& current_kernel_context() noexcept { return kernel_thread().context; }

// Counts the kernel invocations on this thread (bumped by simpler_kernel_set_context for every
// non-null context): per-invocation kernel state (the PTO-ISA buffer checks) resets when it
// changes.
// "[task <id> AIV<core>]" (or AIC) for debug output of the kernel running on this thread;
// "[task ? core ?]" outside one. Returns what snprintf returns.
inline int format_kernel_tag(char* out, std::size_t n) noexcept {
    const KernelContext* ctx = current_kernel_context();
    if (ctx == nullptr) return std::snprintf(out, n, "[task ? core ?]");
    return std::snprintf(out, n, "[task %llu %s%u]", static_cast<unsigned long long>(ctx->task_id),
                         ctx->core_kind == 1 ? "AIC" : "AIV", ctx->core_index);
}

inline std::uint64_t& kernel_invocation() noexcept { return kernel_thread().invocation; }

}  // namespace simpler

// Every kernel binary defines these exactly once (put SIMPLER_DEFINE_KERNEL_ABI(); in one
// translation unit at namespace scope). The runtime checks the version at registration, takes
// the error after every entry call, and (where the binary exports it) sets the kernel context
// before every entry call; a binary without simpler_kernel_set_context still loads.
#define SIMPLER_DEFINE_KERNEL_ABI()                                                           \
    extern "C" __attribute__((visibility("default"))) std::uint32_t simpler_kernel_abi_version() { \
        return ::simpler::kKernelAbiVersion;                                                   \
    }                                                                                          \
    extern "C" __attribute__((visibility("default"))) void simpler_kernel_set_context(           \
        const ::simpler::KernelContext* context) {                                             \
        ::simpler::KernelThread& state = ::simpler::kernel_thread();                           \
        state.context = context;                                                               \
        if (context != nullptr) ++state.invocation;                                            \
    }                                                                                          \
    extern "C" __attribute__((visibility("default"))) const char* simpler_kernel_take_error() {   \
        ::simpler::KernelErrorSlot& slot = ::simpler::kernel_error_slot();                     \
        if (!slot.set) return nullptr;                                                         \
        slot.set = false;                                                                      \
        return slot.message;                                                                   \
    }                                                                                          \
    static_assert(true, "require a semicolon")
