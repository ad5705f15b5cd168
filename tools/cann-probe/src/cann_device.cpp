// CANN variant, device part (UNVERIFIED): the AICPU entry that receives the copied block, waits
// on the gate, then admits, decodes and consumes the packet with simpler's real consumer and
// writes the checksum and status into the next result slot.
#include <cstdint>
#include <cstring>

#include "cann_context.hpp"
#include "simpler/wire/consume.hpp"
#include "simpler/wire/transport.hpp"

extern "C" __attribute__((visibility("default"))) std::uint32_t simpler_aicpu_kernel_exec(void* block) {
    using namespace simpler;
    if (block == nullptr) return 1;
    std::uint64_t packet_bytes = 0;
    std::memcpy(&packet_bytes, block, sizeof packet_bytes);
    if (packet_bytes > kMaxTmrPacketBytes) return 2;
    const ByteSpan packet(static_cast<const std::uint8_t*>(block) + kTmrBlockPrefixBytes,
                          static_cast<std::size_t>(packet_bytes));
    TmrBindingRef carried{};
    if (!packet.read_at(kTmrBindingOffset, &carried) || carried.device_binding_addr == 0) return 3;
    auto* ctx = reinterpret_cast<probe::CannProbeContext*>(carried.device_binding_addr);
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
        for (std::uint32_t i = 0; i < ctx->callable_count; ++i)
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
