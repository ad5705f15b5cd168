// Kernel mode (see docs/simpler-runtime.md, "Kernel mode"): callables admitted into slots,
// launches encoded as TMR packets copy-on-enqueue, and the simulated AICPU consumer that
// validates a packet before it runs.
#include <cstddef>
#include <stdexcept>

#include "chip_internal.hpp"
#include "simpler/wire/consume.hpp"
#include "simpler/wire/transport.hpp"

namespace simpler::chip {

// Copy-on-enqueue runner of one launch: copies the block into a queued item for the simulated
// AICPU consumer (TMR), or keeps the copy for finish() once the submission transaction is over:
// HBG consumes it and builds the graph on the host; a TMR launch whose caller waits for it
// (config.orchestrate_on_caller) runs on the caller's thread when the chip is idle (the same
// consumer, orchestration and tasks as on the chip's threads, without a thread handoff), else is
// queued. Never throws; a nonzero code means nothing was enqueued.
class Chip::LaunchRunner final : public AicpuPayloadRunner {
public:
    LaunchRunner(Chip& chip, const RunConfig& config) : chip_(chip), config_(config) {}
    int launch_aicpu_payload(const void* block, std::size_t bytes) noexcept override {
        try {
            Pending p;
            p.kernel_launch = true;
            p.config = config_;
            p.block.assign(static_cast<const std::uint8_t*>(block), static_cast<const std::uint8_t*>(block) + bytes);
            if (chip_.options_.runtime == Runtime::HostBuildGraph || config_.orchestrate_on_caller) {
                if (chip_.closed_.load()) return 1;
                deferred = std::make_unique<Pending>(std::move(p));
                return 0;
            }
            run = chip_.enqueue(std::move(p));
            return 0;
        } catch (const std::bad_alloc&) {
            return 2;
        } catch (...) {
            return 1;  // closed
        }
    }
    // HBG: consume the copied packet and build the graph on this thread, then enqueue. TMR on
    // the caller: run it here if the chip is idle (run_on_caller), else enqueue it.
    std::shared_ptr<Run> finish() {
        if (deferred) {
            if (chip_.options_.runtime == Runtime::HostBuildGraph) {
                chip_.build_on_host(*deferred);
            } else if (std::shared_ptr<Run> done = chip_.run_on_caller(*deferred)) {
                deferred.reset();
                return run = std::move(done);
            }
            run = chip_.enqueue(std::move(*deferred));
            deferred.reset();
        }
        return run;
    }
    std::shared_ptr<Run> run;
    std::unique_ptr<Pending> deferred;

private:
    Chip& chip_;
    const RunConfig& config_;
};

void Chip::enable_kernel_mode(std::uint64_t context_generation) {
    if (context_generation == 0)
        throw std::invalid_argument("borrowed_context_generation: expected a nonzero generation, got 0");
    std::lock_guard<std::mutex> lk(slots_mu_);
    if (binding_.context_generation != 0) throw std::runtime_error("kernel mode is already enabled on this chip");
    binding_.device_binding_addr = reinterpret_cast<std::uint64_t>(this);
    binding_.context_generation = context_generation;
}

int Chip::kernel_register(std::shared_ptr<const ChipProgram> program) {
    if (!kernel_mode()) throw std::runtime_error("kernel_register: the chip is not in kernel mode");
    if (program == nullptr) throw std::invalid_argument("register(callable): expected a loaded callable, got none");
    // Kernel-entry admission: the signature's effective counts, within the wire limits.
    std::vector<std::uint8_t> codes;
    for (ArgDirection d : program->signature) codes.push_back(static_cast<std::uint8_t>(d));
    InvocationCounts counts{};
    const InvocationStatus st = derive_invocation_counts(codes.data(), codes.size(), 0, &counts);
    if (st != InvocationStatus::Ok)
        throw std::invalid_argument("register(callable): '" + program->name + "' rejected by kernel-entry admission: " +
                                    status_name(st));
    for (const auto& [func_id, k] : program->kernels)
        if (core_threads_[static_cast<int>(k->core)] == 0)
            throw std::invalid_argument("register(callable): kernel " + k->label() + " needs an " +
                                        core_type_name(k->core) + " thread, but this Worker has none");
    std::lock_guard<std::mutex> lk(slots_mu_);
    for (int i = 0; i < kMaxCallables; ++i) {
        KernelSlot& slot = slots_[i];
        if (slot.live) continue;
        slot.program = std::move(program);
        slot.generation += 1;  // residency generation: live slots start at 1
        slot.view = PreparedInvocationView{i, counts.tensor_count, counts.scalar_count, slot.generation};
        if (!slot.owner) slot.owner = std::make_unique<TmrSubmissionOwner>();
        const InvocationStatus ps = slot.owner->publish(slot.view, binding_);
        if (ps != InvocationStatus::Ok) {
            slot.program.reset();
            throw std::invalid_argument(std::string("register(callable): cannot publish the slot: ") + status_name(ps));
        }
        slot.live = true;
        return i;
    }
    throw std::invalid_argument("register(callable): all " + std::to_string(kMaxCallables) +
                                " kernel-mode slots are in use");
}

void Chip::kernel_unregister(int slot) {
    std::lock_guard<std::mutex> lk(slots_mu_);
    if (slot < 0 || slot >= kMaxCallables || !slots_[slot].live)
        throw std::invalid_argument("unregister(handle): slot " + std::to_string(slot) + " is not live");
    slots_[slot].live = false;
    slots_[slot].owner->close();
    slots_[slot].program.reset();
}

std::uint64_t Chip::kernel_generation(int slot) const {
    std::lock_guard<std::mutex> lk(slots_mu_);
    if (slot < 0 || slot >= kMaxCallables) throw std::out_of_range("slot out of range");
    return slots_[slot].generation;
}

std::size_t Chip::kernel_template_bytes(int slot) const {
    std::lock_guard<std::mutex> lk(slots_mu_);
    if (slot < 0 || slot >= kMaxCallables || !slots_[slot].owner) return 0;
    return slots_[slot].owner->template_bytes();
}

std::shared_ptr<Run> Chip::kernel_launch(int slot, const std::vector<ChipTensor>& tensors,
                                         const std::vector<std::uint64_t>& scalars, RunConfig config) {
    if (!kernel_mode()) throw std::runtime_error("launch: the chip is not in kernel mode");
    validate_run_config(config);
    TmrSubmissionOwner* owner = nullptr;
    {
        std::lock_guard<std::mutex> lk(slots_mu_);
        if (slot < 0 || slot >= kMaxCallables || !slots_[slot].owner)
            throw std::invalid_argument("launch(handle): slot " + std::to_string(slot) + " was never registered");
        owner = slots_[slot].owner.get();  // owners live as long as the chip; close() makes them stale
    }
    for (std::size_t i = 0; i < tensors.size(); ++i)
        if (!tensor_ok(tensors[i])) check_tensor(tensors[i], "launch(args): tensor " + std::to_string(i));
    LaunchRunner runner(*this, config);
    const EnqueueOutcome r = owner->submit(runner, tensors.data(), tensors.size(), scalars.data(), scalars.size());
    if (r.status != InvocationStatus::Ok)
        throw std::invalid_argument(std::string("launch: TMR encode/enqueue rejected the invocation: ") +
                                    status_name(r.status));
    if (r.launch_rc != 0) throw std::runtime_error("launch: the Worker is closed");
    return runner.finish();
}

std::shared_ptr<Run> Chip::kernel_enqueue_block(const void* block, std::size_t bytes, RunConfig config) {
    if (!kernel_mode()) throw std::runtime_error("enqueue: the chip is not in kernel mode");
    validate_run_config(config);
    LaunchRunner runner(*this, config);
    if (runner.launch_aicpu_payload(block, bytes) != 0) throw std::runtime_error("enqueue: the Worker is closed");
    return runner.finish();
}

// The simulated AICPU consumer: decode and validate the copied packet against the trusted view
// of the slot it names and the trusted binding, before anything runs. Returns an error message,
// or "" with p.program/p.tensors/p.scalars filled.
std::string Chip::consume_kernel_launch(Pending& p) {
    const std::string what = "kernel launch rejected by the AICPU consumer: ";
    ByteSpan packet;
    InvocationStatus st = tmr_block_packet(p.block.data(), p.block.size(), &packet);
    if (st != InvocationStatus::Ok) return what + status_name(st) + " (transport block)";
    std::int32_t id = -1;
    if (!packet.read_at(offsetof(InvocationHeader, callable_id), &id)) return what + "InvalidSize (short header)";
    PreparedInvocationView view{};
    TmrBindingRef binding{};
    std::shared_ptr<const ChipProgram> program;
    {
        std::lock_guard<std::mutex> lk(slots_mu_);
        if (!callable_id_in_range(id)) return what + "InvalidHeader (callable_id " + std::to_string(id) + ")";
        const KernelSlot& slot = slots_[id];
        if (!slot.live) return what + "StaleCallable (slot " + std::to_string(id) + " is not registered)";
        view = slot.view;
        binding = binding_;
        program = slot.program;
    }
    auto storage = std::make_unique<EntryArgsStorage>();
    st = consume_tmr_invocation(packet, view, binding, storage.get());
    if (st != InvocationStatus::Ok) return what + status_name(st);
    for (std::int32_t i = 0; i < storage->tensor_count; ++i)
        if (!tensor_ok(storage->tensors[i]))
            return what + "InvalidTensor (tensor " + std::to_string(i) + " is outside its device allocation)";
    p.program = std::move(program);
    p.tensors.assign(storage->tensors, storage->tensors + storage->tensor_count);
    p.scalars.assign(storage->scalars, storage->scalars + storage->scalar_count);
    return {};
}

}  // namespace simpler::chip
