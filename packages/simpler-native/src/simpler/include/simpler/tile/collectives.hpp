// Collectives of multi-chip programs (pld.tensor.allreduce/broadcast/allgather/reduce_scatter/
// all_to_all/all_to_all_v in pypto), sub-region put/get, and deferred waits
// (pld.system.defer_wait). API reference: docs/tile-interface.md, "Cross-rank operations".
//
// Every collective is built from the cross-rank operations of simpler/tile/comm.hpp (reads and
// writes of a peer's window, notify, wait, barrier), so it runs on both comm paths: on the
// shared-memory path a peer access is a load or store on the mapped segment, on the host path
// it is one request to the rank's host process per peer run. A collective works on the flat
// row-major elements of its window operands; every rank must call it with the same shapes,
// dtype, signal and arguments. Signals are left as found (all zero), so one signal serves any
// number of calls. Errors are reported through simpler::report_kernel_error ("tile <op>: ...").
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "simpler/tile/comm.hpp"

namespace simpler {
namespace tile {

// The element-wise combination of allreduce / reduce_scatter.
enum class ReduceOp : std::uint8_t { Sum = 0, Max = 1, Min = 2, Prod = 3 };

namespace coll_detail {

using comm_detail::elem_bytes;
using comm_detail::index_of;
using comm_detail::numel;

// A malloc'ed byte buffer, freed on scope exit.
class Bytes {
public:
    Bytes() noexcept = default;
    Bytes(const Bytes&) = delete;
    Bytes& operator=(const Bytes&) = delete;
    ~Bytes() { std::free(p_); }
    bool alloc(const char* op, std::uint64_t n) noexcept {
        p_ = static_cast<unsigned char*>(std::malloc(n == 0 ? 1 : n));
        if (p_ == nullptr)
            report_kernel_error("tile %s: out of memory for %llu bytes", op, static_cast<unsigned long long>(n));
        return p_ != nullptr;
    }
    unsigned char* get() const noexcept { return p_; }

private:
    unsigned char* p_ = nullptr;
};

inline unsigned char* mem(const ChipTensor& t) noexcept {
    return reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(t.buffer.addr));
}

// Elements [begin, begin + n) (flat, row-major) of this rank's tensor `t` packed into `out`.
inline void pack(const ChipTensor& t, std::uint64_t begin, std::uint64_t n, unsigned char* out) noexcept {
    const std::uint64_t es = elem_bytes(t);
    for (std::uint64_t i = 0; i < n; ++i) std::memcpy(out + i * es, mem(t) + index_of(t, begin + i) * es, es);
}

// Elements [begin, begin + n) of this rank's tensor `t` = the packed `in`.
inline void unpack(const ChipTensor& t, std::uint64_t begin, std::uint64_t n, const unsigned char* in) noexcept {
    const std::uint64_t es = elem_bytes(t);
    for (std::uint64_t i = 0; i < n; ++i) std::memcpy(mem(t) + index_of(t, begin + i) * es, in + i * es, es);
}

// A window operand: this rank's view and its window index.
struct Win {
    ChipTensor mine;
    int wi = -1;
};

inline bool window(const char* op, const CommContext& c, const ChipTensor& t, Win* w) noexcept {
    if (!comm_detail::peer_view(op, c, t, c.rank, &w->mine, &w->wi)) return false;
    return comm_detail::extent_ok(op, w->mine, "window");
}

// Elements [begin, begin + n) of rank `peer`'s `w` packed into `out`.
inline bool read(const char* op, const CommContext& c, const Win& w, std::int64_t peer, std::uint64_t begin,
                 std::uint64_t n, unsigned char* out) noexcept {
    if (n == 0) return true;
    ChipTensor v = w.mine;
    v.buffer.addr = w.mine.buffer.addr + (static_cast<std::uint64_t>(peer) - c.rank) * c.windows[w.wi].stride;
    if (!comm_detail::on_host(c) || peer == static_cast<std::int64_t>(c.rank)) {
        pack(v, begin, n, out);
        return true;
    }
    const std::uint64_t es = elem_bytes(v);
    comm_detail::HostRuns runs;
    if (!runs.reserve(op, n * es)) return false;
    for (std::uint64_t i = 0; i < n; ++i)
        if (runs.add(op, index_of(v, begin + i) * es, es) == nullptr) return false;
    if (!runs.call(op, c, CommHostOp::Read, peer, w.wi)) return false;
    std::memcpy(out, runs.data(), n * es);
    return true;
}

// Elements [begin, begin + n) of rank `peer`'s `w` = the packed `in`.
inline bool write(const char* op, const CommContext& c, const Win& w, std::int64_t peer, std::uint64_t begin,
                  std::uint64_t n, const unsigned char* in) noexcept {
    if (n == 0) return true;
    ChipTensor v = w.mine;
    v.buffer.addr = w.mine.buffer.addr + (static_cast<std::uint64_t>(peer) - c.rank) * c.windows[w.wi].stride;
    if (!comm_detail::on_host(c) || peer == static_cast<std::int64_t>(c.rank)) {
        unpack(v, begin, n, in);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        return true;
    }
    const std::uint64_t es = elem_bytes(v);
    comm_detail::HostRuns runs;
    if (!runs.reserve(op, n * es)) return false;
    for (std::uint64_t i = 0; i < n; ++i) {
        unsigned char* at = runs.add(op, index_of(v, begin + i) * es, es);
        if (at == nullptr) return false;
        std::memcpy(at, in + i * es, es);
    }
    return runs.call(op, c, CommHostOp::Write, peer, w.wi, v.dtype);
}

template <class T>
inline void combine_as(unsigned char* acc, const unsigned char* in, std::uint64_t n, ReduceOp op) noexcept {
    for (std::uint64_t i = 0; i < n; ++i) {
        T a, b;
        std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
        std::memcpy(&b, in + i * sizeof(T), sizeof(T));
        const auto x = to_compute(a), y = to_compute(b);
        decltype(to_compute(a)) r;
        switch (op) {
            case ReduceOp::Sum: r = static_cast<decltype(r)>(x + y); break;
            case ReduceOp::Max: r = x < y ? y : x; break;
            case ReduceOp::Min: r = y < x ? y : x; break;
            default: r = static_cast<decltype(r)>(x * y); break;
        }
        const T out = from_compute<T>(r);
        std::memcpy(acc + i * sizeof(T), &out, sizeof(T));
    }
}

// acc[i] = acc[i] (op) in[i] for n packed elements of `dtype`.
inline void combine(std::uint8_t dtype, unsigned char* acc, const unsigned char* in, std::uint64_t n,
                    ReduceOp op) noexcept {
    switch (static_cast<DataType>(dtype)) {
        case DataType::FLOAT32: combine_as<float>(acc, in, n, op); break;
        case DataType::FLOAT16: combine_as<half>(acc, in, n, op); break;
        case DataType::BFLOAT16: combine_as<bfloat16>(acc, in, n, op); break;
        case DataType::INT8: combine_as<std::int8_t>(acc, in, n, op); break;
        case DataType::INT16: combine_as<std::int16_t>(acc, in, n, op); break;
        case DataType::INT32: combine_as<std::int32_t>(acc, in, n, op); break;
        default: break;
    }
}

inline bool reducible(const char* op, const ChipTensor& t, ReduceOp rop) noexcept {
    if (static_cast<unsigned>(rop) > static_cast<unsigned>(ReduceOp::Prod)) {
        report_kernel_error("tile %s: reduce op %u is not Sum, Max, Min or Prod", op, static_cast<unsigned>(rop));
        return false;
    }
    switch (static_cast<DataType>(t.dtype)) {
        case DataType::FLOAT32: case DataType::FLOAT16: case DataType::BFLOAT16: case DataType::INT8:
        case DataType::INT16: case DataType::INT32: return true;
        default: break;
    }
    report_kernel_error("tile %s: reduces FP32/FP16/BF16/INT32/INT16/INT8 windows, got %s", op,
                        detail::dtype_name(t.dtype));
    return false;
}

// The rows of `t` split evenly between the ranks: `*per` elements each.
inline bool per_rank(const char* op, const ChipTensor& t, std::uint32_t nranks, const char* what,
                     std::uint64_t* per) noexcept {
    const std::uint64_t n = numel(t);
    if (t.ndims < 1 || t.shapes[0] % nranks != 0) {
        report_kernel_error("tile %s: %s's leading dim %u is not a multiple of the %u ranks", op, what,
                            t.ndims ? t.shapes[0] : 0u, nranks);
        return false;
    }
    *per = n / nranks;
    return true;
}

inline bool same_dtype(const char* op, const ChipTensor& a, const ChipTensor& b, const char* an,
                       const char* bn) noexcept {
    if (a.dtype == b.dtype) return true;
    report_kernel_error("tile %s: %s is %s but %s is %s", op, an, detail::dtype_name(a.dtype), bn,
                        detail::dtype_name(b.dtype));
    return false;
}

// The mesh reduction of elements [begin, begin + n) of `w` over all ranks into `acc`.
inline bool reduce_from_all(const char* op, const CommContext& c, const Win& w, std::uint64_t begin,
                            std::uint64_t n, ReduceOp rop, unsigned char* acc) noexcept {
    Bytes tmp;
    if (!tmp.alloc(op, n * elem_bytes(w.mine))) return false;
    pack(w.mine, begin, n, acc);
    for (std::uint32_t p = 0; p < c.nranks; ++p) {
        if (p == c.rank) continue;
        if (!read(op, c, w, p, begin, n, tmp.get())) return false;
        combine(w.mine.dtype, acc, tmp.get(), n, rop);
    }
    return true;
}

// The ring schedule of allreduce: 2 (nranks - 1) steps over nranks segments; in step t rank r
// reads one segment of its left neighbour (reduce-scatter steps add it into its own, allgather
// steps copy it). Signal cell [t, left] counts the left neighbour's "step t's data is ready",
// cell [t, r] the right neighbour's "step t's read is done"; each gets exactly 1 per call and
// is taken back at the end, so the signal is all zero again afterwards.
inline bool ring_allreduce(const CommContext& c, const Win& w, const ChipTensor& sig, ReduceOp rop) noexcept {
    const char* op = "allreduce";
    const std::uint32_t nr = c.nranks, r = c.rank;
    if (nr == 1) return true;
    const std::uint32_t steps = 2 * (nr - 1), left = (r + nr - 1) % nr, right = (r + 1) % nr;
    ChipTensor s;
    if (!comm_detail::peer_view(op, c, sig, r, &s)) return false;
    if (s.ndims != 2 || s.shapes[0] < steps || s.shapes[1] < nr) {
        report_kernel_error("tile allreduce: mode ring needs a [2 * (nranks - 1), nranks] = [%u, %u] signal, got "
                            "rank %u shape [%u, %u]",
                            steps, nr, s.ndims, s.shapes[0], s.ndims > 1 ? s.shapes[1] : 0u);
        return false;
    }
    const std::uint64_t n = numel(w.mine), es = elem_bytes(w.mine);
    const auto seg_begin = [&](std::uint32_t k) noexcept { return n * k / nr; };
    Bytes tmp, acc;
    if (!tmp.alloc(op, (n / nr + 1) * es) || !acc.alloc(op, (n / nr + 1) * es)) return false;
    const auto cell = [](std::uint32_t row, std::uint32_t col) noexcept {
        return Offsets{static_cast<std::int64_t>(row), static_cast<std::int64_t>(col)};
    };
    if (!notify(sig, right, cell(0, r), 1, NotifyOp::AtomicAdd)) return false;
    for (std::uint32_t t = 0; t < steps; ++t) {
        const bool scatter = t < nr - 1;
        const std::uint32_t k = scatter ? (r + 2 * nr - t - 1) % nr : (r + 2 * nr - (t - (nr - 1))) % nr;
        const std::uint64_t b = seg_begin(k), len = seg_begin(k + 1) - b;
        if (!wait(sig, cell(t, left), 1, WaitCmp::Ge)) return false;
        if (!read(op, c, w, left, b, len, tmp.get())) return false;
        if (!notify(sig, left, cell(t, left), 1, NotifyOp::AtomicAdd)) return false;
        if (t > 0 && !wait(sig, cell(t - 1, r), 1, WaitCmp::Ge)) return false;
        if (scatter) {
            pack(w.mine, b, len, acc.get());
            combine(w.mine.dtype, acc.get(), tmp.get(), len, rop);
            unpack(w.mine, b, len, acc.get());
        } else {
            unpack(w.mine, b, len, tmp.get());
        }
        if (t + 1 < steps && !notify(sig, right, cell(t + 1, r), 1, NotifyOp::AtomicAdd)) return false;
    }
    if (!wait(sig, cell(steps - 1, r), 1, WaitCmp::Ge)) return false;
    for (std::uint32_t t = 0; t < steps; ++t)
        if (!notify(sig, r, cell(t, left), -1, NotifyOp::AtomicAdd) ||
            !notify(sig, r, cell(t, r), -1, NotifyOp::AtomicAdd))
            return false;
    return true;
}

}  // namespace coll_detail

// Every rank's `data` = the element-wise `op` of all ranks' `data`. Mesh (ring = false): a
// barrier on `sig` (one cell per rank: [nranks] or [nranks, k]), every rank reads every peer's
// window and reduces, a second barrier, then each writes its result. Ring: the ring schedule
// above on a [2 (nranks - 1), nranks] signal.
inline bool allreduce(const ChipTensor& data, const ChipTensor& sig, ReduceOp op, bool ring = false) noexcept {
    const CommContext* c = comm_detail::context("allreduce");
    coll_detail::Win w;
    if (c == nullptr || !coll_detail::window("allreduce", *c, data, &w) ||
        !coll_detail::reducible("allreduce", w.mine, op))
        return false;
    if (ring) return coll_detail::ring_allreduce(*c, w, sig, op);
    const std::uint64_t n = coll_detail::numel(w.mine);
    coll_detail::Bytes acc;
    if (!acc.alloc("allreduce", n * coll_detail::elem_bytes(w.mine)) || !barrier(sig)) return false;
    if (!coll_detail::reduce_from_all("allreduce", *c, w, 0, n, op, acc.get()) || !barrier(sig)) return false;
    coll_detail::unpack(w.mine, 0, n, acc.get());
    return true;
}

// Every rank's `data` = rank `root`'s `data`.
inline bool broadcast(const ChipTensor& data, const ChipTensor& sig, std::int64_t root) noexcept {
    const CommContext* c = comm_detail::context("broadcast");
    coll_detail::Win w;
    if (c == nullptr || !coll_detail::window("broadcast", *c, data, &w)) return false;
    if (root < 0 || root >= static_cast<std::int64_t>(c->nranks)) {
        report_kernel_error("tile broadcast: root %lld outside the ranks [0, %u)", static_cast<long long>(root),
                            c->nranks);
        return false;
    }
    const std::uint64_t n = coll_detail::numel(w.mine);
    coll_detail::Bytes tmp;
    if (!tmp.alloc("broadcast", n * coll_detail::elem_bytes(w.mine)) || !barrier(sig)) return false;
    if (root != static_cast<std::int64_t>(c->rank)) {
        if (!coll_detail::read("broadcast", *c, w, root, 0, n, tmp.get())) return false;
    }
    if (!barrier(sig)) return false;
    if (root != static_cast<std::int64_t>(c->rank)) coll_detail::unpack(w.mine, 0, n, tmp.get());
    return true;
}

// Row block r (of nranks equal blocks of the leading dim) of every rank's `target` = rank r's
// `local` (any tensor of that rank with one block's elements).
inline bool allgather(const ChipTensor& local, const ChipTensor& target, const ChipTensor& sig) noexcept {
    const char* op = "allgather";
    const CommContext* c = comm_detail::context(op);
    coll_detail::Win w;
    std::uint64_t per = 0;
    if (c == nullptr || !coll_detail::window(op, *c, target, &w) ||
        !coll_detail::per_rank(op, w.mine, c->nranks, "target", &per) ||
        !coll_detail::same_dtype(op, local, w.mine, "local_data", "target") ||
        !comm_detail::extent_ok(op, local, "local_data"))
        return false;
    if (coll_detail::numel(local) != per) {
        report_kernel_error("tile allgather: local_data has %llu elements, expected one block of target: %llu",
                            static_cast<unsigned long long>(coll_detail::numel(local)),
                            static_cast<unsigned long long>(per));
        return false;
    }
    coll_detail::Bytes buf;
    if (!buf.alloc(op, per * coll_detail::elem_bytes(local)) || !barrier(sig)) return false;
    coll_detail::pack(local, 0, per, buf.get());
    for (std::uint32_t p = 0; p < c->nranks; ++p)
        if (!coll_detail::write(op, *c, w, p, per * c->rank, per, buf.get())) return false;
    return barrier(sig);
}

// Row block r of rank r's `data` = the element-wise `op` of row block r of every rank's `data`.
inline bool reduce_scatter(const ChipTensor& data, const ChipTensor& sig, ReduceOp op) noexcept {
    const char* name = "reduce_scatter";
    const CommContext* c = comm_detail::context(name);
    coll_detail::Win w;
    std::uint64_t per = 0;
    if (c == nullptr || !coll_detail::window(name, *c, data, &w) || !coll_detail::reducible(name, w.mine, op) ||
        !coll_detail::per_rank(name, w.mine, c->nranks, "target", &per))
        return false;
    coll_detail::Bytes acc;
    if (!acc.alloc(name, per * coll_detail::elem_bytes(w.mine)) || !barrier(sig)) return false;
    if (!coll_detail::reduce_from_all(name, *c, w, per * c->rank, per, op, acc.get()) || !barrier(sig)) return false;
    coll_detail::unpack(w.mine, per * c->rank, per, acc.get());
    return true;
}

namespace coll_detail {

// Block d of this rank's `input` (rows, leading dim split into nranks blocks) into block r of
// rank d's `target`; with `send_counts`/`recv_counts` (all_to_all_v) the count of block d's
// valid rows, clamped to the block, is also set in rank d's recv_counts cell r.
inline bool exchange(const char* op, const ChipTensor& input, const ChipTensor& target, const ChipTensor& sig,
                     const ChipTensor* send_counts, const ChipTensor* recv_counts) noexcept {
    const CommContext* c = comm_detail::context(op);
    Win w;
    std::uint64_t per = 0;
    if (c == nullptr || !window(op, *c, target, &w) || !per_rank(op, w.mine, c->nranks, "target", &per) ||
        !same_dtype(op, input, w.mine, "input", "target") || !comm_detail::extent_ok(op, input, "input"))
        return false;
    if (numel(input) != numel(w.mine)) {
        report_kernel_error("tile %s: input has %llu elements but target has %llu", op,
                            static_cast<unsigned long long>(numel(input)),
                            static_cast<unsigned long long>(numel(w.mine)));
        return false;
    }
    const std::uint64_t block_rows = w.mine.shapes[0] / c->nranks;
    if (send_counts != nullptr) {
        if (send_counts->dtype != static_cast<std::uint8_t>(DataType::INT32) || numel(*send_counts) < c->nranks ||
            !comm_detail::extent_ok(op, *send_counts, "send_counts")) {
            report_kernel_error("tile %s: send_counts must be an INT32 tensor of at least %u elements, got %s "
                                "with %llu",
                                op, c->nranks, detail::dtype_name(send_counts->dtype),
                                static_cast<unsigned long long>(numel(*send_counts)));
            return false;
        }
        ChipTensor rc;
        if (!comm_detail::peer_view(op, *c, *recv_counts, c->rank, &rc)) return false;
        if (numel(rc) < c->nranks) {
            report_kernel_error("tile %s: recv_counts has %llu elements, fewer than the %u ranks", op,
                                static_cast<unsigned long long>(numel(rc)), c->nranks);
            return false;
        }
    }
    Bytes buf;
    if (!buf.alloc(op, per * elem_bytes(input)) || !barrier(sig)) return false;
    for (std::uint32_t d = 0; d < c->nranks; ++d) {
        pack(input, per * d, per, buf.get());
        if (!write(op, *c, w, d, per * c->rank, per, buf.get())) return false;
        if (send_counts != nullptr) {
            const std::int32_t want =
                reinterpret_cast<const std::int32_t*>(mem(*send_counts))[index_of(*send_counts, d)];
            const std::int64_t count =
                want < 0 ? 0 : (static_cast<std::uint64_t>(want) > block_rows ? block_rows : want);
            if (!notify(*recv_counts, d, comm_detail::unravel(*recv_counts, c->rank), count, NotifyOp::Set))
                return false;
        }
    }
    return barrier(sig);
}

}  // namespace coll_detail

// Block d of every rank r's `input` lands in block r of rank d's `target` (the leading dims split
// into nranks equal blocks; `input` any tensor of this rank with target's element count).
inline bool all_to_all(const ChipTensor& input, const ChipTensor& target, const ChipTensor& sig) noexcept {
    return coll_detail::exchange("all_to_all", input, target, sig, nullptr, nullptr);
}

// all_to_all, and rank d's recv_counts cell r (its row-major element r) = min(send_counts[d],
// the block's rows) of rank r: how many rows of block r are valid. The rows past it are copied
// too (the block's size is fixed) but hold whatever the sender had there.
inline bool all_to_all_v(const ChipTensor& input, const ChipTensor& target, const ChipTensor& sig,
                         const ChipTensor& send_counts, const ChipTensor& recv_counts) noexcept {
    return coll_detail::exchange("all_to_all_v", input, target, sig, &send_counts, &recv_counts);
}

namespace coll_detail {

// The window `t[offsets : offsets + shape]` as a tensor of rank `shape.n` (one offset and one
// extent per dim of t), bounds-checked against t's shape.
inline bool region(const char* op, const char* what, const ChipTensor& t, const Offsets& offsets,
                   const Offsets& shape, ChipTensor* out) noexcept {
    if (offsets.n != static_cast<int>(t.ndims) || shape.n != static_cast<int>(t.ndims)) {
        report_kernel_error("tile %s: %s has rank %u but %d offsets and %d extents were given", op, what, t.ndims,
                            offsets.n, shape.n);
        return false;
    }
    *out = t;
    for (std::uint32_t i = 0; i < t.ndims; ++i) {
        if (offsets.v[i] < 0 || shape.v[i] < 0 ||
            static_cast<std::uint64_t>(offsets.v[i] + shape.v[i]) > t.shapes[i]) {
            report_kernel_error("tile %s: %s region [%lld, %lld) of dim %u is outside its extent %u", op, what,
                                static_cast<long long>(offsets.v[i]),
                                static_cast<long long>(offsets.v[i] + shape.v[i]), i, t.shapes[i]);
            return false;
        }
        out->start_offset += static_cast<std::uint64_t>(offsets.v[i]) * t.strides[i];
        out->shapes[i] = static_cast<std::uint32_t>(shape.v[i]);
    }
    return true;
}

}  // namespace coll_detail

// put / get of the regions dst[dst_offsets : + shape] and src[src_offsets : + shape].
inline bool put(const ChipTensor& dst, std::int64_t peer, const ChipTensor& src, const Offsets& dst_offsets,
                const Offsets& src_offsets, const Offsets& shape, AtomicType atomic = AtomicType::None) noexcept {
    ChipTensor d, s;
    if (!coll_detail::region("put", "dst", dst, dst_offsets, shape, &d) ||
        !coll_detail::region("put", "src", src, src_offsets, shape, &s))
        return false;
    return put(d, peer, s, atomic);
}
inline bool get(const ChipTensor& dst, std::int64_t peer, const ChipTensor& src, const Offsets& dst_offsets,
                const Offsets& src_offsets, const Offsets& shape) noexcept {
    ChipTensor d, s;
    if (!coll_detail::region("get", "dst", dst, dst_offsets, shape, &d) ||
        !coll_detail::region("get", "src", src, src_offsets, shape, &s))
        return false;
    return get(d, peer, s);
}

// The deferred waits of one kernel (pld.system.defer_wait): each `add` records a condition on
// this rank's signal cell; the kernel goes on, and the conditions are waited for (as `wait`, with
// its timeout) when the object is destroyed at the kernel's end, so the task completes only once
// they hold. The kernel emitter declares one at the top of a kernel that defers waits.
class DeferredWaits {
public:
    static constexpr int kMax = 64;
    DeferredWaits() noexcept = default;
    DeferredWaits(const DeferredWaits&) = delete;
    DeferredWaits& operator=(const DeferredWaits&) = delete;
    bool add(const ChipTensor& sig, const Offsets& offsets, std::int64_t expected, WaitCmp cmp) noexcept {
        if (n_ == kMax) {
            report_kernel_error("tile defer_wait: more than %d deferred waits in one kernel", kMax);
            return false;
        }
        ChipTensor v;
        std::uint64_t idx = 0;
        const CommContext* c = comm_detail::context("defer_wait");
        if (c == nullptr || !comm_detail::peer_view("defer_wait", *c, sig, c->rank, &v) ||
            !comm_detail::element("defer_wait", v, offsets, &idx))
            return false;
        e_[n_++] = Entry{sig, offsets, expected, cmp};
        return true;
    }
    ~DeferredWaits() {
        for (int i = 0; i < n_; ++i)
            if (!wait(e_[i].sig, e_[i].offsets, e_[i].expected, e_[i].cmp)) return;
    }

private:
    struct Entry {
        ChipTensor sig;
        Offsets offsets;
        std::int64_t expected;
        WaitCmp cmp;
    };
    Entry e_[kMax];
    int n_ = 0;
};

}  // namespace tile
}  // namespace simpler
