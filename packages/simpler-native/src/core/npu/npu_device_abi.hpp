// What the NPU backend's host side hands the device runtime (UNVERIFIED: compiled in CI, never
// run; the device runtime, an AICPU shared object that orchestrates and schedules on the NPU,
// is not part of this project yet, so these layouts are the host's half of a contract that no
// device code implements).
//
// The device runtime is loaded from its op descriptor (JSON naming the AICPU shared object)
// with rtsBinaryLoadFromFile and has three entries, each launched with rtsLaunchCpuKernel on the
// backend's one stream, its argument block copied by the runtime at launch (copy-on-enqueue):
//   kBindEntry     NpuBindArgs: the one place the device learns its context's address.
//   kProgramEntry  NpuProgramArgs, then ChipTensor[tensor_count], then u64 scalars[scalar_count].
//   kKernelEntry   a TMR block (WIRE.md, "Transport envelope"), checked against the context's
//                  trusted views and binding by the device's consume_tmr_invocation.
// Launches run in stream order; the device counts them (program and kernel alike) from 0 and
// writes launch k's outcome into statuses[k % kStatusRing] of the context.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/invocation_header.hpp"
#include "simpler/wire/prepared_view.hpp"

namespace simpler::npu {

inline constexpr const char* kBindEntry = "simpler_aicpu_bind_context";
inline constexpr const char* kProgramEntry = "simpler_aicpu_program_exec";
inline constexpr const char* kKernelEntry = "simpler_aicpu_kernel_exec";

inline constexpr std::uint32_t kProgramArgsMagic = 0x4e505550;  // "PUPN"
inline constexpr std::uint32_t kProgramArgsVersion = 1;
inline constexpr std::size_t kStatusRing = 1024;

// One launch's outcome, written by the device runtime when the launch finishes.
struct NpuLaunchStatus {
    std::uint64_t launch_seq;       // k + 1 once launch k wrote it (0: not written)
    std::int32_t status;            // 0 ok; else an InvocationStatus (kernel packets) or a runtime code
    std::uint32_t failed_func_id;   // the kernel that failed, when status names a kernel failure
    std::uint64_t tasks_submitted;
    std::uint64_t tasks_executed;
};
static_assert(sizeof(NpuLaunchStatus) == 32);

// Device-resident state of one backend, allocated by the host and filled with aclrtMemcpy.
struct NpuDeviceContext {
    TmrBindingRef binding;                         // zero until kernel mode is enabled
    PreparedInvocationView views[kMaxCallables];   // trusted views; slot_generation 0 = retired
    std::uint64_t programs[kMaxCallables];         // device address of each slot's NpuProgramImage
    NpuLaunchStatus statuses[kStatusRing];
};

// A loaded program as the device runtime finds it: the orchestration binary (copied to device
// memory; the device runtime loads it) and each child kernel's AICore function address.
struct NpuKernelRef {
    std::int32_t func_id;
    std::uint32_t core_type;  // 0 AIV, 1 AIC
    std::uint64_t function_addr;
};
static_assert(sizeof(NpuKernelRef) == 16);

struct NpuProgramImage {
    std::uint64_t orchestration_addr;   // device copy of the orchestration shared object
    std::uint64_t orchestration_bytes;
    char func_name[128];                // NUL-terminated (names are at most 127 bytes)
    std::uint32_t kernel_count;
    std::uint32_t reserved;
    // NpuKernelRef[kernel_count] follow.
};
static_assert(sizeof(NpuProgramImage) == 152);

struct NpuBindArgs {
    std::uint64_t context_addr;
};

struct NpuProgramArgs {
    std::uint32_t magic;
    std::uint32_t version;
    std::uint64_t launch_seq;
    std::uint64_t context_addr;
    std::uint64_t program_addr;   // NpuProgramImage in device memory
    std::uint32_t tensor_count;
    std::uint32_t scalar_count;
    std::uint32_t task_window[4];
    std::uint64_t heap[4];
    std::uint32_t dep_pool[4];
    std::uint64_t workspace_budget_bytes;
    std::uint32_t aicpu_threads;
    std::uint32_t reserved0;
    std::uint64_t reserved1;
};
static_assert(sizeof(NpuProgramArgs) == 128);
static_assert(sizeof(NpuProgramArgs) % 64 == 0, "ChipTensor[] follows at 64-byte alignment");

}  // namespace simpler::npu
