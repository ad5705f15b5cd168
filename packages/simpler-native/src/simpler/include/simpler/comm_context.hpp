// CommContext: what a kernel of a multi-chip program needs to reach other ranks' windows.
//
// Consumers: the cross-rank operations of the tile library (simpler/tile/comm.hpp), which
// find it through the kernel context (KernelContext::comm, simpler/kernel_abi.hpp); the
// simulated chip, which puts the process's context there before every kernel entry; and the
// binding that a rank process sets it through (simpler.comm.set_context). It is part of the
// kernel ABI: a kernel binary reads it by these offsets.
//
// A window buffer is one block of memory per rank, all of one size. On the shared-memory path
// (CommPath::SharedMemory) every rank maps every rank's window of a buffer, laid out back to
// back: rank r's window starts at `base + r * stride` in this process. A tensor lying in this
// rank's window is found in the table by its address, and the same element of peer p lies
// `(p - rank) * stride` bytes away. Any other path (ranks that do not share memory) would leave
// the addresses to the rank's host process: `host` names the functions a kernel calls instead
// (none exist yet; the tile library refuses such a context).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace simpler {

enum class CommPath : std::uint32_t {
    SharedMemory = 0,  // peers' windows are mapped here: direct loads, stores and atomics
    Host = 1,          // peers are reached through the rank's host process (reserved)
};

inline constexpr std::uint32_t kMaxCommWindows = 64;   // window buffers of one program
inline constexpr std::uint32_t kMaxCommRanks = 4096;   // ranks of one program

// One window buffer as this process sees it.
struct CommWindow {
    std::uint64_t base;    // address of rank 0's window in this process
    std::uint64_t stride;  // bytes from one rank's window to the next
    std::uint64_t nbytes;  // bytes of one rank's window that hold data (<= stride)
};

struct CommContext {
    std::uint32_t rank;             // this rank, 0 <= rank < nranks
    std::uint32_t nranks;           // ranks of the program
    CommPath path;                  // how peers' windows are reached
    std::uint32_t window_count;     // entries of `windows`, <= kMaxCommWindows
    std::int64_t wait_timeout_ns;   // how long one wait may take before it fails the task (> 0)
    const CommWindow* windows;      // window_count entries
    const void* host;               // CommPath::Host: the host process's functions (reserved)
};

static_assert(sizeof(CommWindow) == 24, "kernel ABI changed: CommWindow size");
static_assert(offsetof(CommWindow, base) == 0, "kernel ABI changed: CommWindow.base");
static_assert(offsetof(CommWindow, stride) == 8, "kernel ABI changed: CommWindow.stride");
static_assert(offsetof(CommWindow, nbytes) == 16, "kernel ABI changed: CommWindow.nbytes");
static_assert(std::is_trivially_copyable_v<CommWindow>, "kernel ABI changed: CommWindow must be plain data");
static_assert(sizeof(CommContext) == 40, "kernel ABI changed: CommContext size");
static_assert(offsetof(CommContext, rank) == 0, "kernel ABI changed: CommContext.rank");
static_assert(offsetof(CommContext, nranks) == 4, "kernel ABI changed: CommContext.nranks");
static_assert(offsetof(CommContext, path) == 8, "kernel ABI changed: CommContext.path");
static_assert(offsetof(CommContext, window_count) == 12, "kernel ABI changed: CommContext.window_count");
static_assert(offsetof(CommContext, wait_timeout_ns) == 16, "kernel ABI changed: CommContext.wait_timeout_ns");
static_assert(offsetof(CommContext, windows) == 24, "kernel ABI changed: CommContext.windows");
static_assert(offsetof(CommContext, host) == 32, "kernel ABI changed: CommContext.host");
static_assert(std::is_trivially_copyable_v<CommContext>, "kernel ABI changed: CommContext must be plain data");
static_assert(std::is_standard_layout_v<CommContext>, "kernel ABI changed: CommContext must be standard layout");

// The index of the window holding byte address `addr` in this rank's part, or -1.
inline int comm_window_of(const CommContext& c, std::uint64_t addr) noexcept {
    for (std::uint32_t i = 0; i < c.window_count; ++i) {
        const CommWindow& w = c.windows[i];
        const std::uint64_t mine = w.base + static_cast<std::uint64_t>(c.rank) * w.stride;
        if (addr >= mine && addr - mine < w.stride) return static_cast<int>(i);
    }
    return -1;
}

}  // namespace simpler
