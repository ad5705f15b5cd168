// Cross-rank operations of multi-chip programs: a kernel reading, writing and signalling the
// windows of other ranks (pld.tile.remote_load/remote_store, pld.tensor.put/get/barrier,
// pld.system.notify/wait in pypto). API reference: docs/tile-interface.md, "Cross-rank
// operations".
//
// A window is a tensor lying in this rank's part of a window buffer of the process's comm
// context (simpler/comm_context.hpp, reached through KernelContext::comm). The same tensor of
// peer p is this descriptor rebased onto p's window: same shape, strides and offset within the
// window, bounds-checked against the window's bytes. On the shared-memory path the peer's
// window is mapped in this process, so a remote access is a plain load or store and a signal is
// an atomic on the peer's int32 cell (lock-free atomics work across processes sharing a
// mapping). On the host path (CommPath::Host) only this rank's window is memory of this process:
// every operation except `wait` becomes one request to the rank's host process
// (CommContext::host): the byte runs the access touches in the target rank's window, with the
// data packed in run order (comm_detail::HostRuns). `wait` reads this rank's own cell, which the
// host process updates when a peer's notify arrives. Everything is reported through simpler::report_kernel_error ("tile <op>: ...") and
// the op does nothing, as for the other tile ops.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "simpler/comm_context.hpp"
#include "simpler/kernel_abi.hpp"
#include "simpler/tile/dtype.hpp"
#include "simpler/tile/memory.hpp"
#include "simpler/tile/tile.hpp"

namespace simpler {
namespace tile {

// How notify changes the peer's signal cell.
enum class NotifyOp : std::uint8_t { AtomicAdd = 0, Set = 1 };
// What wait waits for: the local cell == expected, or >= expected.
enum class WaitCmp : std::uint8_t { Eq = 0, Ge = 1 };
// How remote_store / put combine with the destination: overwrite, or add atomically.
enum class AtomicType : std::uint8_t { None = 0, Add = 1 };

namespace comm_detail {

inline const CommContext* context(const char* op) noexcept {
    const KernelContext* k = current_kernel_context();
    const CommContext* c = k != nullptr ? k->comm : nullptr;
    if (c == nullptr) {
        report_kernel_error("tile %s: no comm context: cross-rank operations run in the ranks of a multi-chip "
                            "program (a @pl.jit.host program's per-device launches)",
                            op);
        return nullptr;
    }
    if (c->path != CommPath::SharedMemory && (c->path != CommPath::Host || c->host == nullptr || c->host->call == nullptr)) {
        report_kernel_error("tile %s: comm path %u is not usable (shared memory, or host with its functions)", op,
                            static_cast<unsigned>(c->path));
        return nullptr;
    }
    return c;
}

inline bool on_host(const CommContext& c) noexcept { return c.path == CommPath::Host; }

// The byte runs (within the target window) of a host request, coalesced as they are added, and
// the data packed in run order. Fails (reports) when memory runs out.
class HostRuns {
public:
    HostRuns() noexcept = default;
    HostRuns(const HostRuns&) = delete;
    HostRuns& operator=(const HostRuns&) = delete;
    ~HostRuns() {
        std::free(runs_);
        std::free(data_);
    }
    // Reserve room for `nbytes` of packed data (once, before adding).
    bool reserve(const char* op, std::uint64_t nbytes) noexcept {
        data_ = static_cast<unsigned char*>(std::malloc(nbytes == 0 ? 1 : nbytes));
        if (data_ == nullptr) {
            report_kernel_error("tile %s: out of memory for a %llu-byte host request", op,
                                static_cast<unsigned long long>(nbytes));
            return false;
        }
        return true;
    }
    // One element of `size` bytes at byte `offset` of the window; returns where its packed bytes go.
    unsigned char* add(const char* op, std::uint64_t offset, std::uint64_t size) noexcept {
        if (count_ > 0 && runs_[count_ - 1].offset + runs_[count_ - 1].nbytes == offset) {
            runs_[count_ - 1].nbytes += size;
        } else {
            if (count_ == cap_) {
                const std::uint64_t cap = cap_ == 0 ? 16 : cap_ * 2;
                auto* grown = static_cast<CommHostRun*>(std::realloc(runs_, cap * sizeof(CommHostRun)));
                if (grown == nullptr) {
                    report_kernel_error("tile %s: out of memory for a host request's runs", op);
                    return nullptr;
                }
                runs_ = grown;
                cap_ = cap;
            }
            runs_[count_++] = CommHostRun{offset, size};
        }
        unsigned char* at = data_ + packed_;
        packed_ += size;
        return at;
    }
    unsigned char* data() const noexcept { return data_; }
    // Send the request (op, peer, window) with these runs to the host process.
    bool call(const char* op, const CommContext& c, CommHostOp what, std::int64_t peer, int window,
              std::uint32_t dtype = 0, std::int64_t value = 0) noexcept {
        CommHostRequest r{what, static_cast<std::uint32_t>(peer), static_cast<std::uint32_t>(window), dtype, count_,
                          runs_, data_, packed_, value};
        char err[512];
        err[0] = '\0';
        if (c.host->call(c.host->self, &r, err, sizeof err) != 0) {
            err[sizeof err - 1] = '\0';
            report_kernel_error("tile %s: rank %u's request to rank %lld failed: %s", op, c.rank,
                                static_cast<long long>(peer), err[0] ? err : "no message");
            return false;
        }
        return true;
    }

private:
    CommHostRun* runs_ = nullptr;
    std::uint64_t count_ = 0, cap_ = 0, packed_ = 0;
    unsigned char* data_ = nullptr;
};

inline std::uint64_t elem_bytes(const ChipTensor& t) noexcept {
    return is_known_dtype(t.dtype) ? (kDataTypeBits[t.dtype] + 7) / 8 : 0;
}

// `t` (a window of this rank) rebased onto rank `peer`'s window of the same buffer.
inline bool peer_view(const char* op, const CommContext& c, const ChipTensor& t, std::int64_t peer,
                      ChipTensor* out, int* window = nullptr) noexcept {
    if (peer < 0 || peer >= static_cast<std::int64_t>(c.nranks)) {
        report_kernel_error("tile %s: peer %lld outside the ranks [0, %u)", op, static_cast<long long>(peer), c.nranks);
        return false;
    }
    const std::uint64_t esize = elem_bytes(t);
    std::uint64_t first = 0;
    if (esize == 0 || __builtin_mul_overflow(t.start_offset, esize, &first) ||
        __builtin_add_overflow(t.buffer.addr, first, &first)) {
        report_kernel_error("tile %s: invalid tensor descriptor (dtype %u)", op, static_cast<unsigned>(t.dtype));
        return false;
    }
    const int wi = comm_window_of(c, first);
    if (wi < 0) {
        report_kernel_error("tile %s: the tensor at %#llx is not in a window of rank %u (pass a pld.window(...) "
                            "view, a pld.DistributedTensor parameter)",
                            op, static_cast<unsigned long long>(first), c.rank);
        return false;
    }
    const CommWindow& w = c.windows[wi];
    const std::uint64_t within = first - (w.base + static_cast<std::uint64_t>(c.rank) * w.stride);
    if (within % esize != 0) {
        report_kernel_error("tile %s: the tensor starts %llu bytes into its window, not a whole element", op,
                            static_cast<unsigned long long>(within));
        return false;
    }
    *out = t;
    out->buffer.addr = w.base + static_cast<std::uint64_t>(peer) * w.stride;
    out->buffer.size = w.nbytes;
    out->start_offset = within / esize;
    if (window != nullptr) *window = wi;
    return true;
}

// Element index of `off` (one entry per dim) in `t`, checked against its shape and backing.
inline bool element(const char* op, const ChipTensor& t, const Offsets& off, std::uint64_t* idx) noexcept {
    if (t.dtype != static_cast<std::uint8_t>(DataType::INT32)) {
        report_kernel_error("tile %s: a signal is an INT32 tensor, got %s", op, detail::dtype_name(t.dtype));
        return false;
    }
    if (t.ndims < 1 || t.ndims > kMaxTensorDims || off.n != static_cast<int>(t.ndims)) {
        report_kernel_error("tile %s: %d offsets given for a rank-%u signal tensor, expected %u", op, off.n, t.ndims,
                            t.ndims);
        return false;
    }
    std::uint64_t e = t.start_offset;
    for (std::uint32_t i = 0; i < t.ndims; ++i) {
        if (off.v[i] < 0 || static_cast<std::uint64_t>(off.v[i]) >= t.shapes[i]) {
            report_kernel_error("tile %s: offset %lld of dim %u outside the signal shape %u", op,
                                static_cast<long long>(off.v[i]), i, t.shapes[i]);
            return false;
        }
        e += static_cast<std::uint64_t>(off.v[i]) * t.strides[i];
    }
    if ((e + 1) * sizeof(std::int32_t) > t.buffer.size || t.buffer.addr == 0) {
        report_kernel_error("tile %s: signal element %llu lies outside its window of %llu bytes", op,
                            static_cast<unsigned long long>(e), static_cast<unsigned long long>(t.buffer.size));
        return false;
    }
    *idx = e;
    return true;
}

inline std::int32_t* cell(const ChipTensor& t, std::uint64_t idx) noexcept {
    return reinterpret_cast<std::int32_t*>(static_cast<std::uintptr_t>(t.buffer.addr)) + idx;
}

// Offsets of the flat (row-major) element `flat` of `t`'s shape.
inline Offsets unravel(const ChipTensor& t, std::uint64_t flat) noexcept {
    Offsets o;
    o.n = static_cast<int>(t.ndims);
    for (int i = static_cast<int>(t.ndims) - 1; i >= 0; --i) {
        const std::uint64_t d = t.shapes[i] == 0 ? 1 : t.shapes[i];
        o.v[i] = static_cast<std::int64_t>(flat % d);
        flat /= d;
    }
    return o;
}

inline std::uint64_t numel(const ChipTensor& t) noexcept {
    std::uint64_t n = 1;
    for (std::uint32_t i = 0; i < t.ndims && i < kMaxTensorDims; ++i) n *= t.shapes[i];
    return n;
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

// value += add, atomically, for one element of any arithmetic tile type (a compare-and-swap
// loop on its bits; 16-bit floats add in float and round once).
template <class T>
inline void atomic_add(T* p, T add) noexcept {
    using Bits = std::conditional_t<sizeof(T) == 1, std::uint8_t,
                                    std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                                       std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
    static_assert(sizeof(Bits) == sizeof(T), "atomic_add: unsupported element size");
    Bits* bp = reinterpret_cast<Bits*>(p);
    Bits old = __atomic_load_n(bp, __ATOMIC_RELAXED);
    for (;;) {
        T cur;
        std::memcpy(&cur, &old, sizeof cur);
        const T next = from_compute<T>(to_compute(cur) + to_compute(add));
        Bits nb;
        std::memcpy(&nb, &next, sizeof nb);
        if (__atomic_compare_exchange_n(bp, &old, nb, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return;
    }
}

// Largest element index of nonempty `t` + 1, in bytes, within its backing.
inline bool extent_ok(const char* op, const ChipTensor& t, const char* which) noexcept {
    if (numel(t) == 0) return true;
    std::uint64_t last = t.start_offset;
    for (std::uint32_t i = 0; i < t.ndims; ++i) last += static_cast<std::uint64_t>(t.shapes[i] - 1) * t.strides[i];
    if ((last + 1) * elem_bytes(t) > t.buffer.size || t.buffer.addr == 0) {
        report_kernel_error("tile %s: %s element %llu lies outside its backing of %llu bytes", op, which,
                            static_cast<unsigned long long>(last), static_cast<unsigned long long>(t.buffer.size));
        return false;
    }
    return true;
}

inline std::uint64_t index_of(const ChipTensor& t, std::uint64_t flat) noexcept {
    const Offsets o = unravel(t, flat);
    std::uint64_t e = t.start_offset;
    for (std::uint32_t i = 0; i < t.ndims; ++i) e += static_cast<std::uint64_t>(o.v[i]) * t.strides[i];
    return e;
}

template <class T>
inline void copy_elements(const ChipTensor& dst, const ChipTensor& src, AtomicType atomic) noexcept {
    T* d = reinterpret_cast<T*>(static_cast<std::uintptr_t>(dst.buffer.addr));
    const T* s = reinterpret_cast<const T*>(static_cast<std::uintptr_t>(src.buffer.addr));
    const std::uint64_t n = numel(dst);
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t di = index_of(dst, i), si = index_of(src, i);
        if (atomic == AtomicType::Add)
            atomic_add<T>(d + di, s[si]);
        else
            d[di] = s[si];
    }
}

// dst and src have one dtype and shape, both within their backing; atomic adds need a
// dtype that adds.
inline bool copy_check(const char* op, const ChipTensor& dst, const ChipTensor& src, AtomicType atomic) noexcept {
    if (dst.dtype != src.dtype) {
        report_kernel_error("tile %s: dst dtype %s differs from src dtype %s", op, detail::dtype_name(dst.dtype),
                            detail::dtype_name(src.dtype));
        return false;
    }
    bool same = dst.ndims == src.ndims && dst.ndims >= 1 && dst.ndims <= kMaxTensorDims;
    for (std::uint32_t i = 0; same && i < dst.ndims; ++i) same = dst.shapes[i] == src.shapes[i];
    if (!same) {
        report_kernel_error("tile %s: dst and src shapes differ (rank %u and %u)", op, dst.ndims, src.ndims);
        return false;
    }
    if (!extent_ok(op, dst, "dst") || !extent_ok(op, src, "src")) return false;
    if (atomic == AtomicType::Add) {
        switch (static_cast<DataType>(dst.dtype)) {
            case DataType::FLOAT32: case DataType::FLOAT16: case DataType::BFLOAT16: case DataType::INT8:
            case DataType::INT16: case DataType::INT32: return true;
            default: break;
        }
        report_kernel_error("tile %s: atomic add needs an FP32/FP16/BF16/INT32/INT16/INT8 tensor, got %s", op,
                            detail::dtype_name(dst.dtype));
        return false;
    }
    return true;
}

// dst = src (or dst += src) element by element; same dtype and shape, both bounds-checked.
inline bool copy_tensor(const char* op, const ChipTensor& dst, const ChipTensor& src, AtomicType atomic) noexcept {
    if (!copy_check(op, dst, src, atomic)) return false;
    switch (static_cast<DataType>(dst.dtype)) {
        case DataType::FLOAT32: copy_elements<float>(dst, src, atomic); return true;
        case DataType::FLOAT16: copy_elements<half>(dst, src, atomic); return true;
        case DataType::BFLOAT16: copy_elements<bfloat16>(dst, src, atomic); return true;
        case DataType::INT8: copy_elements<std::int8_t>(dst, src, atomic); return true;
        case DataType::INT16: copy_elements<std::int16_t>(dst, src, atomic); return true;
        case DataType::INT32: copy_elements<std::int32_t>(dst, src, atomic); return true;
        default: break;  // copy_check refused atomic adds of other dtypes
    }
    const std::uint64_t es = elem_bytes(dst), n = numel(dst);
    auto* d = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(dst.buffer.addr));
    const auto* s = reinterpret_cast<const unsigned char*>(static_cast<std::uintptr_t>(src.buffer.addr));
    for (std::uint64_t i = 0; i < n; ++i) std::memcpy(d + index_of(dst, i) * es, s + index_of(src, i) * es, es);
    return true;
}

}  // namespace comm_detail

// This rank's number and the number of ranks, read from the context of window `win`'s buffer
// (pld.rank(pld.get_comm_ctx(win)) / pld.nranks(...)); 0 when reported.
inline std::int32_t comm_rank(const ChipTensor& win) noexcept {
    const CommContext* c = comm_detail::context("comm_rank");
    ChipTensor v;
    if (c == nullptr || !comm_detail::peer_view("comm_rank", *c, win, c->rank, &v)) return 0;
    return static_cast<std::int32_t>(c->rank);
}
inline std::int32_t comm_nranks(const ChipTensor& win) noexcept {
    const CommContext* c = comm_detail::context("comm_nranks");
    ChipTensor v;
    if (c == nullptr || !comm_detail::peer_view("comm_nranks", *c, win, c->rank, &v)) return 0;
    return static_cast<std::int32_t>(c->nranks);
}

// dst's valid region from window `win` of rank `peer` at `offsets` (as load).
template <Space S, class T, int R, int C>
inline bool remote_load(Tile<S, T, R, C>& dst, const ChipTensor& win, std::int64_t peer,
                        const Offsets& offsets = {}) noexcept {
    const CommContext* c = comm_detail::context("remote_load");
    ChipTensor v;
    int wi = -1;
    if (c == nullptr || !comm_detail::peer_view("remote_load", *c, win, peer, &v, &wi)) return false;
    if (!comm_detail::on_host(*c)) return load(dst, v, offsets);
    detail::Access a;
    if (!detail::operands_ok("remote_load", dst)) return false;
    if (!detail::plan_access<T>("remote_load", v, offsets, dst.valid_rows, dst.valid_cols, false, &a)) return false;
    comm_detail::HostRuns runs;
    if (!runs.reserve("remote_load", static_cast<std::uint64_t>(a.rows) * a.cols * sizeof(T))) return false;
    for (int r = 0; r < a.rows; ++r)
        for (int col = 0; col < a.cols; ++col) {
            const std::uint64_t e = a.base + (a.r0 + r) * a.row_inner + (a.c0 + col) * a.col_inner;
            if (runs.add("remote_load", e * sizeof(T), sizeof(T)) == nullptr) return false;
        }
    if (!runs.call("remote_load", *c, CommHostOp::Read, peer, wi)) return false;
    const T* got = reinterpret_cast<const T*>(runs.data());
    for (int r = 0; r < a.rows; ++r)
        for (int col = 0; col < a.cols; ++col) dst.row(r)[col] = got[r * a.cols + col];
    return true;
}

// src's valid region into window `win` of rank `peer` at `offsets` (as store); with
// AtomicType::Add each element is added atomically to what the peer's window holds.
template <Space S, class T, int R, int C>
inline bool remote_store(const ChipTensor& win, const Tile<S, T, R, C>& src, std::int64_t peer,
                         const Offsets& offsets = {}, AtomicType atomic = AtomicType::None) noexcept {
    const CommContext* c = comm_detail::context("remote_store");
    ChipTensor v;
    int wi = -1;
    if (c == nullptr || !comm_detail::peer_view("remote_store", *c, win, peer, &v, &wi)) return false;
    if (atomic == AtomicType::None && !comm_detail::on_host(*c)) return store(v, src, offsets);
    detail::Access a;
    if (!detail::operands_ok("remote_store", src)) return false;
    if (!detail::plan_access<T>("remote_store", v, offsets, src.valid_rows, src.valid_cols, false, &a)) return false;
    if (comm_detail::on_host(*c)) {
        comm_detail::HostRuns runs;
        if (!runs.reserve("remote_store", static_cast<std::uint64_t>(a.rows) * a.cols * sizeof(T))) return false;
        for (int r = 0; r < a.rows; ++r)
            for (int col = 0; col < a.cols; ++col) {
                const std::uint64_t e = a.base + (a.r0 + r) * a.row_inner + (a.c0 + col) * a.col_inner;
                unsigned char* at = runs.add("remote_store", e * sizeof(T), sizeof(T));
                if (at == nullptr) return false;
                std::memcpy(at, &src.data[r * C + col], sizeof(T));
            }
        return runs.call("remote_store", *c, atomic == AtomicType::Add ? CommHostOp::AtomicAdd : CommHostOp::Write,
                         peer, wi, static_cast<std::uint32_t>(dtype_v<T>));
    }
    T* mem = reinterpret_cast<T*>(static_cast<std::uintptr_t>(a.addr)) + a.base;
    for (int r = 0; r < a.rows; ++r)
        for (int col = 0; col < a.cols; ++col)
            comm_detail::atomic_add<T>(mem + (a.r0 + r) * a.row_inner + (a.c0 + col) * a.col_inner,
                                       src.data[r * C + col]);
    return true;
}

// Signal rank `peer`: its INT32 cell `sig[offsets]` += value (AtomicAdd) or = value (Set),
// atomically, after every earlier write of this kernel (sequentially consistent).
inline bool notify(const ChipTensor& sig, std::int64_t peer, const Offsets& offsets, std::int64_t value,
                   NotifyOp op) noexcept {
    const CommContext* c = comm_detail::context("notify");
    ChipTensor v;
    std::uint64_t idx = 0;
    int wi = -1;
    if (c == nullptr || !comm_detail::peer_view("notify", *c, sig, peer, &v, &wi) ||
        !comm_detail::element("notify", v, offsets, &idx))
        return false;
    if (value < INT32_MIN || value > INT32_MAX) {
        report_kernel_error("tile notify: value %lld does not fit an INT32 signal", static_cast<long long>(value));
        return false;
    }
    if (comm_detail::on_host(*c)) {
        comm_detail::HostRuns runs;
        if (!runs.reserve("notify", sizeof(std::int32_t)) ||
            runs.add("notify", idx * sizeof(std::int32_t), sizeof(std::int32_t)) == nullptr)
            return false;
        return runs.call("notify", *c, op == NotifyOp::Set ? CommHostOp::NotifySet : CommHostOp::NotifyAdd, peer, wi,
                         static_cast<std::uint32_t>(DataType::INT32), value);
    }
    std::int32_t* p = comm_detail::cell(v, idx);
    if (op == NotifyOp::Set)
        __atomic_store_n(p, static_cast<std::int32_t>(value), __ATOMIC_SEQ_CST);
    else
        __atomic_fetch_add(p, static_cast<std::int32_t>(value), __ATOMIC_SEQ_CST);
    return true;
}

// Wait until this rank's INT32 cell `sig[offsets]` == expected (Eq) or >= expected (Ge). Spins
// briefly, then yields, then sleeps (up to 1 ms at a time); after the context's wait timeout the
// task fails with the rank, the cell, the condition and the value seen. A kernel that has
// already reported an error does not wait (its task fails anyway).
inline bool wait(const ChipTensor& sig, const Offsets& offsets, std::int64_t expected, WaitCmp cmp) noexcept {
    const CommContext* c = comm_detail::context("wait");
    ChipTensor v;
    std::uint64_t idx = 0;
    int window = -1;
    if (c == nullptr || !comm_detail::peer_view("wait", *c, sig, c->rank, &v, &window) ||
        !comm_detail::element("wait", v, offsets, &idx))
        return false;
    const std::int32_t* p = comm_detail::cell(v, idx);
    const auto met = [&](std::int32_t x) noexcept {
        return cmp == WaitCmp::Eq ? x == expected : static_cast<std::int64_t>(x) >= expected;
    };
    std::int64_t deadline = 0;
    long sleep_ns = 1000;
    for (unsigned spin = 0;; ++spin) {
        const std::int32_t x = __atomic_load_n(p, __ATOMIC_SEQ_CST);
        if (met(x)) return true;
        if (kernel_error_pending()) return false;
        if (spin < 4096) {
            comm_detail::relax();
            continue;
        }
        const std::int64_t now = comm_detail::now_ns();
        if (deadline == 0) deadline = now + c->wait_timeout_ns;
        if (now >= deadline) {
            char at[96];
            int n = std::snprintf(at, sizeof at, "[");
            for (int i = 0; i < offsets.n && n < static_cast<int>(sizeof at) - 24; ++i)
                n += std::snprintf(at + n, sizeof at - n, "%s%lld", i ? ", " : "", static_cast<long long>(offsets.v[i]));
            std::snprintf(at + n, sizeof at - n, "]");
            report_kernel_error("tile wait: rank %u timed out after %.3g s waiting for its signal %s (element %llu "
                                "of window buffer %d) to become %s %lld; the value seen was %d",
                                c->rank, static_cast<double>(c->wait_timeout_ns) / 1e9, at,
                                static_cast<unsigned long long>(idx), window, cmp == WaitCmp::Eq ? "==" : ">=",
                                static_cast<long long>(expected), x);
            return false;
        }
        if (spin < 4096 + 64) {
            sched_yield();
            continue;
        }
        timespec ts{0, sleep_ns};
        nanosleep(&ts, nullptr);
        if (sleep_ns < 1000000) sleep_ns *= 2;
    }
}

// Every rank waits here until all ranks have arrived. `sig` is an INT32 window with at least
// nranks elements; cell i (row-major) counts rank i's arrivals. Each rank adds 1 to its own cell
// in every peer's window, waits until each peer's cell in its own window is >= 1, then takes
// that 1 back: the cells are zero again once every rank has left, so the barrier can be used
// again at once and leaves no tally behind.
inline bool barrier(const ChipTensor& sig) noexcept {
    const CommContext* c = comm_detail::context("barrier");
    ChipTensor mine;
    if (c == nullptr || !comm_detail::peer_view("barrier", *c, sig, c->rank, &mine)) return false;
    if (comm_detail::numel(mine) < c->nranks) {
        report_kernel_error("tile barrier: the signal has %llu elements, fewer than the %u ranks",
                            static_cast<unsigned long long>(comm_detail::numel(mine)), c->nranks);
        return false;
    }
    const Offsets me = comm_detail::unravel(mine, c->rank);
    for (std::uint32_t p = 0; p < c->nranks; ++p)
        if (p != c->rank && !notify(sig, p, me, 1, NotifyOp::AtomicAdd)) return false;
    for (std::uint32_t s = 0; s < c->nranks; ++s)
        if (s != c->rank && !wait(sig, comm_detail::unravel(mine, s), 1, WaitCmp::Ge)) return false;
    for (std::uint32_t s = 0; s < c->nranks; ++s)
        if (s != c->rank && !notify(sig, c->rank, comm_detail::unravel(mine, s), -1, NotifyOp::AtomicAdd)) return false;
    return true;
}

// Rank `peer`'s window `dst` = this rank's `src` (or += with AtomicType::Add), element by
// element; same dtype and shape. `src` may be any tensor of this rank.
inline bool put(const ChipTensor& dst, std::int64_t peer, const ChipTensor& src,
                AtomicType atomic = AtomicType::None) noexcept {
    const CommContext* c = comm_detail::context("put");
    ChipTensor v;
    int wi = -1;
    if (c == nullptr || !comm_detail::peer_view("put", *c, dst, peer, &v, &wi)) return false;
    if (!comm_detail::on_host(*c)) return comm_detail::copy_tensor("put", v, src, atomic);
    if (!comm_detail::copy_check("put", v, src, atomic)) return false;
    const std::uint64_t es = comm_detail::elem_bytes(v), n = comm_detail::numel(v);
    comm_detail::HostRuns runs;
    if (!runs.reserve("put", n * es)) return false;
    const auto* s = reinterpret_cast<const unsigned char*>(static_cast<std::uintptr_t>(src.buffer.addr));
    for (std::uint64_t i = 0; i < n; ++i) {
        unsigned char* at = runs.add("put", comm_detail::index_of(v, i) * es, es);
        if (at == nullptr) return false;
        std::memcpy(at, s + comm_detail::index_of(src, i) * es, es);
    }
    return runs.call("put", *c, atomic == AtomicType::Add ? CommHostOp::AtomicAdd : CommHostOp::Write, peer, wi,
                     v.dtype);
}

// This rank's `dst` = rank `peer`'s window `src`; same dtype and shape. `dst` may be any tensor
// of this rank.
inline bool get(const ChipTensor& dst, std::int64_t peer, const ChipTensor& src) noexcept {
    const CommContext* c = comm_detail::context("get");
    ChipTensor v;
    int wi = -1;
    if (c == nullptr || !comm_detail::peer_view("get", *c, src, peer, &v, &wi)) return false;
    if (!comm_detail::on_host(*c)) return comm_detail::copy_tensor("get", dst, v, AtomicType::None);
    if (!comm_detail::copy_check("get", dst, v, AtomicType::None)) return false;
    const std::uint64_t es = comm_detail::elem_bytes(v), n = comm_detail::numel(v);
    comm_detail::HostRuns runs;
    if (!runs.reserve("get", n * es)) return false;
    for (std::uint64_t i = 0; i < n; ++i)
        if (runs.add("get", comm_detail::index_of(v, i) * es, es) == nullptr) return false;
    if (!runs.call("get", *c, CommHostOp::Read, peer, wi)) return false;
    auto* d = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(dst.buffer.addr));
    for (std::uint64_t i = 0; i < n; ++i) std::memcpy(d + comm_detail::index_of(dst, i) * es, runs.data() + i * es, es);
    return true;
}

}  // namespace tile
}  // namespace simpler
