// The NPU backend (UNVERIFIED: compiled and link-checked in CI, never run; see npu_backend.hpp).
#include "npu_backend.hpp"

#include <acl/acl.h>
#include <acl/error_codes/rt_error_codes.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "../chip/chip.hpp"  // chip::RunConfig, validate_run_config, kRingCount
#include "npu_device_abi.hpp"
#include "simpler/npu/cann_rts.hpp"
#include "simpler/wire/status.hpp"

namespace simpler::npu {

static_assert(chip::kRingCount == 4, "NpuProgramArgs carries four rings");

namespace {

void check_acl(aclError rc, const std::string& what) {
    if (rc != ACL_SUCCESS) throw std::runtime_error("NPU backend: " + what + " failed: aclError " + std::to_string(rc));
}

void check_rt(rtError_t rc, const std::string& what) {
    if (rc != RT_ERROR_NONE) throw std::runtime_error("NPU backend: " + what + " failed: rtError " + std::to_string(rc));
}

// One AICPU launch on `stream`: `args` is host memory that the runtime copies at launch.
rtError_t launch_cpu(rtFuncHandle func, rtStream_t stream, const void* args, std::size_t bytes) noexcept {
    if (bytes > std::numeric_limits<std::uint32_t>::max()) return -1;
    rtCpuKernelArgs_t cpu{};
    cpu.baseArgs.args = const_cast<void*>(args);
    cpu.baseArgs.argsSize = static_cast<std::uint32_t>(bytes);
    cpu.baseArgs.isNoNeedH2DCopy = false;
    rtLaunchKernelAttr_t attr{};  // the runtime wants attribute storage even with none
    const rtKernelLaunchCfg_t cfg{&attr, 0};
    return rtsLaunchCpuKernel(func, 1, stream, &cfg, &cpu);
}

// Milliseconds for an ACL wait: at least 1 for a positive timeout, clamped to int32.
std::int32_t timeout_ms(double timeout_s) {
    const double ms = std::ceil(timeout_s * 1000.0);
    return static_cast<std::int32_t>(std::clamp(ms, 1.0, static_cast<double>(std::numeric_limits<std::int32_t>::max())));
}

void* as_ptr(std::uint64_t addr) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr)); }

}  // namespace

// ---- Programs -------------------------------------------------------------------------------

// Programs and runs can outlive their backend (Python holds them). Once the backend has reset
// its device, that reset has released their device resources, so they must not free them again.
class NpuProgram final : public BackendProgram {
public:
    explicit NpuProgram(std::shared_ptr<const std::atomic<bool>> device_live) : device_live_(std::move(device_live)) {}
    const char* loaded_by() const noexcept override { return "npu"; }
    ~NpuProgram() override {
        if (!device_live_->load()) return;
        // Unloading codes are not actionable in a destructor; each step runs regardless.
        for (void* bin : kernel_bins) (void)aclrtBinaryUnLoad(bin);
        if (image_addr != 0) (void)aclrtFree(as_ptr(image_addr));
        if (orchestration_addr != 0) (void)aclrtFree(as_ptr(orchestration_addr));
    }
    std::string name;
    std::vector<ArgDirection> signature;
    std::int32_t tensor_count = 0;
    std::int32_t scalar_count = 0;
    std::vector<aclrtBinHandle> kernel_bins;
    std::uint64_t orchestration_addr = 0;
    std::uint64_t image_addr = 0;  // NpuProgramImage + NpuKernelRef[] in device memory

private:
    std::shared_ptr<const std::atomic<bool>> device_live_;
};

// ---- Runs -----------------------------------------------------------------------------------

class NpuRun final : public BackendRun {
public:
    NpuRun(std::uint64_t seq, aclrtEvent event, std::uint64_t status_addr,
           std::shared_ptr<const std::atomic<bool>> device_live)
        : seq_(seq), event_(event), status_addr_(status_addr), device_live_(std::move(device_live)) {}
    ~NpuRun() override {
        if (event_ != nullptr && device_live_->load()) (void)aclrtDestroyEvent(event_);
    }
    std::uint64_t id() const noexcept override { return seq_ + 1; }
    bool done() const noexcept override {
        std::scoped_lock lock(mu_);
        if (finished_) return true;
        aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        const aclError rc = aclrtQueryEventStatus(event_, &st);
        if (rc != ACL_SUCCESS) {
            finish_locked("aclrtQueryEventStatus failed: aclError " + std::to_string(rc));
            return true;
        }
        if (st != ACL_EVENT_RECORDED_STATUS_COMPLETE) return false;
        read_status_locked();
        return true;
    }
    bool wait(double timeout_s) const override {
        if (timeout_s == 0) return done();
        std::scoped_lock lock(mu_);
        if (finished_) return true;
        const aclError rc = timeout_s < 0 ? aclrtSynchronizeEvent(event_)
                                          : aclrtSynchronizeEventWithTimeout(event_, timeout_ms(timeout_s));
        if (rc == ACL_ERROR_RT_EVENT_SYNC_TIMEOUT) return false;
        if (rc != ACL_SUCCESS) {
            finish_locked("aclrtSynchronizeEvent failed: aclError " + std::to_string(rc));
            return true;
        }
        read_status_locked();
        return true;
    }
    const std::string& error() const noexcept override { return error_; }
    std::uint64_t tasks_submitted() const noexcept override { return tasks_submitted_; }
    std::uint64_t tasks_executed() const noexcept override { return tasks_executed_; }
    const std::vector<std::string>& diagnostics_files() const noexcept override { return files_; }

    // close(): the stream is drained; settle the outcome while the context still exists.
    void settle() noexcept {
        std::scoped_lock lock(mu_);
        if (!finished_) read_status_locked();
    }

private:
    void finish_locked(std::string error) const noexcept {
        error_ = std::move(error);
        finished_ = true;
    }
    // The launch finished: its outcome is in the context's status ring.
    void read_status_locked() const noexcept {
        NpuLaunchStatus s{};
        const aclError rc =
            aclrtMemcpy(&s, sizeof s, as_ptr(status_addr_), sizeof s, ACL_MEMCPY_DEVICE_TO_HOST);
        if (rc != ACL_SUCCESS) return finish_locked("aclrtMemcpy(launch status) failed: aclError " + std::to_string(rc));
        if (s.launch_seq != seq_ + 1)
            return finish_locked("launch " + std::to_string(seq_) + ": the device runtime wrote no status for it (slot holds launch " +
                                 std::to_string(static_cast<std::int64_t>(s.launch_seq) - 1) + ")");
        tasks_submitted_ = s.tasks_submitted;
        tasks_executed_ = s.tasks_executed;
        if (s.status == 0) return finish_locked(std::string());
        std::string what = "device runtime status " + std::to_string(s.status);
        if (s.status > 0 && s.status < kInvocationStatusCount)
            what += " (" + std::string(status_name(static_cast<InvocationStatus>(s.status))) + ")";
        finish_locked("launch " + std::to_string(seq_) + " failed: " + what + ", func_id " +
                      std::to_string(s.failed_func_id));
    }

    std::uint64_t seq_;
    aclrtEvent event_;
    std::uint64_t status_addr_;
    std::shared_ptr<const std::atomic<bool>> device_live_;
    mutable std::mutex mu_;
    mutable bool finished_ = false;
    mutable std::string error_;
    mutable std::uint64_t tasks_submitted_ = 0;
    mutable std::uint64_t tasks_executed_ = 0;
    std::vector<std::string> files_;  // no diagnostics on the NPU backend
};

// The kernel-mode transport: one TMR block, launched on the backend's stream.
class NpuLaunchRunner final : public AicpuPayloadRunner {
public:
    NpuLaunchRunner(rtFuncHandle entry, rtStream_t stream) : entry_(entry), stream_(stream) {}
    int launch_aicpu_payload(const void* block, std::size_t bytes) noexcept override {
        return static_cast<int>(launch_cpu(entry_, stream_, block, bytes));
    }

private:
    rtFuncHandle entry_;
    rtStream_t stream_;
};

// ---- Lifecycle ------------------------------------------------------------------------------

NpuBackend::NpuBackend(NpuOptions options) : options_(std::move(options)) {
    if (options_.device_id < 0)
        throw std::invalid_argument("NpuBackend(device_id): expected >= 0, got " + std::to_string(options_.device_id));
    if (options_.runtime_descriptor.empty())
        throw std::invalid_argument("NpuBackend(runtime_descriptor): expected the device runtime's op descriptor, got ''");
    // A framework (torch_npu) may have initialised ACL already; ACL stays initialised until the
    // process exits, since finalising it here would tear down the framework's context.
    const aclError init = aclInit(nullptr);
    if (init != ACL_ERROR_REPEAT_INITIALIZE) check_acl(init, "aclInit");
    try {
        check_acl(aclrtSetDevice(options_.device_id), "aclrtSetDevice(" + std::to_string(options_.device_id) + ")");
        device_set_ = true;
        device_live_->store(true);
        check_acl(aclrtCreateStream(&stream_), "aclrtCreateStream");
        rtLoadBinaryOption_t option{};
        option.optionId = RT_LOAD_BINARY_OPT_CPU_KERNEL_MODE;
        option.value.cpuKernelMode = 1;  // load the AICPU shared object the descriptor names
        const rtLoadBinaryConfig_t config{&option, 1};
        check_rt(rtsBinaryLoadFromFile(options_.runtime_descriptor.c_str(), &config, &runtime_bin_),
                 "rtsBinaryLoadFromFile(" + options_.runtime_descriptor + ")");
        check_rt(rtsFuncGetByName(runtime_bin_, kBindEntry, &bind_entry_), std::string("rtsFuncGetByName(") + kBindEntry + ")");
        check_rt(rtsFuncGetByName(runtime_bin_, kProgramEntry, &program_entry_),
                 std::string("rtsFuncGetByName(") + kProgramEntry + ")");
        check_rt(rtsFuncGetByName(runtime_bin_, kKernelEntry, &kernel_entry_),
                 std::string("rtsFuncGetByName(") + kKernelEntry + ")");
        void* ctx = nullptr;
        check_acl(aclrtMalloc(&ctx, sizeof(NpuDeviceContext), ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc(device context)");
        context_addr_ = reinterpret_cast<std::uintptr_t>(ctx);
        check_acl(aclrtMemset(ctx, sizeof(NpuDeviceContext), 0, sizeof(NpuDeviceContext)), "aclrtMemset(device context)");
        // The device learns its context here, from a trusted launch, never from a packet.
        const NpuBindArgs bind{context_addr_};
        check_rt(launch_cpu(bind_entry_, stream_, &bind, sizeof bind), std::string("rtsLaunchCpuKernel(") + kBindEntry + ")");
        kernel_runner_ = std::make_unique<NpuLaunchRunner>(kernel_entry_, stream_);
    } catch (...) {
        close();
        throw;
    }
}

NpuBackend::~NpuBackend() {
    try {
        close();
    } catch (...) {
        // A destructor reports nothing; close() already released what it could.
    }
}

bool NpuBackend::closed() const noexcept {
    std::scoped_lock lock(mu_);
    return closed_;
}

void NpuBackend::require_open(const char* what) const {
    if (closed_) throw std::runtime_error(std::string("NpuBackend.") + what + ": the backend is closed");
}

// Not to be called concurrently with close(), which destroys the stream (the Worker calls
// them one after the other).
bool NpuBackend::wait_idle(double timeout_s) {
    aclrtStream stream = nullptr;
    {
        std::scoped_lock lock(mu_);
        if (closed_) return true;
        stream = stream_;
    }
    const aclError rc = timeout_s < 0 ? aclrtSynchronizeStream(stream)
                                      : aclrtSynchronizeStreamWithTimeout(stream, timeout_ms(timeout_s));
    if (rc == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) return false;
    check_acl(rc, "aclrtSynchronizeStream");
    return true;
}

void NpuBackend::close() {
    std::vector<std::shared_ptr<NpuRun>> live;
    {
        std::scoped_lock lock(mu_);
        if (closed_) return;
        closed_ = true;
        for (auto& w : runs_)
            if (auto r = w.lock()) live.push_back(std::move(r));
        runs_.clear();
    }
    // Finish queued launches, then settle every run while its status can still be read. The
    // first failure is reported after everything that can be released is released.
    std::string first_error;
    auto note = [&](aclError rc, const char* what) {
        if (rc != ACL_SUCCESS && first_error.empty())
            first_error = std::string("NPU backend: ") + what + " failed: aclError " + std::to_string(rc);
    };
    if (stream_ != nullptr) note(aclrtSynchronizeStream(stream_), "aclrtSynchronizeStream");
    for (auto& r : live) r->settle();
    for (auto& s : slots_) {
        if (s.owner) s.owner->close();
        s.program.reset();
    }
    for (const auto& [addr, size] : allocations_) note(aclrtFree(as_ptr(addr)), "aclrtFree");
    allocations_.clear();
    if (context_addr_ != 0) note(aclrtFree(as_ptr(context_addr_)), "aclrtFree(device context)");
    context_addr_ = 0;
    if (runtime_bin_ != nullptr && rtsBinaryUnload(runtime_bin_) != RT_ERROR_NONE && first_error.empty())
        first_error = "NPU backend: rtsBinaryUnload failed";
    runtime_bin_ = nullptr;
    if (stream_ != nullptr) note(aclrtDestroyStream(stream_), "aclrtDestroyStream");
    stream_ = nullptr;
    device_live_->store(false);  // programs and runs still held elsewhere leave their resources to the reset
    if (device_set_) note(aclrtResetDevice(options_.device_id), "aclrtResetDevice");
    device_set_ = false;
    if (!first_error.empty()) throw std::runtime_error(first_error);
}

// ---- Device memory --------------------------------------------------------------------------

std::uint64_t NpuBackend::device_malloc(std::uint64_t nbytes) {
    if (nbytes == 0) throw std::invalid_argument("device_malloc(nbytes): expected > 0, got 0");
    std::scoped_lock lock(mu_);
    require_open("device_malloc");
    void* p = nullptr;
    check_acl(aclrtMalloc(&p, nbytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc(" + std::to_string(nbytes) + " bytes)");
    const auto addr = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
    if (addr % 64 != 0) {
        (void)aclrtFree(p);
        throw std::runtime_error("NPU backend: aclrtMalloc returned " + std::to_string(addr) +
                                 ", expected a 64-byte aligned address");
    }
    const aclError rc = aclrtMemset(p, nbytes, 0, nbytes);
    if (rc != ACL_SUCCESS) {
        (void)aclrtFree(p);
        check_acl(rc, "aclrtMemset(new allocation)");
    }
    allocations_[addr] = nbytes;
    return addr;
}

void NpuBackend::device_free(std::uint64_t addr) {
    std::scoped_lock lock(mu_);
    require_open("device_free");
    auto it = allocations_.find(addr);
    if (it == allocations_.end())
        throw std::invalid_argument("device_free(addr): " + std::to_string(addr) + " is not the start of a live allocation");
    check_acl(aclrtFree(as_ptr(addr)), "aclrtFree");
    allocations_.erase(it);
}

void NpuBackend::check_range_locked(std::uint64_t addr, std::uint64_t nbytes, const std::string& what) const {
    auto it = allocations_.upper_bound(addr);
    if (it != allocations_.begin()) {
        --it;
        const std::uint64_t offset = addr - it->first;
        if (offset <= it->second && nbytes <= it->second - offset) return;
    }
    throw std::out_of_range(what + ": [" + std::to_string(addr) + ", +" + std::to_string(nbytes) +
                            ") is not inside one live allocation of this backend");
}

void NpuBackend::copy_to_device(std::uint64_t dst, const void* src, std::uint64_t nbytes) {
    if (nbytes == 0) return;
    std::scoped_lock lock(mu_);
    require_open("copy_to_device");
    check_range_locked(dst, nbytes, "copy_to_device(dst)");
    check_acl(aclrtMemcpy(as_ptr(dst), nbytes, src, nbytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy(host to device)");
}

void NpuBackend::copy_from_device(void* dst, std::uint64_t src, std::uint64_t nbytes) {
    if (nbytes == 0) return;
    std::scoped_lock lock(mu_);
    require_open("copy_from_device");
    check_range_locked(src, nbytes, "copy_from_device(src)");
    check_acl(aclrtMemcpy(dst, nbytes, as_ptr(src), nbytes, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy(device to host)");
}

void NpuBackend::check_tensor_locked(const ChipTensor& t, const std::string& what) const {
    const char* problem = chip_tensor_problem(t);
    if (problem != nullptr) throw std::out_of_range(what + ": " + problem);
    if (chip_tensor_is_empty(t)) return;
    // Memory of this backend must hold the whole buffer; other addresses are borrowed device
    // storage (a framework's tensors), whose bounds the caller vouches for.
    auto it = allocations_.upper_bound(t.buffer.addr);
    if (it == allocations_.begin()) return;
    --it;
    const std::uint64_t offset = t.buffer.addr - it->first;
    if (offset < it->second && t.buffer.size > it->second - offset)
        throw std::out_of_range(what + ": buffer of " + std::to_string(t.buffer.size) + " bytes at offset " +
                                std::to_string(offset) + " overruns its allocation of " + std::to_string(it->second) +
                                " bytes");
}

// ---- Programs -------------------------------------------------------------------------------

std::shared_ptr<const BackendProgram> NpuBackend::load_program(const ProgramImage& image) {
    if (image.func_name.empty() || image.func_name.size() >= sizeof(NpuProgramImage::func_name))
        throw std::invalid_argument("load_program(func_name): expected 1..127 bytes, got " +
                                    std::to_string(image.func_name.size()));
    if (image.bytes == nullptr || image.size == 0)
        throw std::invalid_argument("load_program('" + image.func_name + "'): the orchestration binary is empty");
    std::vector<std::uint8_t> codes;
    for (ArgDirection d : image.signature) codes.push_back(static_cast<std::uint8_t>(d));
    InvocationCounts counts{};
    const InvocationStatus st = derive_invocation_counts(codes.data(), codes.size(), 0, &counts);
    if (st != InvocationStatus::Ok)
        throw std::invalid_argument("load_program('" + image.func_name + "'): signature rejected: " + status_name(st));

    auto program = std::make_shared<NpuProgram>(device_live_);
    program->name = image.func_name;
    program->signature = image.signature;
    program->tensor_count = counts.tensor_count;
    program->scalar_count = counts.scalar_count;
    std::scoped_lock lock(mu_);
    require_open("load_program");
    std::vector<NpuKernelRef> refs;
    for (const KernelImage& k : image.children) {
        const std::string label = "load_program('" + image.func_name + "'): kernel '" + k.name + "' (func_id " +
                                  std::to_string(k.func_id) + ")";
        if (k.bytes == nullptr || k.size == 0) throw std::invalid_argument(label + ": the binary is empty");
        if (k.core_type > 1) throw std::invalid_argument(label + ": core_type " + std::to_string(k.core_type) + ", expected 0 (AIV) or 1 (AIC)");
        aclrtBinHandle bin = nullptr;
        check_acl(aclrtBinaryLoadFromData(k.bytes, k.size, nullptr, &bin), label + ": aclrtBinaryLoadFromData");
        program->kernel_bins.push_back(bin);
        aclrtFuncHandle func = nullptr;
        check_acl(aclrtBinaryGetFunction(bin, k.entry.c_str(), &func), label + ": aclrtBinaryGetFunction(" + k.entry + ")");
        void* aic = nullptr;
        void* aiv = nullptr;
        check_acl(aclrtGetFunctionAddr(func, &aic, &aiv), label + ": aclrtGetFunctionAddr");
        void* addr = k.core_type == 1 ? aic : aiv;
        if (addr == nullptr) throw std::invalid_argument(label + ": the binary has no entry for its core type");
        refs.push_back(NpuKernelRef{k.func_id, k.core_type, reinterpret_cast<std::uintptr_t>(addr)});
    }
    // The orchestration binary goes to device memory, where the device runtime loads it.
    void* orch = nullptr;
    check_acl(aclrtMalloc(&orch, image.size, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc(orchestration binary)");
    program->orchestration_addr = reinterpret_cast<std::uintptr_t>(orch);
    check_acl(aclrtMemcpy(orch, image.size, image.bytes, image.size, ACL_MEMCPY_HOST_TO_DEVICE),
              "aclrtMemcpy(orchestration binary)");
    std::vector<std::uint8_t> desc(sizeof(NpuProgramImage) + refs.size() * sizeof(NpuKernelRef));
    NpuProgramImage head{};
    head.orchestration_addr = program->orchestration_addr;
    head.orchestration_bytes = image.size;
    std::memcpy(head.func_name, image.func_name.data(), image.func_name.size());
    head.kernel_count = static_cast<std::uint32_t>(refs.size());
    std::memcpy(desc.data(), &head, sizeof head);
    if (!refs.empty()) std::memcpy(desc.data() + sizeof head, refs.data(), refs.size() * sizeof(NpuKernelRef));
    void* img = nullptr;
    check_acl(aclrtMalloc(&img, desc.size(), ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc(program image)");
    program->image_addr = reinterpret_cast<std::uintptr_t>(img);
    check_acl(aclrtMemcpy(img, desc.size(), desc.data(), desc.size(), ACL_MEMCPY_HOST_TO_DEVICE),
              "aclrtMemcpy(program image)");
    return program;
}

std::shared_ptr<const NpuProgram> NpuBackend::own_program(const std::shared_ptr<const BackendProgram>& p,
                                                          const char* what) const {
    if (p == nullptr) throw std::invalid_argument(std::string(what) + "(program): expected a loaded program, got none");
    auto npu = std::dynamic_pointer_cast<const NpuProgram>(p);
    if (npu == nullptr)
        throw std::invalid_argument(std::string(what) + "(program): expected a program loaded by the npu backend, got one loaded by '" +
                                    p->loaded_by() + "'");
    return npu;
}

// ---- Runs -----------------------------------------------------------------------------------

template <class Launch>
std::shared_ptr<BackendRun> NpuBackend::enqueue_locked(const char* what, Launch launch) {
    aclrtEvent event = nullptr;
    check_acl(aclrtCreateEventWithFlag(&event, ACL_EVENT_SYNC), std::string(what) + ": aclrtCreateEventWithFlag");
    const std::uint64_t seq = next_seq_;
    const std::uint64_t status_addr =
        context_addr_ + offsetof(NpuDeviceContext, statuses) + (seq % kStatusRing) * sizeof(NpuLaunchStatus);
    auto run = std::make_shared<NpuRun>(seq, event, status_addr, device_live_);  // owns the event from here
    launch(seq);  // throws when nothing was enqueued
    ++next_seq_;  // the device counts this launch whatever happens below
    const aclError rc = aclrtRecordEvent(event, stream_);
    if (rc != ACL_SUCCESS)
        throw std::runtime_error(std::string("NPU backend: ") + what + ": launch " + std::to_string(seq) +
                                 " was enqueued but aclrtRecordEvent failed (aclError " + std::to_string(rc) +
                                 "); wait_idle() still waits for it");
    runs_.erase(std::remove_if(runs_.begin(), runs_.end(), [](const auto& w) { return w.expired(); }), runs_.end());
    runs_.push_back(run);
    return run;
}

std::shared_ptr<BackendRun> NpuBackend::submit_run(std::shared_ptr<const BackendProgram> program,
                                                   std::vector<ChipTensor> tensors, std::vector<std::uint64_t> scalars,
                                                   const chip::RunConfig& config) {
    auto p = own_program(program, "submit_run");
    if (tensors.size() != static_cast<std::size_t>(p->tensor_count) ||
        scalars.size() != static_cast<std::size_t>(p->scalar_count))
        throw std::invalid_argument("submit_run(args): '" + p->name + "' expects " + std::to_string(p->tensor_count) +
                                    " tensors and " + std::to_string(p->scalar_count) + " scalars, got " +
                                    std::to_string(tensors.size()) + " and " + std::to_string(scalars.size()));
    chip::validate_run_config(config);
    if (config.swimlane || config.dep_graph)
        throw std::invalid_argument("submit_run(config): swimlane and dep_graph diagnostics are simulator-only");
    std::scoped_lock lock(mu_);
    require_open("submit_run");
    if (binding_.context_generation != 0) throw std::runtime_error("submit_run: this backend is in kernel mode; use launch_kernel");
    for (std::size_t i = 0; i < tensors.size(); ++i) check_tensor_locked(tensors[i], "submit_run(args): tensor " + std::to_string(i));
    return enqueue_locked("submit_run", [&](std::uint64_t seq) {
        NpuProgramArgs a{};
        a.magic = kProgramArgsMagic;
        a.version = kProgramArgsVersion;
        a.launch_seq = seq;
        a.context_addr = context_addr_;
        a.program_addr = p->image_addr;
        a.tensor_count = static_cast<std::uint32_t>(tensors.size());
        a.scalar_count = static_cast<std::uint32_t>(scalars.size());
        for (int r = 0; r < chip::kRingCount; ++r) {
            a.task_window[r] = config.task_window[r];
            a.heap[r] = config.heap[r];
            a.dep_pool[r] = config.dep_pool[r];
        }
        a.workspace_budget_bytes = config.workspace_budget_bytes;
        a.aicpu_threads = config.aicpu_threads;
        std::vector<std::uint8_t> block(sizeof a + tensors.size() * sizeof(ChipTensor) + scalars.size() * 8);
        std::memcpy(block.data(), &a, sizeof a);
        if (!tensors.empty()) std::memcpy(block.data() + sizeof a, tensors.data(), tensors.size() * sizeof(ChipTensor));
        if (!scalars.empty())
            std::memcpy(block.data() + sizeof a + tensors.size() * sizeof(ChipTensor), scalars.data(), scalars.size() * 8);
        check_rt(launch_cpu(program_entry_, stream_, block.data(), block.size()),
                 std::string("rtsLaunchCpuKernel(") + kProgramEntry + ")");
    });
}

// ---- Kernel mode ----------------------------------------------------------------------------

bool NpuBackend::kernel_mode() const noexcept {
    std::scoped_lock lock(mu_);
    return binding_.context_generation != 0;
}

void NpuBackend::enable_kernel_mode(std::uint64_t context_generation) {
    if (context_generation == 0)
        throw std::invalid_argument("enable_kernel_mode(context_generation): expected nonzero, got 0");
    std::scoped_lock lock(mu_);
    require_open("enable_kernel_mode");
    if (binding_.context_generation != 0) throw std::runtime_error("enable_kernel_mode: kernel mode is already enabled");
    // The binding names the device context; the device compares a packet's binding with it.
    const TmrBindingRef binding{context_addr_, context_generation};
    check_acl(aclrtMemcpy(as_ptr(context_addr_ + offsetof(NpuDeviceContext, binding)), sizeof binding, &binding,
                          sizeof binding, ACL_MEMCPY_HOST_TO_DEVICE),
              "aclrtMemcpy(binding to device)");
    binding_ = binding;
}

void NpuBackend::write_slot_locked(int slot) {
    const Slot& s = slots_[static_cast<std::size_t>(slot)];
    const PreparedInvocationView view = s.live ? s.view : PreparedInvocationView{slot, 0, 0, 0};
    const std::uint64_t image = s.live ? s.program->image_addr : 0;
    check_acl(aclrtMemcpy(as_ptr(context_addr_ + offsetof(NpuDeviceContext, views) + slot * sizeof view), sizeof view,
                          &view, sizeof view, ACL_MEMCPY_HOST_TO_DEVICE),
              "aclrtMemcpy(trusted view of slot " + std::to_string(slot) + ")");
    check_acl(aclrtMemcpy(as_ptr(context_addr_ + offsetof(NpuDeviceContext, programs) + slot * sizeof image),
                          sizeof image, &image, sizeof image, ACL_MEMCPY_HOST_TO_DEVICE),
              "aclrtMemcpy(program of slot " + std::to_string(slot) + ")");
}

int NpuBackend::register_kernel(std::shared_ptr<const BackendProgram> program) {
    auto p = own_program(program, "register_kernel");
    std::scoped_lock lock(mu_);
    require_open("register_kernel");
    if (binding_.context_generation == 0) throw std::runtime_error("register_kernel: kernel mode is not enabled");
    int slot = -1;
    for (int i = 0; i < kMaxCallables && slot < 0; ++i)
        if (!slots_[static_cast<std::size_t>(i)].live) slot = i;
    if (slot < 0) throw std::invalid_argument("register_kernel: all " + std::to_string(kMaxCallables) + " slots are live");
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    const PreparedInvocationView view{slot, p->tensor_count, p->scalar_count, s.generation + 1};
    if (!s.owner) s.owner = std::make_unique<TmrSubmissionOwner>();
    const InvocationStatus st = s.owner->publish(view, binding_);
    if (st != InvocationStatus::Ok)
        throw std::invalid_argument("register_kernel('" + p->name + "'): rejected: " + status_name(st));
    s.program = std::move(p);
    s.view = view;
    s.generation = view.slot_generation;
    s.live = true;
    try {
        write_slot_locked(slot);
    } catch (...) {
        s.owner->close();
        s.live = false;
        s.program.reset();
        throw;
    }
    return slot;
}

void NpuBackend::kernel_unregister(int slot) {
    std::scoped_lock lock(mu_);
    require_open("kernel_unregister");
    if (slot < 0 || slot >= kMaxCallables || !slots_[static_cast<std::size_t>(slot)].live)
        throw std::invalid_argument("kernel_unregister(slot): expected a live slot, got " + std::to_string(slot));
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    s.owner->close();
    s.live = false;
    write_slot_locked(slot);  // queued packets for the slot now meet generation 0: stale
    s.program.reset();
}

std::uint64_t NpuBackend::kernel_generation(int slot) const {
    if (slot < 0 || slot >= kMaxCallables)
        throw std::invalid_argument("kernel_generation(slot): expected 0.." + std::to_string(kMaxCallables - 1) + ", got " +
                                    std::to_string(slot));
    std::scoped_lock lock(mu_);
    return slots_[static_cast<std::size_t>(slot)].generation;
}

std::shared_ptr<BackendRun> NpuBackend::launch_kernel(int slot, const std::vector<ChipTensor>& tensors,
                                                      const std::vector<std::uint64_t>& scalars,
                                                      const chip::RunConfig& config) {
    chip::validate_run_config(config);
    if (config.swimlane || config.dep_graph)
        throw std::invalid_argument("launch_kernel(config): swimlane and dep_graph diagnostics are simulator-only");
    std::scoped_lock lock(mu_);
    require_open("launch_kernel");
    if (slot < 0 || slot >= kMaxCallables || !slots_[static_cast<std::size_t>(slot)].live)
        throw std::invalid_argument("launch_kernel(slot): expected a live slot, got " + std::to_string(slot));
    for (std::size_t i = 0; i < tensors.size(); ++i) check_tensor_locked(tensors[i], "launch_kernel(args): tensor " + std::to_string(i));
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    return enqueue_locked("launch_kernel", [&](std::uint64_t) {
        const EnqueueOutcome r = s.owner->submit(*kernel_runner_, tensors.data(), tensors.size(), scalars.data(), scalars.size());
        if (r.status != InvocationStatus::Ok)
            throw std::invalid_argument(std::string("launch_kernel(args): rejected by the encoder: ") + status_name(r.status));
        check_rt(static_cast<rtError_t>(r.launch_rc), std::string("rtsLaunchCpuKernel(") + kKernelEntry + ")");
    });
}

}  // namespace simpler::npu

// The library's one export, for the loader that will open libsimpler_npu.so when a Worker asks
// for a2a3/a5: a new backend, or nullptr with the reason in `error` (NUL-terminated, truncated
// to `error_bytes`). C linkage so that it can be found with dlsym.
extern "C" __attribute__((visibility("default"))) simpler::ChipBackend* simpler_npu_backend_create(
    std::int32_t device_id, const char* runtime_descriptor, char* error, std::size_t error_bytes) noexcept {
    try {
        simpler::npu::NpuOptions options;
        options.device_id = device_id;
        options.runtime_descriptor = runtime_descriptor != nullptr ? runtime_descriptor : "";
        return new simpler::npu::NpuBackend(std::move(options));
    } catch (const std::exception& e) {
        if (error != nullptr && error_bytes > 0) {
            const std::size_t n = std::min(error_bytes - 1, std::strlen(e.what()));
            std::memcpy(error, e.what(), n);
            error[n] = '\0';
        }
        return nullptr;
    } catch (...) {
        if (error != nullptr && error_bytes > 0) error[0] = '\0';
        return nullptr;
    }
}
