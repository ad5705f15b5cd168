// The comm context of this process: the rank a multi-chip program's rank process runs as, and
// the window buffers its kernels reach (simpler/comm_context.hpp). One chip per rank process,
// so the context is the process's; the chip hands it to every kernel through KernelContext.
#pragma once

#include <cstdint>
#include <vector>

#include "simpler/comm_context.hpp"

namespace simpler::chip {

// Checks every field (std::invalid_argument naming it) and makes it the context of every kernel
// entered from now on. `host` is required on CommPath::Host (and must outlive every kernel that
// may use it) and must be null on CommPath::SharedMemory. Set it between runs: a kernel already running keeps the one it was
// given (earlier contexts stay valid until the process exits).
void set_comm_context(std::uint32_t rank, std::uint32_t nranks, CommPath path, const std::vector<CommWindow>& windows,
                      double wait_timeout_s, const CommHostOps* host = nullptr);
// Kernels entered from now on get no comm context (their cross-rank operations fail).
void clear_comm_context() noexcept;
// The current context, or null.
const CommContext* comm_context() noexcept;

}  // namespace simpler::chip
