// CANN variant, host part (UNVERIFIED: written against CANN's acl/rt runtime headers, never
// compiled or run here). The runner launches the kernel-specific AICPU entry with the block as
// its argument buffer; the runtime copies the arguments at launch, which is the copy-on-enqueue
// contract. The gate and the result slots live in device memory (CannProbeContext).
#include <acl/acl.h>
#include <runtime/rt.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cann_context.hpp"
#include "probe_device.hpp"

namespace probe {
namespace {

const char* kDeviceSo = "libcann_probe_device.so";
const char* kEntry = "simpler_aicpu_kernel_exec";

class CannRunner final : public simpler::AicpuPayloadRunner {
  public:
    explicit CannRunner(aclrtStream stream) : stream_(stream) {}
    int launch_aicpu_payload(const void* block, std::size_t bytes) noexcept override {
        const rtError_t rc = rtCpuKernelLaunch(kDeviceSo, kEntry, 1, block, static_cast<std::uint32_t>(bytes), nullptr,
                                               stream_);
        return rc == RT_ERROR_NONE ? 0 : static_cast<int>(rc);
    }

  private:
    aclrtStream stream_;
};

class CannDevice final : public ProbeDevice {
  public:
    explicit CannDevice(std::chrono::milliseconds gate_timeout) : runner_(nullptr) {
        if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) throw std::runtime_error("acl init");
        if (aclrtCreateStream(&stream_) != ACL_SUCCESS) throw std::runtime_error("acl stream");
        runner_ = CannRunner(stream_);
        if (aclrtMalloc(&ctx_dev_, sizeof(CannProbeContext), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS)
            throw std::runtime_error("acl malloc");
        std::memset(&ctx_, 0, sizeof ctx_);
        ctx_.gate_spin_limit = static_cast<std::uint64_t>(gate_timeout.count()) * 100000;
        for (auto& s : ctx_.slots) s = ResultSlot{};
    }
    ~CannDevice() override {
        aclrtFree(ctx_dev_);
        aclrtDestroyStream(stream_);
        aclrtResetDevice(0);
        aclFinalize();
    }
    const char* variant() const noexcept override { return "cann"; }
    simpler::TmrBindingRef publish(const simpler::PreparedInvocationView* views, std::size_t n,
                                   std::uint64_t context_generation) override {
        ctx_.callable_count = static_cast<std::uint32_t>(n);
        for (std::size_t i = 0; i < n && i < 3; ++i) ctx_.callables[i] = views[i];
        // The binding names this device context, so the AICPU entry can find it from the block.
        ctx_.binding = simpler::TmrBindingRef{reinterpret_cast<std::uint64_t>(ctx_dev_), context_generation};
        upload();
        return ctx_.binding;
    }
    simpler::AicpuPayloadRunner& runner() override { return runner_; }
    void release_gate() override {
        const std::uint32_t one = 1;
        aclrtMemcpy(ctx_dev_, sizeof one, &one, sizeof one, ACL_MEMCPY_HOST_TO_DEVICE);
    }
    bool wait_done(std::size_t, std::chrono::milliseconds) override {
        const bool ok = aclrtSynchronizeStream(stream_) == ACL_SUCCESS;
        aclrtMemcpy(&ctx_, sizeof ctx_, ctx_dev_, sizeof ctx_, ACL_MEMCPY_DEVICE_TO_HOST);
        return ok && ctx_.gate_timed_out == 0;
    }
    bool gate_timed_out() const override { return ctx_.gate_timed_out != 0; }
    std::vector<ResultSlot> results() const override { return std::vector<ResultSlot>(ctx_.slots, ctx_.slots + kSlots); }

  private:
    void upload() { aclrtMemcpy(ctx_dev_, sizeof ctx_, &ctx_, sizeof ctx_, ACL_MEMCPY_HOST_TO_DEVICE); }
    aclrtStream stream_ = nullptr;
    void* ctx_dev_ = nullptr;
    CannProbeContext ctx_;
    CannRunner runner_;
};

}  // namespace

std::unique_ptr<ProbeDevice> make_device(std::chrono::milliseconds gate_timeout) {
    return std::make_unique<CannDevice>(gate_timeout);
}

}  // namespace probe
