// The probe's device side as the host part sees it. Variants: sim_device.cpp (a gated consumer
// thread in this process, the simulated AICPU) and cann_host.cpp (CANN; unverified).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "probe_common.hpp"
#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/transport.hpp"

namespace probe {

class ProbeDevice {
  public:
    virtual ~ProbeDevice() = default;
    virtual const char* variant() const noexcept = 0;
    // Publish the trusted callables (the device looks packets up by callable id) for a context of
    // this generation; returns the trusted binding. The device owns the binding address (the
    // execution-resource provider's job), so every packet must name the binding returned here.
    virtual simpler::TmrBindingRef publish(const simpler::PreparedInvocationView* views, std::size_t n,
                                           std::uint64_t context_generation) = 0;
    // The copy-on-enqueue transport into the device.
    virtual simpler::AicpuPayloadRunner& runner() = 0;
    // Let the device start reading; until then it reads nothing.
    virtual void release_gate() = 0;
    // Wait until `expected` blocks were consumed; false on timeout (or if the gate timed out).
    virtual bool wait_done(std::size_t expected, std::chrono::milliseconds timeout) = 0;
    virtual bool gate_timed_out() const = 0;
    virtual std::vector<ResultSlot> results() const = 0;
};

// gate_timeout: how long the device waits for release_gate() before giving up without reading.
std::unique_ptr<ProbeDevice> make_device(std::chrono::milliseconds gate_timeout);

}  // namespace probe
