// The receiving side of the host comm path (CommPath::Host): a rank process applying one request
// of a peer's kernel (simpler/comm_context.hpp, CommHostRequest) to its own private window.
#pragma once

#include <cstdint>

#include "simpler/comm_context.hpp"

namespace simpler::chip {

// Applies `r` to this rank's window of `window_nbytes` bytes at `window`: Read copies the runs'
// bytes into r.data, Write copies r.data into the runs, AtomicAdd adds each element (r.dtype)
// with simpler::atomic_add, NotifyAdd/NotifySet update the INT32 cell with a 32-bit atomic. These
// are the operations this rank's own kernels use on the same memory (they reach their own window
// directly, not through their host process), so neither side loses the other's updates.
//
// Checks the whole request first: a known op; runs inside the window adding up to r.nbytes (for a
// notify, one 4-byte run); elements aligned to their size for the atomics; a dtype an atomic add
// supports. Runs are applied in their order (a kernel sends its elements' row-major order). On rejection it writes why to
// error[0, error_len), touches nothing and returns nonzero; 0 once applied.
int apply_host_request(const CommHostRequest& r, unsigned char* window, std::uint64_t window_nbytes, char* error,
                       std::uint64_t error_len) noexcept;

}  // namespace simpler::chip
