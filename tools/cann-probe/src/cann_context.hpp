// Device-resident state of the CANN variant (UNVERIFIED: never built or run on hardware here).
// The trusted binding's device_binding_addr is the device address of this context, so the one
// pointer the AICPU entry receives (the copied block) is enough to find it.
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

}  // namespace probe
