// The chip backend interface: what the Python Worker needs from one chip, whatever runs it.
//
// Two backends implement it: the simulated chip (simpler::chip::Chip, host threads, the
// default) and the NPU backend (simpler::npu::NpuBackend, the ACL runtime of CANN; built only
// with -Dnpu=enabled and unverified on hardware, see docs/simpler-runtime.md, "Backends").
// Everything here is something the simulated chip already provides; nothing names a CANN type.
//
// Addresses are device addresses as u64 (on the simulated chip they equal host addresses).
// Errors at the API surface are std exceptions naming the argument (std::invalid_argument for
// a bad argument, std::out_of_range for a range outside device memory, std::runtime_error for a
// failure of the device runtime); the errors of a run are reported by its BackendRun.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/prepared_view.hpp"

namespace simpler {

namespace chip {
struct RunConfig;  // the validated CallConfig of one run (core/chip/chip.hpp)
}

// One submitted run (program-mode submit or kernel-mode launch).
class BackendRun {
public:
    virtual ~BackendRun() = default;
    virtual std::uint64_t id() const noexcept = 0;
    virtual bool done() const noexcept = 0;
    // Waits up to `timeout_s` seconds (negative: forever; 0: a poll); true when done.
    virtual bool wait(double timeout_s) const = 0;
    // Valid once done(): empty when the run succeeded, else what failed.
    virtual const std::string& error() const noexcept = 0;
    virtual std::uint64_t tasks_submitted() const noexcept = 0;
    virtual std::uint64_t tasks_executed() const noexcept = 0;
    virtual const std::vector<std::string>& diagnostics_files() const noexcept = 0;
};

// A callable loaded by one backend (its binaries resolved for that backend); only the backend
// that loaded it accepts it.
class BackendProgram {
public:
    virtual ~BackendProgram() = default;
    // The backend that loaded it ("sim", "npu"): named in the error when another is handed it.
    virtual const char* loaded_by() const noexcept = 0;
};

// The bytes of one callable as registered (ChipCallable): the orchestration binary and its child
// kernels. The bytes are borrowed for the duration of load_program only.
struct KernelImage {
    std::int32_t func_id = -1;
    std::string name;   // for messages
    std::string entry;  // the kernel's entry symbol
    std::uint8_t core_type = 0;  // 0 AIV (vector), 1 AIC (cube): chip::CoreType's codes
    std::vector<ArgDirection> signature;
    const void* bytes = nullptr;
    std::size_t size = 0;
};

struct ProgramImage {
    std::string func_name;  // the orchestration entry
    std::vector<ArgDirection> signature;
    const void* bytes = nullptr;
    std::size_t size = 0;
    std::vector<KernelImage> children;
};

class ChipBackend {
public:
    virtual ~ChipBackend() = default;

    // ---- Device memory ----
    // 64-byte aligned, zero-filled. Throws std::invalid_argument for 0 bytes.
    virtual std::uint64_t device_malloc(std::uint64_t nbytes) = 0;
    // Throws std::invalid_argument unless `addr` is the start of a live allocation.
    virtual void device_free(std::uint64_t addr) = 0;
    // Throw std::out_of_range unless the device range lies inside one live allocation.
    virtual void copy_to_device(std::uint64_t dst, const void* src, std::uint64_t nbytes) = 0;
    virtual void copy_from_device(void* dst, std::uint64_t src, std::uint64_t nbytes) = 0;

    // ---- Callables ----
    // Loads the orchestration binary and every child kernel for this backend and resolves
    // their entries; throws std::invalid_argument naming the binary that fails.
    virtual std::shared_ptr<const BackendProgram> load_program(const ProgramImage& image) = 0;

    // ---- Program mode ----
    // Validates the arguments against the program and every descriptor against device memory
    // (throws before anything runs), then queues the run FIFO. Thread-safe.
    virtual std::shared_ptr<BackendRun> submit_run(std::shared_ptr<const BackendProgram> program,
                                                   std::vector<ChipTensor> tensors, std::vector<std::uint64_t> scalars,
                                                   const chip::RunConfig& config) = 0;
    // Waits up to `timeout_s` seconds (negative: forever) until no run is queued or in flight.
    virtual bool wait_idle(double timeout_s) = 0;
    // Finishes queued runs, then releases the chip. Idempotent.
    virtual void close() = 0;
    virtual bool closed() const noexcept = 0;

    // ---- Kernel mode (docs/simpler-runtime.md, "Kernel mode") ----
    // Latches kernel mode with the borrowed context's generation (nonzero); throws if called twice.
    virtual void enable_kernel_mode(std::uint64_t context_generation) = 0;
    virtual bool kernel_mode() const noexcept = 0;
    // Admits a callable into a free slot (0..63) with residency generation 1, or +1 on reuse.
    virtual int register_kernel(std::shared_ptr<const BackendProgram> program) = 0;
    // Retires a slot: later launches, and packets still queued for it, are rejected as stale.
    virtual void kernel_unregister(int slot) = 0;
    virtual std::uint64_t kernel_generation(int slot) const = 0;
    // Encodes a TMR packet for the slot and enqueues it copy-on-enqueue. Throws
    // std::invalid_argument naming the InvocationStatus when the encoder rejects the arguments.
    virtual std::shared_ptr<BackendRun> launch_kernel(int slot, const std::vector<ChipTensor>& tensors,
                                                      const std::vector<std::uint64_t>& scalars,
                                                      const chip::RunConfig& config) = 0;
};

}  // namespace simpler
