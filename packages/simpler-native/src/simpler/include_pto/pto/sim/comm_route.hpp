// Where a global address of a multi-chip kernel lives, for our backend's communication
// instructions (pto/sim/comm.hpp) and TLOAD/TSTORE. Part of our PTO-ISA CPU backend.
//
// A kernel of a multi-chip program reaches another rank's window by address, as on the device:
// rank p's copy of a window buffer starts at `base + p * stride` (simpler/comm_context.hpp). On
// the shared-memory path every rank's window is mapped in this process, so such an address is
// read and written directly. On the host path (CommPath::Host) only this rank's window is
// memory of this process (the rest of the range is reserved, never used): an access to a peer's
// window becomes one request to the rank's host process (CommContext::host) naming the peer,
// the window and the byte runs it touches, with the data packed in run order. Nothing here
// applies outside a multi-chip program (no comm context): every address is then this process's.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "pto/sim/types.hpp"
#include "simpler/comm_atomic.hpp"
#include "simpler/comm_context.hpp"
#include "simpler/kernel_abi.hpp"

namespace pto {
namespace sim {
namespace comm {

inline const ::simpler::CommContext* context() noexcept {
    const ::simpler::KernelContext* k = ::simpler::current_kernel_context();
    return k != nullptr ? k->comm : nullptr;
}

// A byte of a peer's window that is not memory of this process.
struct Remote {
    int window = -1;
    std::uint32_t peer = 0;
    std::uint64_t offset = 0;  // from the start of that rank's window
    std::uint64_t nbytes = 0;  // the window's data bytes
};

// Whether `p` lies in a peer's window on the host path (then `*out` says where).
inline bool remote(const void* p, Remote* out) noexcept {
    const ::simpler::CommContext* c = context();
    if (c == nullptr || c->path != ::simpler::CommPath::Host) return false;
    const std::uint64_t a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
    for (std::uint32_t i = 0; i < c->window_count; ++i) {
        const ::simpler::CommWindow& w = c->windows[i];
        if (a < w.base || w.stride == 0) continue;
        const std::uint64_t rel = a - w.base, peer = rel / w.stride;
        if (peer >= c->nranks) continue;
        if (peer == c->rank) return false;
        *out = Remote{static_cast<int>(i), static_cast<std::uint32_t>(peer), rel - peer * w.stride, w.nbytes};
        return true;
    }
    return false;
}

// The byte runs (within the peer's window) of one host request, coalesced as they are added,
// and the data packed in run order. Fails (reports) when memory runs out.
class HostRuns {
public:
    HostRuns() noexcept = default;
    HostRuns(const HostRuns&) = delete;
    HostRuns& operator=(const HostRuns&) = delete;
    ~HostRuns() {
        std::free(runs_);
        std::free(data_);
    }
    bool reserve(const char* op, std::uint64_t nbytes) noexcept {
        data_ = static_cast<unsigned char*>(std::malloc(nbytes == 0 ? 1 : nbytes));
        if (data_ == nullptr)
            ::simpler::report_kernel_error("%s: out of memory for a %llu-byte host request", op,
                                           static_cast<unsigned long long>(nbytes));
        return data_ != nullptr;
    }
    // One element of `size` bytes at byte `offset` of the window: where its packed bytes go.
    unsigned char* add(const char* op, std::uint64_t offset, std::uint64_t size) noexcept {
        if (count_ > 0 && runs_[count_ - 1].offset + runs_[count_ - 1].nbytes == offset) {
            runs_[count_ - 1].nbytes += size;
        } else {
            if (count_ == cap_) {
                const std::uint64_t cap = cap_ == 0 ? 16 : cap_ * 2;
                auto* grown = static_cast<::simpler::CommHostRun*>(std::realloc(runs_, cap * sizeof(*runs_)));
                if (grown == nullptr) {
                    ::simpler::report_kernel_error("%s: out of memory for a host request's runs", op);
                    return nullptr;
                }
                runs_ = grown;
                cap_ = cap;
            }
            runs_[count_++] = ::simpler::CommHostRun{offset, size};
        }
        unsigned char* at = data_ + packed_;
        packed_ += size;
        return at;
    }
    unsigned char* data() const noexcept { return data_; }
    bool call(const char* op, ::simpler::CommHostOp what, const Remote& at, std::uint32_t dtype = 0,
              std::int64_t value = 0) noexcept {
        const ::simpler::CommContext* c = context();
        if (c->host == nullptr || c->host->call == nullptr) {
            ::simpler::report_kernel_error("%s: the host comm path has no host functions", op);
            return false;
        }
        ::simpler::CommHostRequest r{what, at.peer, static_cast<std::uint32_t>(at.window), dtype, count_, runs_, data_,
                                     packed_, value};
        char err[512];
        err[0] = '\0';
        if (c->host->call(c->host->self, &r, err, sizeof err) != 0) {
            err[sizeof err - 1] = '\0';
            ::simpler::report_kernel_error("%s: rank %u's request to rank %u failed: %s", op, c->rank, at.peer,
                                           err[0] ? err : "no message");
            return false;
        }
        return true;
    }

private:
    ::simpler::CommHostRun* runs_ = nullptr;
    std::uint64_t count_ = 0, cap_ = 0, packed_ = 0;
    unsigned char* data_ = nullptr;
};

// Arithmetic on elements: 16-bit floats compute in float and round once.
template <class T>
using compute_t = std::conditional_t<std::is_arithmetic<T>::value, T, float>;
template <class T>
inline compute_t<T> widen(T v) noexcept {
    return static_cast<compute_t<T>>(v);
}
template <class T>
inline T narrow(compute_t<T> v) noexcept {
    return static_cast<T>(v);
}

// The simpler DataType code of T (host requests name it for atomic adds).
template <class T>
constexpr std::uint32_t dtype_code() noexcept {
    using D = ::simpler::DataType;
    if constexpr (std::is_same<T, float>::value) return static_cast<std::uint32_t>(D::FLOAT32);
    else if constexpr (std::is_same<T, half>::value) return static_cast<std::uint32_t>(D::FLOAT16);
    else if constexpr (std::is_same<T, bfloat16_t>::value) return static_cast<std::uint32_t>(D::BFLOAT16);
    else if constexpr (std::is_same<T, std::int8_t>::value) return static_cast<std::uint32_t>(D::INT8);
    else if constexpr (std::is_same<T, std::int16_t>::value) return static_cast<std::uint32_t>(D::INT16);
    else if constexpr (std::is_same<T, std::int32_t>::value) return static_cast<std::uint32_t>(D::INT32);
    else if constexpr (std::is_same<T, std::int64_t>::value) return static_cast<std::uint32_t>(D::INT64);
    else if constexpr (std::is_same<T, std::uint8_t>::value) return static_cast<std::uint32_t>(D::UINT8);
    else if constexpr (std::is_same<T, std::uint16_t>::value) return static_cast<std::uint32_t>(D::UINT16);
    else if constexpr (std::is_same<T, std::uint32_t>::value) return static_cast<std::uint32_t>(D::UINT32);
    else if constexpr (std::is_same<T, std::uint64_t>::value) return static_cast<std::uint32_t>(D::UINT64);
    else return 0;
}

// *p += v atomically: the one add of window memory (simpler/comm_atomic.hpp), which the rank
// process also uses for its peers' host-path requests.
using ::simpler::atomic_add;

// f(flat index, element pointer) for every element of a 5-D global tensor, row-major order.
template <class G, class F>
inline void for_each(G& g, F f) noexcept {
    std::int64_t d[5], s[5];
    for (int i = 0; i < 5; ++i) {
        d[i] = g.GetShape(i);
        s[i] = g.GetStride(i);
    }
    std::uint64_t flat = 0;
    for (std::int64_t i0 = 0; i0 < d[0]; ++i0)
        for (std::int64_t i1 = 0; i1 < d[1]; ++i1)
            for (std::int64_t i2 = 0; i2 < d[2]; ++i2)
                for (std::int64_t i3 = 0; i3 < d[3]; ++i3)
                    for (std::int64_t i4 = 0; i4 < d[4]; ++i4)
                        f(flat++, g.data() + i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3] + i4 * s[4]);
}

template <class G>
inline std::uint64_t numel(G& g) noexcept {
    std::uint64_t n = 1;
    for (int i = 0; i < 5; ++i) n *= static_cast<std::uint64_t>(g.GetShape(i) < 0 ? 0 : g.GetShape(i));
    return n;
}

// The host-path location of `g` when it lies in a peer's window (false: this process's memory).
// Every element must lie in that same window, else reported (*bad).
template <class G>
inline bool remote_tensor(const char* op, G& g, Remote* at, bool* bad) noexcept {
    *bad = false;
    if (numel(g) == 0 || !remote(g.data(), at)) return false;
    using T = typename G::DType;
    const std::uint64_t a0 = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(g.data()));
    bool ok = true;
    for_each(g, [&](std::uint64_t, T* p) {
        const std::uint64_t a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
        const std::int64_t off = static_cast<std::int64_t>(at->offset) + static_cast<std::int64_t>(a - a0);
        if (off < 0 || static_cast<std::uint64_t>(off) + sizeof(T) > at->nbytes) ok = false;
    });
    if (!ok) {
        ::simpler::report_kernel_error("%s: a global tensor in rank %u's window %d leaves the window's %llu bytes", op,
                                       at->peer, at->window, static_cast<unsigned long long>(at->nbytes));
        *bad = true;
    }
    return true;
}

// The elements of `g` (row-major) packed into `out` (numel * sizeof(T) bytes). False after
// reporting.
template <class G>
inline bool read(const char* op, G& g, unsigned char* out) noexcept {
    using T = typename G::DType;
    Remote at;
    bool bad = false;
    if (!remote_tensor(op, g, &at, &bad)) {
        for_each(g, [&](std::uint64_t i, T* p) { std::memcpy(out + i * sizeof(T), p, sizeof(T)); });
        return true;
    }
    if (bad) return false;
    HostRuns runs;
    if (!runs.reserve(op, numel(g) * sizeof(T))) return false;
    const std::uint64_t a0 = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(g.data()));
    bool ok = true;
    for_each(g, [&](std::uint64_t, T* p) {
        const std::uint64_t a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
        if (ok && runs.add(op, at.offset + (a - a0), sizeof(T)) == nullptr) ok = false;
    });
    if (!ok || !runs.call(op, ::simpler::CommHostOp::Read, at)) return false;
    std::memcpy(out, runs.data(), numel(g) * sizeof(T));
    return true;
}

// The elements of `g` (row-major) = the packed `in`, or += it atomically (`add`). False after
// reporting.
template <class G>
inline bool write(const char* op, G& g, const unsigned char* in, bool add) noexcept {
    using T = typename G::DType;
    Remote at;
    bool bad = false;
    if (!remote_tensor(op, g, &at, &bad)) {
        for_each(g, [&](std::uint64_t i, T* p) {
            T v;
            std::memcpy(&v, in + i * sizeof(T), sizeof(T));
            if (add)
                atomic_add(p, v);
            else
                *p = v;
        });
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        return true;
    }
    if (bad) return false;
    HostRuns runs;
    if (!runs.reserve(op, numel(g) * sizeof(T))) return false;
    const std::uint64_t a0 = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(g.data()));
    bool ok = true;
    for_each(g, [&](std::uint64_t i, T* p) {
        const std::uint64_t a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
        unsigned char* to = ok ? runs.add(op, at.offset + (a - a0), sizeof(T)) : nullptr;
        if (to == nullptr)
            ok = false;
        else
            std::memcpy(to, in + i * sizeof(T), sizeof(T));
    });
    return ok && runs.call(op, add ? ::simpler::CommHostOp::AtomicAdd : ::simpler::CommHostOp::Write, at,
                           dtype_code<T>());
}

inline std::int64_t now_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

// The i-th wait of a poll loop: spins, then yields, then sleeps from 1 us doubling to 1 ms.
inline void backoff(std::uint64_t i) noexcept {
    if (i < 4096) {
        relax();
    } else if (i < 4096 + 64) {
        sched_yield();
    } else {
        const std::uint64_t k = i - 4096 - 64;
        const long ns = k >= 10 ? 1000000L : 1000L << k;
        timespec ts{0, ns};
        nanosleep(&ts, nullptr);
    }
}

}  // namespace comm
}  // namespace sim
}  // namespace pto
