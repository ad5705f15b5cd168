// cann-probe host part: proves the copy-on-enqueue contract of the TMR snapshot transport end
// to end with simpler's real encoder (TmrEncodingCache), adapter (enqueue_tmr_invocation_aicpu)
// and consumer (consume_tmr_invocation, in the device part).
//
// Run: publish three callables, submit 24 packets across them, and right after each enqueue
// overwrite the host block with 0xa5 and free it. Two negative controls (a stale binding and a
// truncated packet) go to the device as raw blocks, past the adapter's revalidation, so the
// device must reject them itself. Then release the gate, wait, and compare every result slot
// with what the host computed before enqueue.
//
// Usage: cann_probe [--lose-gate] [--gate-timeout-ms N]
//   --lose-gate  never release the gate: the run must FAIL (timeout), never hang.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe_common.hpp"
#include "probe_device.hpp"
#include "simpler/wire/codec.hpp"
#include "simpler/wire/encoding_cache.hpp"
#include "simpler/wire/transport.hpp"

using namespace simpler;

namespace {

struct Expected {
    std::uint64_t checksum;
    std::int32_t status;
    const char* what;
};

ChipTensor make_tensor(std::uint64_t addr, std::uint32_t rows, std::uint32_t cols) {
    ChipTensor t;
    std::memset(&t, 0, sizeof t);
    t.buffer.addr = addr;
    t.buffer.size = std::uint64_t{rows} * cols * 4;
    t.dtype = static_cast<std::uint8_t>(DataType::FLOAT32);
    t.address_space = static_cast<std::uint8_t>(AddressSpace::DEVICE);
    t.ndims = 2;
    t.shapes[0] = rows;
    t.shapes[1] = cols;
    t.strides[0] = cols;
    t.strides[1] = 1;
    t.owner_task_id = 0x5151;  // bookkeeping the encoder must drop
    return t;
}

int fail(const std::string& msg) {
    std::printf("FAIL cann-probe: %s\n", msg.c_str());
    return 1;
}

}  // namespace

namespace {

int run(int argc, char** argv) {
    bool lose_gate = false;
    long gate_timeout_ms = 5000;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--lose-gate") lose_gate = true;
        else if (a == "--gate-timeout-ms" && i + 1 < argc) gate_timeout_ms = std::strtol(argv[++i], nullptr, 10);
        else return fail("unknown argument '" + a + "' (expected --lose-gate, --gate-timeout-ms N)");
    }
    std::unique_ptr<probe::ProbeDevice> device = probe::make_device(std::chrono::milliseconds(gate_timeout_ms));

    // Trusted metadata, published before any packet (test-only values: this probe is the owner).
    const TmrBindingRef binding = device->publish(probe::kCallables, 3, /*context_generation=*/9);

    std::vector<Expected> expected;
    TmrEncodingCache caches[3];
    for (std::size_t k = 0; k < probe::kPackets; ++k) {
        const PreparedInvocationView& view = probe::kCallables[k % 3];
        std::vector<ChipTensor> tensors;
        for (std::int32_t i = 0; i < view.tensor_count; ++i)
            tensors.push_back(make_tensor(0x100000 + k * 0x100000 + static_cast<std::uint64_t>(i) * 0x1000, 16, 16));
        std::vector<std::uint64_t> scalars;
        for (std::int32_t i = 0; i < view.scalar_count; ++i) scalars.push_back(0xC0DE0000ull + k * 16 + static_cast<std::uint64_t>(i));

        // The checksum of what the device must see, from the host inputs before enqueue.
        std::vector<ChipTensor> canonical(tensors.size());
        for (std::size_t i = 0; i < tensors.size(); ++i)
            if (encode_chip_tensor(tensors[i], &canonical[i]) != InvocationStatus::Ok)
                return fail("packet " + std::to_string(k) + ": tensor " + std::to_string(i) + " is invalid");
        expected.push_back({probe::invocation_checksum(view.callable_id, canonical.data(), canonical.size(),
                                                       scalars.data(), scalars.size()),
                            static_cast<std::int32_t>(InvocationStatus::Ok), "packet"});

        // The submission transaction: encode a private candidate, enqueue, commit, release.
        auto candidate = std::make_unique<TmrCandidate>();
        const InvocationStatus es = caches[k % 3].encode(view, binding, tensors.data(), tensors.size(), scalars.data(),
                                                         scalars.size(), candidate.get());
        if (es != InvocationStatus::Ok) return fail("packet " + std::to_string(k) + ": encode " + status_name(es));
        const EnqueueOutcome r = enqueue_tmr_invocation_aicpu(device->runner(), *candidate, view, binding);
        if (!r.ok())
            return fail("packet " + std::to_string(k) + ": enqueue " + status_name(r.status) + " rc " +
                        std::to_string(r.launch_rc));
        caches[k % 3].commit(*candidate);
        candidate->overwrite(0xa5);  // copy-on-enqueue: the host may scribble over its block...
        candidate.reset();           // ...and free it, before the device has read anything
    }

    // Negative controls, launched raw so that only the device side can reject them.
    {
        const PreparedInvocationView& view = probe::kCallables[1];
        ChipTensor t = make_tensor(0x900000, 8, 8);
        const std::uint64_t s = 1;
        TmrEncodingCache cache;
        TmrCandidate stale;
        const TmrBindingRef old_binding{binding.device_binding_addr, binding.context_generation - 1};
        if (cache.encode(view, old_binding, &t, 1, &s, 1, &stale) != InvocationStatus::Ok) return fail("control encode");
        if (device->runner().launch_aicpu_payload(stale.block(), stale.block_bytes()) != 0) return fail("control launch");
        expected.push_back({probe::kSentinelChecksum, static_cast<std::int32_t>(InvocationStatus::InvalidBinding),
                            "stale-binding control"});
        TmrCandidate whole;
        if (cache.encode(view, binding, &t, 1, &s, 1, &whole) != InvocationStatus::Ok) return fail("control encode");
        std::vector<std::uint8_t> truncated(whole.block(), whole.block() + whole.block_bytes() - 8);
        const std::uint64_t short_bytes = truncated.size() - kTmrBlockPrefixBytes;
        std::memcpy(truncated.data(), &short_bytes, sizeof short_bytes);
        if (device->runner().launch_aicpu_payload(truncated.data(), truncated.size()) != 0) return fail("control launch");
        expected.push_back({probe::kSentinelChecksum, static_cast<std::int32_t>(InvocationStatus::InvalidSize),
                            "truncated-packet control"});
    }

    if (!lose_gate) device->release_gate();
    const bool done = device->wait_done(probe::kSlots, std::chrono::milliseconds(gate_timeout_ms + 5000));
    if (!done) {
        return fail(std::string(device->gate_timed_out() ? "device gate timed out before it was released"
                                                         : "device did not consume every block in time") +
                    " (variant " + device->variant() + ")");
    }
    const std::vector<probe::ResultSlot> got = device->results();
    std::size_t rejected = 0;
    for (std::size_t k = 0; k < probe::kSlots; ++k) {
        const Expected& e = expected[k];
        const probe::ResultSlot& g = got[k];
        if (g.status == probe::kSentinelStatus)
            return fail("slot " + std::to_string(k) + " (" + e.what + "): sentinel left, the device never wrote it");
        if (g.status != e.status || g.checksum != e.checksum) {
            char buf[200];
            std::snprintf(buf, sizeof buf, "slot %zu (%s): status %s checksum %016llx, expected %s %016llx", k, e.what,
                          status_name(static_cast<InvocationStatus>(g.status)), static_cast<unsigned long long>(g.checksum),
                          status_name(static_cast<InvocationStatus>(e.status)), static_cast<unsigned long long>(e.checksum));
            return fail(buf);
        }
        if (e.status != static_cast<std::int32_t>(InvocationStatus::Ok)) {
            std::printf("control %s: rejected by the device side as %s\n", e.what, status_name(static_cast<InvocationStatus>(g.status)));
            ++rejected;
        }
    }
    std::printf("PASS cann-probe variant=%s packets=%zu callables=3 (0/0, 1/1, %d/0) overwritten+freed=%zu "
                "controls_rejected=%zu/%zu\n",
                device->variant(), probe::kPackets, kMaxTensors, probe::kPackets, rejected, probe::kNegativeControls);
    return 0;
}

}  // namespace

// A device that fails to set up, upload or download (a runtime error code) throws; report it as
// a FAIL line and a nonzero exit like every other failure.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        return fail(e.what());
    }
}
