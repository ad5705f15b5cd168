// Helpers shared by the C++ tests of the kernel-side code (math/ and pto/): the kernel error
// channel and deterministic random numbers.
#pragma once

#include <cstdint>
#include <string>

#include "simpler/kernel_abi.hpp"

namespace kerneltest {

// Take the pending kernel error ("" if none), clearing the slot as the runtime does.
inline std::string take_error() {
    simpler::KernelErrorSlot& slot = simpler::kernel_error_slot();
    if (!slot.set) return std::string();
    slot.set = false;
    return std::string(slot.message);
}

// Deterministic pseudo-random numbers (xorshift), so failures reproduce.
struct Rng {
    std::uint64_t s = 0x9e3779b97f4a7c15ull;
    std::uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) / 16777216.0f; }
    int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
};

}  // namespace kerneltest
