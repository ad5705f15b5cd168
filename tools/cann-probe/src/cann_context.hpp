// Device-resident state of the CANN variant (UNVERIFIED: compiled in CI, never run on hardware).
// The host allocates it in device memory and hands its address to the device part once, through
// the trusted bind launch (cann_probe_bind_context); the packets carry a binding that the
// consumer compares with `binding`, but the device never follows an address read from a packet.
#pragma once

#include <cstdint>

#include "probe_common.hpp"
#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/prepared_view.hpp"

namespace probe {

struct CannProbeContext {
    volatile std::uint32_t gate;        // host writes 1 to let the device read packets
    std::uint32_t gate_timed_out;       // device writes 1 when it gave up waiting
    std::uint64_t gate_spin_limit;      // polls before giving up (the device has no wall clock here)
    std::uint32_t next_slot;            // blocks consumed so far (AICPU kernels run in stream order)
    std::uint32_t callable_count;
    simpler::PreparedInvocationView callables[3];
    simpler::TmrBindingRef binding;
    ResultSlot slots[kSlots];
};

// The argument block of the bind launch: the one place the device learns its context.
struct CannBindArgs {
    std::uint64_t context_addr;
};

inline constexpr const char* kBindEntry = "cann_probe_bind_context";
inline constexpr const char* kExecEntry = "simpler_aicpu_kernel_exec";

}  // namespace probe
