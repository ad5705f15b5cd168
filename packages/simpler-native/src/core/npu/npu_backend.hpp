// The NPU backend: simpler's ChipBackend on an Ascend NPU through the public ACL runtime API
// and the rts launch entry points of simpler/npu/cann_rts.hpp.
//
// UNVERIFIED: no NPU or CANN runtime exists where this was written. It is compiled in CI
// against the ACL headers of the torch-npu wheel (`nox -s npu-compile`, meson -Dnpu=enabled)
// and linked into a shared library whose only open symbols are CANN's; it has never run. The
// device runtime it launches (npu_device_abi.hpp) is not part of this project yet.
//
// Host side, per backend: one device (aclrtSetDevice), one stream for every launch, tracked
// device memory (aclrtMalloc/aclrtMemset/aclrtMemcpy/aclrtFree), programs whose kernels are
// loaded with aclrtBinaryLoadFromData and whose orchestration binary is copied to the device,
// and one event per run (aclrtRecordEvent) for done/wait. Every ACL and rts return code is
// checked; a failure throws std::runtime_error naming the call and its code.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../backend.hpp"
#include "simpler/wire/invocation_header.hpp"
#include "simpler/wire/submission.hpp"

namespace simpler::npu {

struct NpuOptions {
    std::int32_t device_id = 0;
    // The device runtime's op descriptor (JSON naming its AICPU shared object), as
    // rtsBinaryLoadFromFile takes it.
    std::string runtime_descriptor;
};

class NpuProgram;
class NpuRun;
class NpuLaunchRunner;

class NpuBackend final : public ChipBackend {
public:
    explicit NpuBackend(NpuOptions options);
    ~NpuBackend() override;
    NpuBackend(const NpuBackend&) = delete;
    NpuBackend& operator=(const NpuBackend&) = delete;

    std::uint64_t device_malloc(std::uint64_t nbytes) override;
    void device_free(std::uint64_t addr) override;
    void copy_to_device(std::uint64_t dst, const void* src, std::uint64_t nbytes) override;
    void copy_from_device(void* dst, std::uint64_t src, std::uint64_t nbytes) override;

    std::shared_ptr<const BackendProgram> load_program(const ProgramImage& image) override;

    std::shared_ptr<BackendRun> submit_run(std::shared_ptr<const BackendProgram> program,
                                           std::vector<ChipTensor> tensors, std::vector<std::uint64_t> scalars,
                                           const chip::RunConfig& config) override;
    bool wait_idle(double timeout_s) override;
    void close() override;
    bool closed() const noexcept override;

    void enable_kernel_mode(std::uint64_t context_generation) override;
    bool kernel_mode() const noexcept override;
    int register_kernel(std::shared_ptr<const BackendProgram> program) override;
    void kernel_unregister(int slot) override;
    std::uint64_t kernel_generation(int slot) const override;
    std::shared_ptr<BackendRun> launch_kernel(int slot, const std::vector<ChipTensor>& tensors,
                                              const std::vector<std::uint64_t>& scalars,
                                              const chip::RunConfig& config) override;

private:
    struct Slot {
        std::shared_ptr<const NpuProgram> program;
        std::unique_ptr<TmrSubmissionOwner> owner;
        PreparedInvocationView view{};
        bool live = false;
        std::uint64_t generation = 0;
    };

    void require_open(const char* what) const;
    void check_range_locked(std::uint64_t addr, std::uint64_t nbytes, const std::string& what) const;
    void check_tensor_locked(const ChipTensor& t, const std::string& what) const;
    std::shared_ptr<const NpuProgram> own_program(const std::shared_ptr<const BackendProgram>& p,
                                                  const char* what) const;
    void write_slot_locked(int slot);
    // Creates the run's event, calls `launch` (which enqueues on stream_ and returns its rts
    // code), then records the event; the run's outcome is statuses[seq % kStatusRing].
    template <class Launch>
    std::shared_ptr<BackendRun> enqueue_locked(const char* what, Launch launch);

    NpuOptions options_;
    void* stream_ = nullptr;       // aclrtStream
    void* runtime_bin_ = nullptr;  // rtBinHandle of the device runtime
    void* bind_entry_ = nullptr;   // rtFuncHandle
    void* program_entry_ = nullptr;
    void* kernel_entry_ = nullptr;
    std::uint64_t context_addr_ = 0;  // NpuDeviceContext in device memory
    bool device_set_ = false;
    // True from aclrtSetDevice until close() resets the device; shared with programs and runs.
    std::shared_ptr<std::atomic<bool>> device_live_ = std::make_shared<std::atomic<bool>>(false);

    mutable std::mutex mu_;  // guards everything below
    bool closed_ = false;
    std::map<std::uint64_t, std::uint64_t> allocations_;  // start -> size (device_malloc only)
    std::uint64_t next_seq_ = 0;                          // launches enqueued on stream_
    std::vector<std::weak_ptr<NpuRun>> runs_;             // runs to finish before close frees
    TmrBindingRef binding_{};
    std::array<Slot, kMaxCallables> slots_{};
    std::unique_ptr<NpuLaunchRunner> kernel_runner_;
};

}  // namespace simpler::npu
