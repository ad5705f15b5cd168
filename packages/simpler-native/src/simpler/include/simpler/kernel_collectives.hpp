// The collectives of multi-chip programs (pld.tensor.allreduce / broadcast / allgather /
// reduce_scatter / all_to_all / all_to_all_v), written as sequences of PTO-ISA communication
// instructions over other ranks' windows (simpler/kernel_comm.hpp builds the operands):
// barriers of TNOTIFY/TWAIT, data moved by TPUT/TGET/TBROADCAST and reduced by TREDUCE. PTO-ISA's
// collectives are root-initiated (one rank moves the data of a ParallelGroup); pld's are called
// by every rank, so each is a schedule of root-initiated steps:
//
// - allreduce, mesh: the leading dim is split into nranks row ranges; after a barrier each rank
//   TREDUCEs its range over all ranks into its own copy, a barrier, then TBROADCASTs it to every
//   peer, a barrier. Ring: the ring schedule on a [2 (nranks - 1), nranks] signal (step t: rank r
//   reduces (TREDUCE over itself and its left neighbour) or copies (TGET) one row range from its
//   left neighbour; cell [t, left] counts "the left neighbour's step-t data is ready", [t, r]
//   "the right neighbour read it"; every credit is taken back at the end).
// - ReduceOp Prod has no PTO-ISA reduce operation: its reductions are TLOAD/TMUL/TSTORE loops
//   over the same operands, through the acc and recv tiles.
// - broadcast: barrier, the root TBROADCASTs, barrier. allgather, all_to_all(_v): barrier, every
//   rank TPUTs its block into each peer's window, barrier. reduce_scatter: barrier, every rank
//   TREDUCEs its block, barrier.
//
// Every rank calls a collective with the same shapes and signal; signals are left all zero.
// "Blocks" are the leading dim split into nranks equal parts (reported otherwise). The tiles are
// the staging tiles the instructions take (Vec tiles placed by the kernel). Backend-neutral;
// failures are reported ("pld.tensor.<op>: ...") and the function returns false.
#pragma once

#include <cstdint>
#include <memory>
#include <new>

#include "simpler/kernel_comm.hpp"

namespace simpler {
namespace kernel {

// pld.ReduceOp: Sum, Max, Min map to pto::comm::ReduceOp; Prod is reduced with TMUL.
enum class CollOp : std::uint8_t { Sum = 0, Max = 1, Min = 2, Prod = 3 };

namespace coll_detail {

// This rank's window `t` as seen by this rank, checked (dtype `dtype`, rank 1..5).
inline bool mine(const char* op, const CommContext& c, const ChipTensor& t, ChipTensor* out) noexcept {
    if (!comm_detail::peer_view(op, c, t, c.rank, out)) return false;
    if (out->ndims < 1 || out->ndims > 5) {
        report_kernel_error("%s: a window of rank %u, expected 1..5 dims", op, out->ndims);
        return false;
    }
    return true;
}

inline std::uint64_t numel(const ChipTensor& t) noexcept {
    std::uint64_t n = 1;
    for (std::uint32_t i = 0; i < t.ndims && i < kMaxTensorDims; ++i) n *= t.shapes[i];
    return n;
}

// Rows [lo, hi) of the leading dim of rank `peer`'s copy of window `t` (all other dims whole).
template <class T>
inline bool rows_gm(GmN<T>& g, const char* op, const ChipTensor& t, std::int64_t peer, std::int64_t lo,
                    std::int64_t hi) noexcept {
    ChipTensor v;
    if (!comm_detail::operand(op, t, peer, &v)) return false;
    std::int64_t off[5] = {lo, 0, 0, 0, 0}, ext[5] = {hi - lo, 1, 1, 1, 1};
    for (std::uint32_t i = 1; i < v.ndims; ++i) ext[i] = v.shapes[i];
    const auto* o = off;
    const auto* e = ext;
    switch (v.ndims) {
        case 1: return tensor_gm<T>(g, op, "window", t, v.dtype, peer, {o[0]}, {e[0]});
        case 2: return tensor_gm<T>(g, op, "window", t, v.dtype, peer, {o[0], o[1]}, {e[0], e[1]});
        case 3: return tensor_gm<T>(g, op, "window", t, v.dtype, peer, {o[0], o[1], o[2]}, {e[0], e[1], e[2]});
        case 4:
            return tensor_gm<T>(g, op, "window", t, v.dtype, peer, {o[0], o[1], o[2], o[3]}, {e[0], e[1], e[2], e[3]});
        default:
            return tensor_gm<T>(g, op, "window", t, v.dtype, peer, {o[0], o[1], o[2], o[3], o[4]},
                                {e[0], e[1], e[2], e[3], e[4]});
    }
}

// `n` global tensors, one per rank.
template <class T>
struct Group {
    std::unique_ptr<GmN<T>[]> g;
    bool alloc(const char* op, std::uint32_t n) noexcept {
        g.reset(new (std::nothrow) GmN<T>[n]);
        if (!g) report_kernel_error("%s: out of memory", op);
        return static_cast<bool>(g);
    }
};

// dst = members[root] (op) members[r] for r != root in increasing order (each step rounded to T):
// TREDUCE, or for Prod a TLOAD/TMUL/TSTORE loop over [acc rows x acc cols] chunks of dims 3 and 4.
template <class T, class TileT>
inline bool reduce(const char* op, GmN<T>* members, int n, int root, GmN<T>& dst, CollOp rop, TileT& acc,
                   TileT& recv) noexcept {
    using namespace pto;
    (void)op;  // the instructions name themselves in their reports
    pipe_barrier(PIPE_ALL);
    if (rop != CollOp::Prod) {
        // TREDUCE moves [valid rows x valid cols] chunks through the tiles (dims 0..3 as rows):
        // a tensor that fits one chunk takes exactly its shape.
        const std::int64_t rows = dst.GetShape(0) * dst.GetShape(1) * dst.GetShape(2) * dst.GetShape(3);
        const std::int64_t cols = dst.GetShape(4);
        const unsigned vr = static_cast<unsigned>(rows < TileT::Rows ? rows : TileT::Rows);
        const unsigned vc = static_cast<unsigned>(cols < TileT::Cols ? cols : TileT::Cols);
        acc.SetValidShape(vr, vc);
        recv.SetValidShape(vr, vc);
        pto::comm::ParallelGroup<GmN<T>> group(members, n, root);
        pto::comm::TREDUCE(group, dst, acc, recv, static_cast<pto::comm::ReduceOp>(rop));
        pipe_barrier(PIPE_ALL);
        return !kernel_error_slot().set;
    }
    std::int64_t d[5], s[5];
    for (int i = 0; i < 5; ++i) d[i] = dst.GetShape(i);
    for (std::int64_t i0 = 0; i0 < d[0]; ++i0)
        for (std::int64_t i1 = 0; i1 < d[1]; ++i1)
            for (std::int64_t i2 = 0; i2 < d[2]; ++i2)
                for (std::int64_t r0 = 0; r0 < d[3]; r0 += TileT::Rows)
                    for (std::int64_t c0 = 0; c0 < d[4]; c0 += TileT::Cols) {
                        const std::int64_t rr = d[3] - r0 < TileT::Rows ? d[3] - r0 : TileT::Rows;
                        const std::int64_t cc = d[4] - c0 < TileT::Cols ? d[4] - c0 : TileT::Cols;
                        const auto chunk = [&](GmN<T>& g) noexcept {
                            for (int i = 0; i < 5; ++i) s[i] = g.GetStride(i);
                            return GmView<T>(g.data() + i0 * s[0] + i1 * s[1] + i2 * s[2] + r0 * s[3] + c0 * s[4],
                                             pto::Shape<1, 1, 1, -1, -1>(rr, cc), pto::Stride<1, 1, 1, -1, -1>(s[3], s[4]));
                        };
                        acc.SetValidShape(static_cast<unsigned>(rr), static_cast<unsigned>(cc));
                        recv.SetValidShape(static_cast<unsigned>(rr), static_cast<unsigned>(cc));
                        GmView<T> first = chunk(members[root]);
                        TLOAD(acc, first);
                        for (int r = 0; r < n; ++r) {
                            if (r == root) continue;
                            GmView<T> other = chunk(members[r]);
                            pipe_barrier(PIPE_ALL);
                            TLOAD(recv, other);
                            pipe_barrier(PIPE_ALL);
                            TMUL(acc, acc, recv);
                        }
                        pipe_barrier(PIPE_ALL);
                        GmView<T> out = chunk(dst);
                        TSTORE(out, acc);
                        pipe_barrier(PIPE_ALL);
                        if (kernel_error_slot().set) return false;
                    }
    return true;
}

// The leading dim of `w` split into `n` blocks: rows per block (reported unless it divides).
inline bool per_rank(const char* op, const ChipTensor& w, std::uint32_t n, std::int64_t* rows) noexcept {
    if (w.shapes[0] % n != 0) {
        report_kernel_error("%s: the window's leading dim %u does not split into %u equal blocks", op, w.shapes[0], n);
        return false;
    }
    *rows = w.shapes[0] / n;
    return true;
}

// `t` (this rank's tensor, any) as a global tensor of `like`'s shape: its own strides when its
// element count and last dims agree, else row-major over its elements (t must then be contiguous).
template <class T>
inline bool reshaped(GmN<T>& g, const char* op, const char* what, const ChipTensor& t, std::uint8_t dtype,
                     GmN<T>& like) noexcept {
    GmN<T> whole;
    if (!tensor_gm<T>(whole, op, what, t, dtype, -1)) return false;
    bool same = true;
    for (int i = 0; i < 5; ++i) same = same && whole.GetShape(i) == like.GetShape(i);
    if (same) {
        g = whole;
        return true;
    }
    std::int64_t n = 1, want = 1, expect = 1;
    for (int i = 0; i < 5; ++i) {
        n *= whole.GetShape(i);
        want *= like.GetShape(i);
    }
    bool contiguous = true;
    for (int i = 4; i >= 0; --i) {
        if (whole.GetShape(i) > 1 && whole.GetStride(i) != expect) contiguous = false;
        expect *= whole.GetShape(i);
    }
    if (n != want || !contiguous) {
        report_kernel_error("%s: %s has %lld elements%s, expected one block's %lld (contiguous when the shapes differ)",
                            op, what, static_cast<long long>(n), contiguous ? "" : " (not contiguous)",
                            static_cast<long long>(want));
        return false;
    }
    const std::int64_t d1 = like.GetShape(1), d2 = like.GetShape(2), d3 = like.GetShape(3), d4 = like.GetShape(4);
    g = GmN<T>(whole.data(), pto::Shape<-1, -1, -1, -1, -1>(like.GetShape(0), d1, d2, d3, d4),
               pto::Stride<-1, -1, -1, -1, -1>(d1 * d2 * d3 * d4, d2 * d3 * d4, d3 * d4, d4, 1));
    return true;
}

template <class T, class TileT>
inline bool ring_allreduce(const CommContext& c, const ChipTensor& data, const ChipTensor& mine,
                           const ChipTensor& sig, CollOp rop, TileT& acc, TileT& recv) noexcept {
    using namespace pto;
    const char* op = "pld.tensor.allreduce";
    const std::uint32_t nr = c.nranks, r = c.rank;
    if (nr == 1) return true;
    const std::uint32_t steps = 2 * (nr - 1), left = (r + nr - 1) % nr, right = (r + 1) % nr;
    ChipTensor s;
    if (!comm_detail::peer_view(op, c, sig, r, &s)) return false;
    if (s.ndims != 2 || s.shapes[0] < steps || s.shapes[1] < nr) {
        report_kernel_error("%s: mode ring needs a [2 * (nranks - 1), nranks] = [%u, %u] signal, got rank %u shape "
                            "[%u, %u]",
                            op, steps, nr, s.ndims, s.shapes[0], s.ndims > 1 ? s.shapes[1] : 0u);
        return false;
    }
    const std::int64_t rows = mine.shapes[0];
    const auto seg = [&](std::uint32_t k, std::int64_t* lo, std::int64_t* hi) noexcept {
        *lo = rows * k / nr;
        *hi = rows * (k + 1) / nr;
    };
    pto::comm::Signal cell;
    const auto notify = [&](std::uint32_t peer, std::uint32_t row, std::uint32_t col, std::int32_t v) noexcept {
        if (!signal_cell(cell, op, sig, peer, {static_cast<std::int64_t>(row), static_cast<std::int64_t>(col)}))
            return false;
        pto::comm::TNOTIFY(cell, v, pto::comm::NotifyOp::AtomicAdd);
        return !kernel_error_slot().set;
    };
    const auto wait = [&](std::uint32_t row, std::uint32_t col) noexcept {
        if (!signal_cell(cell, op, sig, -1, {static_cast<std::int64_t>(row), static_cast<std::int64_t>(col)}))
            return false;
        pto::comm::TWAIT(cell, 1, pto::comm::WaitCmp::GE);
        return !kernel_error_slot().set;
    };
    pipe_barrier(PIPE_ALL);
    if (!notify(right, 0, r, 1)) return false;
    GmN<T> pair[2];
    for (std::uint32_t t = 0; t < steps; ++t) {
        const bool scatter = t < nr - 1;
        const std::uint32_t k = scatter ? (r + 2 * nr - t - 1) % nr : (r + 2 * nr - (t - (nr - 1))) % nr;
        std::int64_t lo = 0, hi = 0;
        seg(k, &lo, &hi);
        if (!wait(t, left)) return false;                  // the left neighbour's step-t data is ready
        if (t > 0 && !wait(t - 1, r)) return false;       // the right neighbour read our step t - 1 data
        if (hi > lo) {
            if (!rows_gm<T>(pair[0], op, data, r, lo, hi) || !rows_gm<T>(pair[1], op, data, left, lo, hi)) return false;
            if (scatter) {
                if (!reduce<T>(op, pair, 2, 0, pair[0], rop, acc, recv)) return false;
            } else {
                pto::comm::TGET(pair[0], pair[1], acc);
                pipe_barrier(PIPE_ALL);
            }
        }
        if (!notify(left, t, left, 1)) return false;       // we read the left neighbour's step-t data
        if (t + 1 < steps && !notify(right, t + 1, r, 1)) return false;
    }
    if (!wait(steps - 1, r)) return false;
    for (std::uint32_t t = 0; t < steps; ++t)
        if (!notify(r, t, left, -1) || !notify(r, t, r, -1)) return false;
    pipe_barrier(PIPE_ALL);
    return true;
}

}  // namespace coll_detail

// Every rank's window `data` = the element-wise `op` of all ranks' `data` (mesh, or the ring
// schedule with `ring`).
template <class T, class TileT>
inline bool allreduce(const ChipTensor& data, const ChipTensor& sig, CollOp rop, bool ring, TileT& acc,
                      TileT& recv) noexcept {
    using namespace pto;
    const char* op = "pld.tensor.allreduce";
    const CommContext* c = comm_detail::context(op);
    ChipTensor mine;
    if (c == nullptr || !coll_detail::mine(op, *c, data, &mine)) return false;
    if (ring) return coll_detail::ring_allreduce<T>(*c, data, mine, sig, rop, acc, recv);
    const std::uint32_t n = c->nranks;
    const std::int64_t rows = mine.shapes[0], lo = rows * c->rank / n, hi = rows * (c->rank + 1) / n;
    coll_detail::Group<T> g;
    if (!g.alloc(op, n)) return false;
    for (std::uint32_t p = 0; p < n && hi > lo; ++p)
        if (!coll_detail::rows_gm<T>(g.g[p], op, data, p, lo, hi)) return false;
    if (!barrier(sig)) return false;
    if (hi > lo && !coll_detail::reduce<T>(op, g.g.get(), static_cast<int>(n), static_cast<int>(c->rank),
                                           g.g[c->rank], rop, acc, recv))
        return false;
    if (!barrier(sig)) return false;
    if (hi > lo) {
        pto::comm::ParallelGroup<GmN<T>> group(g.g.get(), static_cast<int>(n), static_cast<int>(c->rank));
        pto::comm::TBROADCAST(group, g.g[c->rank], acc);
        pipe_barrier(PIPE_ALL);
    }
    return barrier(sig);
}

// Every rank's window `data` = rank `root`'s.
template <class T, class TileT>
inline bool broadcast(const ChipTensor& data, const ChipTensor& sig, std::int64_t root, TileT& staging) noexcept {
    using namespace pto;
    const char* op = "pld.tensor.broadcast";
    const CommContext* c = comm_detail::context(op);
    ChipTensor mine;
    if (c == nullptr || !coll_detail::mine(op, *c, data, &mine)) return false;
    if (root < 0 || root >= static_cast<std::int64_t>(c->nranks)) {
        report_kernel_error("%s: root %lld outside the ranks [0, %u)", op, static_cast<long long>(root), c->nranks);
        return false;
    }
    coll_detail::Group<T> g;
    if (!g.alloc(op, c->nranks)) return false;
    for (std::uint32_t p = 0; p < c->nranks; ++p)
        if (!coll_detail::rows_gm<T>(g.g[p], op, data, p, 0, mine.shapes[0])) return false;
    if (!barrier(sig)) return false;
    if (root == static_cast<std::int64_t>(c->rank)) {
        pto::comm::ParallelGroup<GmN<T>> group(g.g.get(), static_cast<int>(c->nranks), static_cast<int>(root));
        pto::comm::TBROADCAST(group, g.g[root], staging);
        pipe_barrier(PIPE_ALL);
    }
    return barrier(sig);
}

namespace coll_detail {

// Block `src_block` of `input` (this rank's, `target`'s element count; blocks of its leading
// dim) or all of `input` (src_block < 0) into block `c.rank` of every rank d's window `target`
// (for d = each rank; `per_d`: block d of input goes to rank d). With counts (all_to_all_v) rank
// d's recv_counts cell c.rank = min(send_counts[d], the block's rows).
template <class T, class TileT>
inline bool scatter_blocks(const char* op, const CommContext& c, const ChipTensor& input, const ChipTensor& target,
                           const ChipTensor& sig, bool per_d, const ChipTensor* send_counts,
                           const ChipTensor* recv_counts, TileT& staging) noexcept {
    using namespace pto;
    ChipTensor mine;
    std::int64_t rows = 0;
    if (!coll_detail::mine(op, c, target, &mine) || !per_rank(op, mine, c.nranks, &rows)) return false;
    GmN<T> block, src_all, src, whole;
    if (!rows_gm<T>(block, op, target, c.rank, c.rank * rows, (c.rank + 1) * rows)) return false;
    if (!rows_gm<T>(whole, op, target, c.rank, 0, mine.shapes[0])) return false;
    if (!reshaped<T>(src_all, op, per_d ? "input" : "local_data", input, mine.dtype, per_d ? whole : block)) return false;
    if (send_counts != nullptr) {
        if (send_counts->dtype != static_cast<std::uint8_t>(DataType::INT32) || numel(*send_counts) < c.nranks) {
            report_kernel_error("%s: send_counts must be an INT32 tensor of at least %u elements, got %s with %llu", op,
                                c.nranks, dtype_label(send_counts->dtype),
                                static_cast<unsigned long long>(numel(*send_counts)));
            return false;
        }
        ChipTensor rc;
        if (!comm_detail::peer_view(op, c, *recv_counts, c.rank, &rc)) return false;
        if (numel(rc) < c.nranks) {
            report_kernel_error("%s: recv_counts has %llu elements, fewer than the %u ranks", op,
                                static_cast<unsigned long long>(numel(rc)), c.nranks);
            return false;
        }
    }
    GmN<std::int32_t> counts;
    if (send_counts != nullptr && !tensor_gm<std::int32_t>(counts, op, "send_counts", *send_counts,
                                                           static_cast<std::uint8_t>(DataType::INT32), -1))
        return false;
    if (!barrier(sig)) return false;
    for (std::uint32_t d = 0; d < c.nranks; ++d) {
        GmN<T> to;
        if (!rows_gm<T>(to, op, target, d, c.rank * rows, (c.rank + 1) * rows)) return false;
        src = src_all;
        if (per_d)  // block d: `rows * d` indices into target's leading dim (dim 5 - ndims of five)
            src = GmN<T>(src_all.data() + rows * d * src_all.GetStride(5 - static_cast<int>(mine.ndims)),
                         pto::Shape<-1, -1, -1, -1, -1>(block.GetShape(0), block.GetShape(1), block.GetShape(2),
                                                         block.GetShape(3), block.GetShape(4)),
                         pto::Stride<-1, -1, -1, -1, -1>(src_all.GetStride(0), src_all.GetStride(1),
                                                          src_all.GetStride(2), src_all.GetStride(3),
                                                          src_all.GetStride(4)));
        pto::comm::TPUT(to, src, staging);
        pipe_barrier(PIPE_ALL);
        if (send_counts != nullptr) {
            std::int64_t o[5] = {};
            std::uint64_t flat = d;
            for (int i = 4; i >= 0; --i) {
                o[i] = static_cast<std::int64_t>(flat % static_cast<std::uint64_t>(counts.GetShape(i)));
                flat /= static_cast<std::uint64_t>(counts.GetShape(i));
            }
            const std::int32_t want = counts.data()[o[0] * counts.GetStride(0) + o[1] * counts.GetStride(1) +
                                                     o[2] * counts.GetStride(2) + o[3] * counts.GetStride(3) +
                                                     o[4] * counts.GetStride(4)];
            const std::int32_t count = want < 0 ? 0 : (want > rows ? static_cast<std::int32_t>(rows) : want);
            pto::comm::Signal cell;
            std::int64_t rcell[5] = {};
            ChipTensor rc;
            if (!comm_detail::peer_view(op, c, *recv_counts, c.rank, &rc)) return false;
            flat = c.rank;
            for (int i = static_cast<int>(rc.ndims) - 1; i >= 0; --i) {
                rcell[i] = static_cast<std::int64_t>(flat % rc.shapes[i]);
                flat /= rc.shapes[i];
            }
            bool ok = false;
            switch (rc.ndims) {
                case 1: ok = signal_cell(cell, op, *recv_counts, d, {rcell[0]}); break;
                case 2: ok = signal_cell(cell, op, *recv_counts, d, {rcell[0], rcell[1]}); break;
                case 3: ok = signal_cell(cell, op, *recv_counts, d, {rcell[0], rcell[1], rcell[2]}); break;
                case 4: ok = signal_cell(cell, op, *recv_counts, d, {rcell[0], rcell[1], rcell[2], rcell[3]}); break;
                default:
                    ok = signal_cell(cell, op, *recv_counts, d, {rcell[0], rcell[1], rcell[2], rcell[3], rcell[4]});
            }
            if (!ok) return false;
            pto::comm::TNOTIFY(cell, count, pto::comm::NotifyOp::Set);
        }
        if (kernel_error_slot().set) return false;
    }
    return barrier(sig);
}

}  // namespace coll_detail

// Row block r of every rank's window `target` = rank r's `local` (one block's elements).
template <class T, class TileT>
inline bool allgather(const ChipTensor& local, const ChipTensor& target, const ChipTensor& sig,
                      TileT& staging) noexcept {
    const char* op = "pld.tensor.allgather";
    const CommContext* c = comm_detail::context(op);
    return c != nullptr &&
           coll_detail::scatter_blocks<T>(op, *c, local, target, sig, false, nullptr, nullptr, staging);
}

// Block d of every rank r's `input` lands in block r of rank d's window `target`.
template <class T, class TileT>
inline bool all_to_all(const ChipTensor& input, const ChipTensor& target, const ChipTensor& sig,
                       TileT& staging) noexcept {
    const char* op = "pld.tensor.all_to_all";
    const CommContext* c = comm_detail::context(op);
    return c != nullptr && coll_detail::scatter_blocks<T>(op, *c, input, target, sig, true, nullptr, nullptr, staging);
}

// all_to_all, and rank d's recv_counts cell r = min(send_counts[d], the block's rows) of rank r.
template <class T, class TileT>
inline bool all_to_all_v(const ChipTensor& input, const ChipTensor& target, const ChipTensor& sig,
                         const ChipTensor& send_counts, const ChipTensor& recv_counts, TileT& staging) noexcept {
    const char* op = "pld.tensor.all_to_all_v";
    const CommContext* c = comm_detail::context(op);
    return c != nullptr &&
           coll_detail::scatter_blocks<T>(op, *c, input, target, sig, true, &send_counts, &recv_counts, staging);
}

// Row block r of rank r's window `data` = the element-wise `op` of block r of every rank's.
template <class T, class TileT>
inline bool reduce_scatter(const ChipTensor& data, const ChipTensor& sig, CollOp rop, TileT& acc,
                           TileT& recv) noexcept {
    const char* op = "pld.tensor.reduce_scatter";
    const CommContext* c = comm_detail::context(op);
    ChipTensor mine;
    std::int64_t rows = 0;
    if (c == nullptr || !coll_detail::mine(op, *c, data, &mine) || !coll_detail::per_rank(op, mine, c->nranks, &rows))
        return false;
    coll_detail::Group<T> g;
    if (!g.alloc(op, c->nranks)) return false;
    for (std::uint32_t p = 0; p < c->nranks; ++p)
        if (!coll_detail::rows_gm<T>(g.g[p], op, data, p, c->rank * rows, (c->rank + 1) * rows)) return false;
    if (!barrier(sig)) return false;
    if (rows > 0 && !coll_detail::reduce<T>(op, g.g.get(), static_cast<int>(c->nranks), static_cast<int>(c->rank),
                                            g.g[c->rank], rop, acc, recv))
        return false;
    return barrier(sig);
}

}  // namespace kernel
}  // namespace simpler
