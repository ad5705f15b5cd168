// What a generated kernel of a multi-chip program needs from simpler besides PTO-ISA's
// communication instructions (<pto/comm/pto_comm_inst.hpp>: TPUT, TGET, TNOTIFY, TWAIT, ...):
// this rank's number and the rank count, and checked global tensors over other ranks' windows
// (simpler/comm_context.hpp, reached through KernelContext::comm) for those instructions and
// for TLOAD/TSTORE.
//
// A window operand is a ChipTensor lying in this rank's part of a window buffer: rank p's copy
// of a window buffer starts at `base + p * stride`, so peer p's view of the tensor is the same
// descriptor rebased by (p - rank) * stride, bounds-checked against the window's bytes. The
// instructions then address the peer's memory directly, as a device kernel addresses another
// chip's HBM. (On simpler's host comm path the peer's window is not memory of this process;
// our PTO-ISA backend carries such an access to the rank's host process. The official CPU
// backend dereferences the address, so with PTO_ISA_ROOT only the shared-memory path works.)
//
// Backend-neutral like kernel_args.hpp: only the public PTO-ISA API. Failures are reported
// through simpler::report_kernel_error ("<op>: ...") and the helper returns false; the generated
// code then returns from the kernel.
#pragma once

#include <cstdint>
#include <initializer_list>

#include <pto/comm/pto_comm_inst.hpp>

#include "simpler/comm_context.hpp"
#include "simpler/kernel_abi.hpp"
#include "simpler/kernel_args.hpp"

namespace simpler {
namespace kernel {

// A global tensor of up to five dims with any strides (a ChipTensor's leading dims padded
// with 1): the operand of TPUT/TGET and the collectives.
template <class T>
using GmN = pto::GlobalTensor<T, pto::Shape<-1, -1, -1, -1, -1>, pto::Stride<-1, -1, -1, -1, -1>>;

namespace comm_detail {

inline const CommContext* context(const char* op) noexcept {
    const KernelContext* k = current_kernel_context();
    const CommContext* c = k != nullptr ? k->comm : nullptr;
    if (c == nullptr)
        report_kernel_error("%s: no comm context: cross-rank operations run in the ranks of a multi-chip program "
                            "(a @pl.jit.host program's per-device launches)",
                            op);
    return c;
}

inline std::uint64_t elem_bytes(const ChipTensor& t) noexcept {
    return is_known_dtype(t.dtype) ? (kDataTypeBits[t.dtype] + 7) / 8 : 0;
}

// `t` (a window of this rank) rebased onto rank `peer`'s window of the same buffer (its backing:
// the window's bytes from its start). False after reporting.
inline bool peer_view(const char* op, const CommContext& c, const ChipTensor& t, std::int64_t peer,
                      ChipTensor* out) noexcept {
    if (peer < 0 || peer >= static_cast<std::int64_t>(c.nranks)) {
        report_kernel_error("%s: peer %lld outside the ranks [0, %u)", op, static_cast<long long>(peer), c.nranks);
        return false;
    }
    const std::uint64_t es = elem_bytes(t);
    std::uint64_t first = 0;
    if (es == 0 || __builtin_mul_overflow(t.start_offset, es, &first) ||
        __builtin_add_overflow(t.buffer.addr, first, &first)) {
        report_kernel_error("%s: invalid tensor descriptor (dtype %u)", op, static_cast<unsigned>(t.dtype));
        return false;
    }
    const int wi = comm_window_of(c, first);
    if (wi < 0) {
        report_kernel_error("%s: the tensor at %#llx is not in a window of rank %u (pass a pld.window(...) view, a "
                            "pld.DistributedTensor parameter)",
                            op, static_cast<unsigned long long>(first), c.rank);
        return false;
    }
    const CommWindow& w = c.windows[wi];
    const std::uint64_t within = first - (w.base + static_cast<std::uint64_t>(c.rank) * w.stride);
    if (within % es != 0) {
        report_kernel_error("%s: the tensor starts %llu bytes into its window, not a whole element", op,
                            static_cast<unsigned long long>(within));
        return false;
    }
    *out = t;
    out->buffer.addr = w.base + static_cast<std::uint64_t>(peer) * w.stride;
    out->buffer.size = w.nbytes;
    out->start_offset = within / es;
    return true;
}

// `t`, or rank `peer`'s view of it when peer >= 0 (t must then be a window).
inline bool operand(const char* op, const ChipTensor& t, std::int64_t peer, ChipTensor* out) noexcept {
    if (peer < 0) {
        *out = t;
        return true;
    }
    const CommContext* c = context(op);
    return c != nullptr && peer_view(op, *c, t, peer, out);
}

}  // namespace comm_detail

// This rank's number and the rank count (pld.rank / pld.nranks of the comm context of window
// `win`); 0 when reported.
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

// The [rows, cols] window at `offsets` (as gm_view) of rank `peer`'s copy of window `win`: the
// operand of TLOAD/TSTORE for pld.tile.remote_load / remote_store.
template <class T>
inline bool peer_gm_view(GmView<T>& view, const char* op, const ChipTensor& win, std::int64_t peer,
                         std::uint8_t dtype, std::initializer_list<std::int64_t> offsets, std::int64_t rows,
                         std::int64_t cols) noexcept {
    ChipTensor v;
    return comm_detail::operand(op, win, peer, &v) && gm_view<T>(view, op, v, dtype, offsets, rows, cols);
}

// The region `t[offsets : offsets + shape]` (one entry per dim of t; both empty: all of t) as a
// 5-D global tensor, of this rank's `t` (peer < 0) or of rank `peer`'s copy of window `t`;
// dtype, rank, region and backing checked. `what` names the operand in a report.
template <class T>
inline bool tensor_gm(GmN<T>& g, const char* op, const char* what, const ChipTensor& t, std::uint8_t dtype,
                      std::int64_t peer, std::initializer_list<std::int64_t> offsets = {},
                      std::initializer_list<std::int64_t> shape = {}) noexcept {
    ChipTensor v;
    if (!comm_detail::operand(op, t, peer, &v) || !detail::dtype_matches(op, v, dtype)) return false;
    const std::uint32_t nd = v.ndims;
    if (nd < 1 || nd > 5) {
        report_kernel_error("%s: %s has rank %u, expected 1..5", op, what, nd);
        return false;
    }
    const bool whole = offsets.size() == 0 && shape.size() == 0;
    if (!whole && (offsets.size() != nd || shape.size() != nd)) {
        report_kernel_error("%s: %s has rank %u but %zu offsets and %zu extents were given", op, what, nd,
                            offsets.size(), shape.size());
        return false;
    }
    std::int64_t off[5] = {}, ext[5] = {};
    for (std::uint32_t i = 0; i < nd; ++i) {
        off[i] = whole ? 0 : offsets.begin()[i];
        ext[i] = whole ? static_cast<std::int64_t>(v.shapes[i]) : shape.begin()[i];
        if (off[i] < 0 || ext[i] < 0 || off[i] > static_cast<std::int64_t>(v.shapes[i]) - ext[i]) {
            report_kernel_error("%s: %s region [%lld, %lld) of dim %u is outside its extent %u", op, what,
                                static_cast<long long>(off[i]), static_cast<long long>(off[i] + ext[i]), i,
                                v.shapes[i]);
            return false;
        }
    }
    std::uint64_t first = v.start_offset, last = 0;
    bool empty = false;
    for (std::uint32_t i = 0; i < nd; ++i) {
        first += static_cast<std::uint64_t>(off[i]) * v.strides[i];
        empty = empty || ext[i] == 0;
    }
    last = first;
    for (std::uint32_t i = 0; i < nd && !empty; ++i) last += static_cast<std::uint64_t>(ext[i] - 1) * v.strides[i];
    if (!empty && !detail::backing_covers(op, v, last, sizeof(T))) return false;
    std::int64_t d[5] = {1, 1, 1, 1, 1}, s[5] = {1, 1, 1, 1, 1};
    for (std::uint32_t i = 0; i < nd; ++i) {
        d[5 - nd + i] = ext[i];
        s[5 - nd + i] = static_cast<std::int64_t>(v.strides[i]);
    }
    T* data = reinterpret_cast<T*>(static_cast<std::uintptr_t>(v.buffer.addr)) + first;
    g = GmN<T>(data, pto::Shape<-1, -1, -1, -1, -1>(d[0], d[1], d[2], d[3], d[4]),
               pto::Stride<-1, -1, -1, -1, -1>(s[0], s[1], s[2], s[3], s[4]));
    return true;
}

// The INT32 signal cell `sig[offsets]` (one offset per dim) of this rank (peer < 0) or of rank
// `peer`'s copy of window `sig`: the operand of TNOTIFY / TWAIT / TTEST.
inline bool signal_cell(pto::comm::Signal& cell, const char* op, const ChipTensor& sig, std::int64_t peer,
                        std::initializer_list<std::int64_t> offsets) noexcept {
    ChipTensor v;
    if (!comm_detail::operand(op, sig, peer, &v)) return false;
    if (v.dtype != static_cast<std::uint8_t>(DataType::INT32)) {
        report_kernel_error("%s: a signal is an INT32 tensor, got %s", op, dtype_label(v.dtype));
        return false;
    }
    if (v.ndims < 1 || v.ndims > kMaxTensorDims || offsets.size() != v.ndims) {
        report_kernel_error("%s: %zu offsets given for a rank-%u signal tensor, expected %u", op, offsets.size(),
                            v.ndims, v.ndims);
        return false;
    }
    std::uint64_t e = v.start_offset;
    std::uint32_t i = 0;
    for (std::int64_t o : offsets) {
        if (o < 0 || static_cast<std::uint64_t>(o) >= v.shapes[i]) {
            report_kernel_error("%s: offset %lld of dim %u outside the signal shape %u", op, static_cast<long long>(o),
                                i, v.shapes[i]);
            return false;
        }
        e += static_cast<std::uint64_t>(o) * v.strides[i++];
    }
    if (!detail::backing_covers(op, v, e, sizeof(std::int32_t))) return false;
    cell = pto::comm::Signal(reinterpret_cast<std::int32_t*>(static_cast<std::uintptr_t>(v.buffer.addr)) + e);
    return true;
}

// A notify or wait value as the INT32 the instructions take; reported when it does not fit.
inline bool int32_value(const char* op, std::int64_t v, std::int32_t* out) noexcept {
    if (v < INT32_MIN || v > INT32_MAX) {
        report_kernel_error("%s: value %lld does not fit an INT32 signal", op, static_cast<long long>(v));
        return false;
    }
    *out = static_cast<std::int32_t>(v);
    return true;
}

// Every rank waits here until all have arrived (pld.tensor.barrier): `sig` is an INT32 window of
// at least nranks cells (row-major cell i counts rank i). Each rank adds 1 to its cell in every
// peer's copy (TNOTIFY), waits until every cell of its own copy is >= 1 (TWAIT), then takes the
// credits back, so the cells are zero again once all have left.
inline bool barrier(const ChipTensor& sig) noexcept {
    using namespace pto;
    const char* op = "pld.tensor.barrier";
    const CommContext* c = comm_detail::context(op);
    ChipTensor mine;
    if (c == nullptr || !comm_detail::peer_view(op, *c, sig, c->rank, &mine)) return false;
    std::uint64_t cells = 1;
    for (std::uint32_t i = 0; i < mine.ndims; ++i) cells *= mine.shapes[i];
    if (mine.dtype != static_cast<std::uint8_t>(DataType::INT32) || cells < c->nranks) {
        report_kernel_error("%s: the signal must be INT32 with at least %u cells (one per rank), got %s with %llu", op,
                            c->nranks, dtype_label(mine.dtype), static_cast<unsigned long long>(cells));
        return false;
    }
    // Row-major cell i of the signal as its offsets.
    const auto at = [&](std::uint32_t flat, std::int64_t* o) noexcept {
        for (int d = static_cast<int>(mine.ndims) - 1; d >= 0; --d) {
            o[d] = static_cast<std::int64_t>(flat % mine.shapes[d]);
            flat /= mine.shapes[d];
        }
    };
    const auto cell = [&](pto::comm::Signal& s, std::int64_t peer, std::uint32_t flat) noexcept {
        std::int64_t o[kMaxTensorDims] = {};
        at(flat, o);
        switch (mine.ndims) {
            case 1: return signal_cell(s, op, sig, peer, {o[0]});
            case 2: return signal_cell(s, op, sig, peer, {o[0], o[1]});
            case 3: return signal_cell(s, op, sig, peer, {o[0], o[1], o[2]});
            case 4: return signal_cell(s, op, sig, peer, {o[0], o[1], o[2], o[3]});
            default: return signal_cell(s, op, sig, peer, {o[0], o[1], o[2], o[3], o[4]});
        }
    };
    pto::comm::Signal s;
    pipe_barrier(PIPE_ALL);
    for (std::uint32_t p = 0; p < c->nranks; ++p) {
        if (!cell(s, p, c->rank)) return false;
        pto::comm::TNOTIFY(s, 1, pto::comm::NotifyOp::AtomicAdd);
    }
    for (std::uint32_t p = 0; p < c->nranks; ++p) {
        if (!cell(s, -1, p)) return false;
        pto::comm::TWAIT(s, 1, pto::comm::WaitCmp::GE);
        if (kernel_error_slot().set) return false;
    }
    for (std::uint32_t p = 0; p < c->nranks; ++p) {
        if (!cell(s, -1, p)) return false;
        pto::comm::TNOTIFY(s, -1, pto::comm::NotifyOp::AtomicAdd);
    }
    pipe_barrier(PIPE_ALL);
    return true;
}

// The deferred waits of one kernel (pld.system.defer_wait): `add` records a condition on one of
// this rank's signal cells; the kernel goes on, and each is waited for (TWAIT, cell >= expected)
// when the object is destroyed at the kernel's end, so the task completes only once they hold.
class DeferredWaits {
public:
    static constexpr int kMax = 64;
    DeferredWaits() noexcept = default;
    DeferredWaits(const DeferredWaits&) = delete;
    DeferredWaits& operator=(const DeferredWaits&) = delete;
    bool add(const ChipTensor& sig, std::initializer_list<std::int64_t> offsets, std::int64_t expected) noexcept {
        const char* op = "pld.system.defer_wait";
        if (n_ == kMax) {
            report_kernel_error("%s: more than %d deferred waits in one kernel", op, kMax);
            return false;
        }
        Entry& e = e_[n_];
        if (!signal_cell(e.cell, op, sig, -1, offsets) || !int32_value(op, expected, &e.expected)) return false;
        ++n_;
        return true;
    }
    ~DeferredWaits() {
        using namespace pto;
        pipe_barrier(PIPE_ALL);
        for (int i = 0; i < n_ && !kernel_error_slot().set; ++i)
            pto::comm::TWAIT(e_[i].cell, e_[i].expected, pto::comm::WaitCmp::GE);
    }

private:
    struct Entry {
        pto::comm::Signal cell;
        std::int32_t expected = 0;
    };
    Entry e_[kMax];
    int n_ = 0;
};

}  // namespace kernel
}  // namespace simpler
