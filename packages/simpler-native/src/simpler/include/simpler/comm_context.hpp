// CommContext: what a kernel of a multi-chip program needs to reach other ranks' windows.
//
// Consumers: the kernel-side comm helpers (simpler/kernel_comm.hpp) and our PTO-ISA backend's
// communication instructions and TLOAD/TSTORE (pto/sim/comm_route.hpp), which find it through
// the kernel context (KernelContext::comm, simpler/kernel_abi.hpp); the
// simulated chip, which puts the process's context there before every kernel entry; and the
// binding that a rank process sets it through (simpler.comm.set_context). It is part of the
// kernel ABI: a kernel binary reads it by these offsets.
//
// A window buffer is one block of memory per rank, all of one size. On the shared-memory path
// (CommPath::SharedMemory) every rank maps every rank's window of a buffer, laid out back to
// back: rank r's window starts at `base + r * stride` in this process. A tensor lying in this
// rank's window is found in the table by its address, and the same element of peer p lies
// `(p - rank) * stride` bytes away. On the host path (CommPath::Host: ranks that do not share
// memory) the same table lays out the windows, but only this rank's window (at
// `base + rank * stride`) is memory of this process; every access to a window (a peer's or this
// rank's own, except `wait`, which reads its own cell) is a request to the rank's host process
// through `host` (CommHostOps), which carries it to the peer. A request names the peer, the
// window and byte runs within the peer's window (its rank-0-relative layout is never used).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace simpler {

enum class CommPath : std::uint32_t {
    SharedMemory = 0,  // peers' windows are mapped here: direct loads, stores and atomics
    Host = 1,          // peers are reached through the rank's host process (CommHostOps)
};

// What a host request does to the peer's window.
enum class CommHostOp : std::uint32_t {
    Read = 0,       // data <- the runs' bytes, in run order
    Write = 1,      // the runs' bytes <- data
    AtomicAdd = 2,  // each element of the runs += the element of data (dtype), atomically per element
    NotifyAdd = 3,  // the INT32 cell (one 4-byte run) += value
    NotifySet = 4,  // the INT32 cell = value
};

// A byte range of the peer's window: `offset` bytes from the start of that rank's window.
struct CommHostRun {
    std::uint64_t offset;
    std::uint64_t nbytes;
};

// One request of a kernel to its rank's host process. Requests of one rank are carried in the
// order they are made and each returns once the peer applied it (or failed), so a put followed
// by a notify is seen by the peer in that order.
struct CommHostRequest {
    CommHostOp op;
    std::uint32_t peer;            // 0 <= peer < nranks (this rank included)
    std::uint32_t window;          // index into CommContext::windows
    std::uint32_t dtype;           // simpler DataType of the elements (AtomicAdd)
    std::uint64_t run_count;       // entries of `runs`
    const CommHostRun* runs;       // in element order (adjacent ones coalesced), inside the window
    void* data;                    // nbytes bytes: filled by Read, read by Write/AtomicAdd
    std::uint64_t nbytes;          // sum of the runs' nbytes
    std::int64_t value;            // Notify*: the INT32 value
};

// The host process's side. `call` applies one request and returns 0, or returns nonzero with a
// NUL-terminated message in error[0, error_len). It may block (the peer is another process).
struct CommHostOps {
    void* self;
    int (*call)(void* self, const CommHostRequest* request, char* error, std::uint64_t error_len);
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
    const CommHostOps* host;        // CommPath::Host: the host process's side; null otherwise
};

static_assert(sizeof(CommWindow) == 24, "kernel ABI changed: CommWindow size");
static_assert(offsetof(CommWindow, base) == 0, "kernel ABI changed: CommWindow.base");
static_assert(offsetof(CommWindow, stride) == 8, "kernel ABI changed: CommWindow.stride");
static_assert(offsetof(CommWindow, nbytes) == 16, "kernel ABI changed: CommWindow.nbytes");
static_assert(std::is_trivially_copyable_v<CommWindow>, "kernel ABI changed: CommWindow must be plain data");
static_assert(sizeof(CommHostRun) == 16, "kernel ABI changed: CommHostRun size");
static_assert(offsetof(CommHostRun, offset) == 0, "kernel ABI changed: CommHostRun.offset");
static_assert(offsetof(CommHostRun, nbytes) == 8, "kernel ABI changed: CommHostRun.nbytes");
static_assert(sizeof(CommHostRequest) == 56, "kernel ABI changed: CommHostRequest size");
static_assert(offsetof(CommHostRequest, op) == 0, "kernel ABI changed: CommHostRequest.op");
static_assert(offsetof(CommHostRequest, peer) == 4, "kernel ABI changed: CommHostRequest.peer");
static_assert(offsetof(CommHostRequest, window) == 8, "kernel ABI changed: CommHostRequest.window");
static_assert(offsetof(CommHostRequest, dtype) == 12, "kernel ABI changed: CommHostRequest.dtype");
static_assert(offsetof(CommHostRequest, run_count) == 16, "kernel ABI changed: CommHostRequest.run_count");
static_assert(offsetof(CommHostRequest, runs) == 24, "kernel ABI changed: CommHostRequest.runs");
static_assert(offsetof(CommHostRequest, data) == 32, "kernel ABI changed: CommHostRequest.data");
static_assert(offsetof(CommHostRequest, nbytes) == 40, "kernel ABI changed: CommHostRequest.nbytes");
static_assert(offsetof(CommHostRequest, value) == 48, "kernel ABI changed: CommHostRequest.value");
static_assert(std::is_trivially_copyable_v<CommHostRequest>, "kernel ABI changed: CommHostRequest must be plain data");
static_assert(sizeof(CommHostOps) == 16, "kernel ABI changed: CommHostOps size");
static_assert(offsetof(CommHostOps, self) == 0, "kernel ABI changed: CommHostOps.self");
static_assert(offsetof(CommHostOps, call) == 8, "kernel ABI changed: CommHostOps.call");
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
