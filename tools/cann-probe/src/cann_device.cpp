// CANN variant, device part (UNVERIFIED: compiled in CI with the host compiler; on hardware it is
// built with the AICPU toolchain). Two entries:
// - cann_probe_bind_context: the host's trusted launch that names this device's context;
// - simpler_aicpu_kernel_exec: receives the runtime's device copy of one block, waits on the
//   gate, then admits, decodes and consumes the packet with simpler's real consumer against the
//   context's trusted views and binding, and writes the checksum and status into the next slot.
// The context comes only from the bind launch: an address carried in a packet is data to be
// validated (the consumer compares the packet's binding with the trusted one), never followed.
#include <atomic>
#include <cstdint>
#include <cstring>

#include "cann_context.hpp"
#include "simpler/wire/consume.hpp"
#include "simpler/wire/transport.hpp"

namespace {
std::atomic<probe::CannProbeContext*> g_context{nullptr};
}  // namespace

extern "C" __attribute__((visibility("default"))) std::uint32_t cann_probe_bind_context(void* args) {
    if (args == nullptr) return 1;
    probe::CannBindArgs bind{};
    std::memcpy(&bind, args, sizeof bind);
    if (bind.context_addr == 0) return 2;
    g_context.store(reinterpret_cast<probe::CannProbeContext*>(bind.context_addr), std::memory_order_release);
    return 0;
}

extern "C" __attribute__((visibility("default"))) std::uint32_t simpler_aicpu_kernel_exec(void* block) {
    using namespace simpler;
    probe::CannProbeContext* ctx = g_context.load(std::memory_order_acquire);
    if (ctx == nullptr) return 10;  // no bind launch ran on this device
    if (block == nullptr) return 1;
    std::uint64_t packet_bytes = 0;
    std::memcpy(&packet_bytes, block, sizeof packet_bytes);
    if (packet_bytes > kMaxTmrPacketBytes) return 2;
    const ByteSpan packet(static_cast<const std::uint8_t*>(block) + kTmrBlockPrefixBytes,
                          static_cast<std::size_t>(packet_bytes));
    for (std::uint64_t spins = 0; ctx->gate == 0; ++spins) {
        if (spins >= ctx->gate_spin_limit) {
            ctx->gate_timed_out = 1;
            return 4;
        }
    }
    const std::uint32_t k = ctx->next_slot++;
    if (k >= probe::kSlots) return 5;
    InvocationHeader h{};
    probe::ResultSlot r;
    static EntryArgsStorage storage;  // AICPU kernels of one stream run one at a time
    InvocationStatus s = InvocationStatus::InvalidSize;
    if (packet.read_at(0, &h)) {
        s = InvocationStatus::StaleCallable;
        for (std::uint32_t i = 0; i < ctx->callable_count && i < 3; ++i)
            if (ctx->callables[i].callable_id == h.callable_id)
                s = consume_tmr_invocation(packet, ctx->callables[i], ctx->binding, &storage);
    }
    if (s == InvocationStatus::Ok)
        r.checksum = probe::invocation_checksum(storage.callable_id, storage.tensors,
                                                static_cast<std::size_t>(storage.tensor_count), storage.scalars,
                                                static_cast<std::size_t>(storage.scalar_count));
    r.status = static_cast<std::int32_t>(s);
    ctx->slots[k] = r;
    return 0;
}
