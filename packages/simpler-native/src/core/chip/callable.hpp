// Loaded callables: a ChipCallable (one orchestration entry plus its child kernels by func_id)
// and a CoreCallable (one kernel entry that runs on an AIC or AIV thread). Built once at
// registration: binaries loaded, symbols resolved and ABI versions checked, so the dispatch
// path only calls function pointers.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../backend.hpp"
#include "loader.hpp"
#include "simpler/kernel_abi.hpp"
#include "simpler/runtime/orchestration.hpp"
#include "simpler/wire/prepared_view.hpp"

namespace simpler::chip {

enum class CoreType : std::uint8_t { AIV = 0, AIC = 1 };
inline const char* core_type_name(CoreType c) noexcept { return c == CoreType::AIC ? "AIC" : "AIV"; }

using TakeErrorFn = const char* (*)();
using SetContextFn = void (*)(const KernelContext*);
using AbiVersionFn = std::uint32_t (*)();

struct CoreKernel {
    std::int32_t func_id = -1;
    std::string name;  // for messages: "<name> (func_id N)"
    CoreType core = CoreType::AIV;
    std::vector<ArgDirection> signature;
    std::uint32_t tensor_count = 0;
    std::uint32_t scalar_count = 0;
    std::shared_ptr<LoadedBinary> binary;
    KernelEntryFn entry = nullptr;
    TakeErrorFn take_error = nullptr;
    SetContextFn set_context = nullptr;  // optional export: who runs the kernel (debug output)
    // How long this kernel's last timed task ran, in ns (0: none yet; a copy starts at 0).
    // Chip threads write it; an inline run's caller reads it to keep short tasks
    // (kCallerTaskNs). A task is timed when the kernel has no figure yet and then every
    // kTimedEvery-th task (`tasks` counts them; a lost count between threads only moves the
    // next sample): two clock reads cost more than a short kernel's whole task on a VM.
    struct LastRunNs {
        static constexpr std::uint32_t kTimedEvery = 16;
        mutable std::atomic<std::int64_t> ns{0};
        mutable std::atomic<std::uint32_t> tasks{0};
        // Whether this task of the kernel is timed (and counts it).
        bool time_next() const noexcept {
            const std::uint32_t n = tasks.load(std::memory_order_relaxed);
            tasks.store(n + 1, std::memory_order_relaxed);
            return n % kTimedEvery == 0 || ns.load(std::memory_order_relaxed) == 0;
        }
        LastRunNs() noexcept = default;
        LastRunNs(const LastRunNs&) noexcept {}
        LastRunNs& operator=(const LastRunNs&) noexcept { return *this; }
    } last_run;

    std::string label() const { return "'" + name + "' (func_id " + std::to_string(func_id) + ", " + core_type_name(core) + ")"; }
};

// Shared by the Python object that registered it and by the chip (queued runs, run states,
// kernel-mode slots). enable_shared_from_this makes nanobind hand the chip this C++
// shared_ptr when Python passes the program back (submit, kernel_register) instead of a
// shared_ptr whose deleter decrements the Python object: chip threads drop their references
// without the GIL, also while the interpreter finalises (a deleter that needs the GIL then
// kills the thread: "terminate called without an active exception").
struct ChipProgram : std::enable_shared_from_this<ChipProgram>, simpler::BackendProgram {
    const char* loaded_by() const noexcept override { return "sim"; }
    std::string name;  // orchestration func_name
    std::vector<ArgDirection> signature;
    std::uint32_t tensor_count = 0;
    std::uint32_t scalar_count = 0;
    std::shared_ptr<LoadedBinary> binary;
    OrchestrationEntryFn entry = nullptr;
    OrchestrationNeeds needs{};
    std::map<std::int32_t, std::shared_ptr<const CoreKernel>> kernels;

    const CoreKernel* kernel(std::int32_t func_id) const noexcept {
        auto it = kernels.find(func_id);
        return it == kernels.end() ? nullptr : it->second.get();
    }
};

// The ChipProgram behind a program handed to the simulated chip through the ChipBackend
// interface; throws std::invalid_argument naming `what` when another backend loaded it.
inline std::shared_ptr<const ChipProgram> as_chip_program(const std::shared_ptr<const BackendProgram>& p,
                                                          const char* what) {
    auto sim = std::dynamic_pointer_cast<const ChipProgram>(p);
    if (sim == nullptr)
        throw std::invalid_argument(std::string(what) + "(program): expected a program loaded by the simulated chip, got " +
                                    (p ? "one loaded by '" + std::string(p->loaded_by()) + "'" : std::string("none")));
    return sim;
}

// Split a signature into counts; throws std::invalid_argument naming `what` when a tensor
// follows a scalar or a code is unknown.
void signature_counts(const std::vector<ArgDirection>& sig, const std::string& what, std::uint32_t* tensors,
                      std::uint32_t* scalars);

// Load a kernel binary: resolves `entry_symbol`, simpler_kernel_abi_version (checked) and
// simpler_kernel_take_error, and the optional simpler_kernel_set_context. Throws std::invalid_argument / std::runtime_error naming `name`.
std::shared_ptr<const CoreKernel> load_core_kernel(const void* bytes, std::size_t size, const std::string& name,
                                                   const std::string& entry_symbol, CoreType core,
                                                   std::vector<ArgDirection> signature);

// Load an orchestration binary: resolves `func_name` and `<func_name>_needs` (ABI version
// checked, counts compared with the signature). Kernels are attached by func_id (unique).
std::shared_ptr<const ChipProgram> load_chip_program(
    const void* bytes, std::size_t size, const std::string& func_name, std::vector<ArgDirection> signature,
    const std::vector<std::pair<std::int32_t, std::shared_ptr<const CoreKernel>>>& children);

}  // namespace simpler::chip
