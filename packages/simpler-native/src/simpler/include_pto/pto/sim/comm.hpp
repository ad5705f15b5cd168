// The communication instructions of PTO-ISA (namespace pto::comm): TPUT, TGET, TNOTIFY, TWAIT,
// TTEST, TBROADCAST, TGATHER, TSCATTER, TREDUCE, with the types they take (ParallelGroup,
// Signal, NotifyOp, WaitCmp, ReduceOp). Part of our PTO-ISA CPU backend, written from the public
// reference pages (docs/isa/comm/*.md of pto-isa): names, template parameters, operand order and
// semantics; docs/tile-interface.md, "Communication instructions", lists what we implement.
//
// Global tensors name other ranks' memory by address (a peer's window, simpler/comm_context.hpp);
// pto/sim/comm_route.hpp reads and writes such an address directly on the shared-memory path
// and through the rank's host process on the host path. The staging tiles the reference
// requires (the device moves GM -> UB -> GM through them) must be placed; the simulator moves
// the data without them and leaves their bytes alone. Errors are reported through the kernel
// error channel ("TPUT: ...") and the instruction does nothing more.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "pto/sim/comm_route.hpp"
#include "pto/sim/tile.hpp"
#include "pto/sim/types.hpp"

namespace pto {
namespace comm {

enum class NotifyOp : std::uint8_t { AtomicAdd = 0, Set = 1 };
enum class WaitCmp : std::uint8_t { EQ = 0, NE = 1, GT = 2, GE = 3, LT = 4, LE = 5 };
enum class ReduceOp : std::uint8_t { Sum = 0, Max = 1, Min = 2 };

// One global tensor per rank of a group (tensors[r]: rank r's buffer as the caller sees it);
// rootIdx is the calling rank's index for the root-initiated collectives.
template <typename GlobalData>
struct ParallelGroup {
    using value_type = GlobalData;
    GlobalData* tensors{nullptr};
    int nranks{0};
    int rootIdx{-1};

    constexpr ParallelGroup() = default;
    constexpr ParallelGroup(GlobalData* tensorArray, int size, int root) noexcept
        : tensors(tensorArray), nranks(size), rootIdx(root) {}
    static constexpr ParallelGroup Create(GlobalData* tensorArray, int size, int root) noexcept {
        return ParallelGroup(tensorArray, size, root);
    }
    constexpr int GetRootIdx() const noexcept { return rootIdx; }
    constexpr int GetSize() const noexcept { return nranks; }
    constexpr bool empty() const noexcept { return nranks == 0; }
    GlobalData& operator[](int r) noexcept { return tensors[r]; }
    const GlobalData& operator[](int r) const noexcept { return tensors[r]; }
};

// A single INT32 signal cell.
using Signal = GlobalTensor<std::int32_t, Shape<1, 1, 1, 1, 1>, Stride<1, 1, 1, 1, 1>, Layout::ND>;

namespace detail {

using ::pto::sim::comm::compute_t;
using ::pto::sim::comm::narrow;
using ::pto::sim::comm::numel;
using ::pto::sim::comm::widen;

template <class TileT>
inline bool staged(const char* op, const TileT& t) noexcept {
    if (t.data() != nullptr) return true;
    ::simpler::report_kernel_error("%s: the staging tile was not placed by TASSIGN", op);
    return false;
}

template <class A, class B>
inline bool same_shape(const char* op, const char* an, A& a, const char* bn, B& b) noexcept {
    for (int i = 0; i < 5; ++i) {
        if (a.GetShape(i) != b.GetShape(i)) {
            ::simpler::report_kernel_error("%s: %s and %s shapes differ in dim %d (%lld and %lld)", op, an, bn, i,
                                           static_cast<long long>(a.GetShape(i)), static_cast<long long>(b.GetShape(i)));
            return false;
        }
    }
    return true;
}

// A heap buffer of `n` elements of T, freed on scope exit.
template <class T>
class Buf {
public:
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    explicit Buf(std::uint64_t n) noexcept : p_(static_cast<unsigned char*>(std::malloc(n == 0 ? 1 : n * sizeof(T)))) {}
    ~Buf() { std::free(p_); }
    bool ok(const char* op) const noexcept {
        if (p_ == nullptr) ::simpler::report_kernel_error("%s: out of memory", op);
        return p_ != nullptr;
    }
    unsigned char* bytes() const noexcept { return p_; }
    T get(std::uint64_t i) const noexcept {
        T v;
        std::memcpy(&v, p_ + i * sizeof(T), sizeof(T));
        return v;
    }
    void set(std::uint64_t i, T v) noexcept { std::memcpy(p_ + i * sizeof(T), &v, sizeof(T)); }

private:
    unsigned char* p_;
};

// dst = src (or dst += src): the copy of TPUT and TGET.
template <AtomicType atomic, class D, class S>
inline void copy(const char* op, D& dst, S& src) noexcept {
    using T = typename S::DType;
    if (!same_shape(op, "destination", dst, "source", src)) return;
    Buf<T> b(numel(src));
    if (!b.ok(op) || !::pto::sim::comm::read(op, src, b.bytes())) return;
    ::pto::sim::comm::write(op, dst, b.bytes(), atomic == AtomicType::AtomicAdd);
}

inline bool compare(std::int32_t v, std::int32_t want, WaitCmp cmp) noexcept {
    switch (cmp) {
        case WaitCmp::EQ: return v == want;
        case WaitCmp::NE: return v != want;
        case WaitCmp::GT: return v > want;
        case WaitCmp::GE: return v >= want;
        case WaitCmp::LT: return v < want;
        case WaitCmp::LE: return v <= want;
    }
    return false;
}

inline const char* cmp_text(WaitCmp cmp) noexcept {
    static const char* const names[] = {"==", "!=", ">", ">=", "<", "<="};
    const auto i = static_cast<unsigned>(cmp);
    return i < 6 ? names[i] : "?";
}

// The signal cells of a TWAIT/TTEST: this process's memory (a peer's is reported).
template <class G>
inline bool local_signal(const char* op, G& g) noexcept {
    ::pto::sim::comm::Remote at;
    if (numel(g) == 0 || !::pto::sim::comm::remote(g.data(), &at)) return true;
    ::simpler::report_kernel_error("%s: the signal lies in rank %u's window; a rank waits on its own signals", op,
                                   at.peer);
    return false;
}

// The first cell of `g` that fails the condition (its flat index and value), or false.
template <class G>
inline bool unmet(G& g, std::int32_t want, WaitCmp cmp, std::uint64_t* at, std::int32_t* seen) noexcept {
    bool found = false;
    ::pto::sim::comm::for_each(g, [&](std::uint64_t i, std::int32_t* p) {
        if (found) return;
        const std::int32_t v = __atomic_load_n(p, __ATOMIC_SEQ_CST);
        if (!compare(v, want, cmp)) {
            found = true;
            *at = i;
            *seen = v;
        }
    });
    return found;
}

// Where signal cell `p` lies, for a report: "element E of window buffer W" or its address.
inline void describe_cell(char* out, std::size_t n, const void* p) noexcept {
    const ::simpler::CommContext* c = ::pto::sim::comm::context();
    const std::uint64_t a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
    if (c != nullptr) {
        const int w = ::simpler::comm_window_of(*c, a);
        if (w >= 0) {
            const std::uint64_t mine = c->windows[w].base + static_cast<std::uint64_t>(c->rank) * c->windows[w].stride;
            std::snprintf(out, n, "element %llu of window buffer %d",
                          static_cast<unsigned long long>((a - mine) / sizeof(std::int32_t)), w);
            return;
        }
    }
    std::snprintf(out, n, "at %#llx", static_cast<unsigned long long>(a));
}

template <class T>
inline T combine(T a, T b, ReduceOp op) noexcept {
    const compute_t<T> x = widen(a), y = widen(b);
    switch (op) {
        case ReduceOp::Sum: return narrow<T>(static_cast<compute_t<T>>(x + y));
        case ReduceOp::Max: return narrow<T>(x < y ? y : x);
        case ReduceOp::Min: return narrow<T>(y < x ? y : x);
    }
    return a;
}

}  // namespace detail

// TPUT(dst, src, staging): dst (another rank's memory) = src (this rank's), element by element
// over the global tensors' shape (equal shapes); AtomicAdd adds each element atomically
// (16-bit floats in float, rounded once).
template <AtomicType atomicType = AtomicType::AtomicNone, typename GlobalDstData, typename GlobalSrcData,
          typename TileData, typename... WaitEvents>
PTO_INST RecordEvent TPUT(GlobalDstData& dst, GlobalSrcData& src, TileData& staging, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(std::is_same<typename GlobalDstData::RawDType, typename GlobalSrcData::RawDType>::value,
                  "TPUT: source and destination element types differ");
    static_assert(std::is_same<typename TileData::DType, typename GlobalSrcData::RawDType>::value,
                  "TPUT: the staging tile's element type differs from the data's");
    static_assert(GlobalDstData::layout == GlobalSrcData::layout, "TPUT: source and destination layouts differ");
    if (detail::staged("TPUT", staging)) detail::copy<atomicType>("TPUT", dst, src);
    return {};
}
template <AtomicType atomicType = AtomicType::AtomicNone, typename GlobalDstData, typename GlobalSrcData,
          typename TileData, typename... WaitEvents>
PTO_INST RecordEvent TPUT(GlobalDstData& dst, GlobalSrcData& src, TileData& ping, TileData& pong,
                          WaitEvents&... events) {
    if (detail::staged("TPUT", pong)) TPUT<atomicType>(dst, src, ping, events...);
    return {};
}
template <typename GlobalDstData, typename GlobalSrcData, typename TileData, typename... WaitEvents>
PTO_INST RecordEvent TPUT(GlobalDstData& dst, GlobalSrcData& src, TileData& staging, AtomicType atomicType,
                          WaitEvents&... events) {
    if (atomicType == AtomicType::AtomicAdd) return TPUT<AtomicType::AtomicAdd>(dst, src, staging, events...);
    return TPUT<AtomicType::AtomicNone>(dst, src, staging, events...);
}

// TGET(dst, src, staging): dst (this rank's memory) = src (another rank's).
template <typename GlobalDstData, typename GlobalSrcData, typename TileData, typename... WaitEvents>
PTO_INST RecordEvent TGET(GlobalDstData& dst, GlobalSrcData& src, TileData& staging, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(std::is_same<typename GlobalDstData::RawDType, typename GlobalSrcData::RawDType>::value,
                  "TGET: source and destination element types differ");
    static_assert(std::is_same<typename TileData::DType, typename GlobalSrcData::RawDType>::value,
                  "TGET: the staging tile's element type differs from the data's");
    if (detail::staged("TGET", staging)) detail::copy<AtomicType::AtomicNone>("TGET", dst, src);
    return {};
}
template <typename GlobalDstData, typename GlobalSrcData, typename TileData, typename... WaitEvents>
PTO_INST RecordEvent TGET(GlobalDstData& dst, GlobalSrcData& src, TileData& ping, TileData& pong,
                          WaitEvents&... events) {
    if (detail::staged("TGET", pong)) TGET(dst, src, ping, events...);
    return {};
}

// TNOTIFY(signal, value, op): the INT32 cell at signal's address (another rank's) = value (Set)
// or += value (AtomicAdd), sequentially consistent: after every earlier write of the kernel.
template <typename GlobalSignalData, typename... WaitEvents>
PTO_INST void TNOTIFY(GlobalSignalData& signal, std::int32_t value, NotifyOp op, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(std::is_same<typename GlobalSignalData::RawDType, std::int32_t>::value,
                  "TNOTIFY: a signal is int32_t");
    std::int32_t* cell = signal.data();
    if (cell == nullptr) {
        ::simpler::report_kernel_error("TNOTIFY: the signal has a null address");
        return;
    }
    ::pto::sim::comm::Remote at;
    if (::pto::sim::comm::remote(cell, &at)) {
        if (at.offset + sizeof(std::int32_t) > at.nbytes) {
            ::simpler::report_kernel_error("TNOTIFY: the signal lies past rank %u's window of %llu bytes", at.peer,
                                           static_cast<unsigned long long>(at.nbytes));
            return;
        }
        ::pto::sim::comm::HostRuns runs;
        if (!runs.reserve("TNOTIFY", sizeof(std::int32_t)) || runs.add("TNOTIFY", at.offset, sizeof(std::int32_t)) == nullptr)
            return;
        std::memcpy(runs.data(), &value, sizeof value);
        runs.call("TNOTIFY", op == NotifyOp::Set ? ::simpler::CommHostOp::NotifySet : ::simpler::CommHostOp::NotifyAdd,
                  at, ::pto::sim::comm::dtype_code<std::int32_t>(), value);
        return;
    }
    if (op == NotifyOp::Set)
        __atomic_store_n(cell, value, __ATOMIC_SEQ_CST);
    else
        __atomic_fetch_add(cell, value, __ATOMIC_SEQ_CST);
}

// TTEST(signal, value, cmp): whether every INT32 cell of signal (this rank's memory) compares
// `cmp` to value; one sequentially consistent read of each.
template <typename GlobalSignalData, typename... WaitEvents>
PTO_INST bool TTEST(GlobalSignalData& signal, std::int32_t value, WaitCmp cmp, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(std::is_same<typename GlobalSignalData::RawDType, std::int32_t>::value, "TTEST: a signal is int32_t");
    if (!detail::local_signal("TTEST", signal)) return false;
    std::uint64_t at = 0;
    std::int32_t seen = 0;
    return !detail::unmet(signal, value, cmp, &at, &seen);
}

// TWAIT(signal, value, cmp): wait until every INT32 cell of signal (this rank's memory) compares
// `cmp` to value. Polls (spins, yields, then sleeps from 1 us doubling to 1 ms); past the comm
// context's wait timeout (60 s without a context) it reports the cell and the value seen. With
// an error already reported on the thread it returns at once.
template <typename GlobalSignalData, typename... WaitEvents>
PTO_INST void TWAIT(GlobalSignalData& signal, std::int32_t value, WaitCmp cmp, WaitEvents&... events) {
    (void)sizeof...(events);
    static_assert(std::is_same<typename GlobalSignalData::RawDType, std::int32_t>::value, "TWAIT: a signal is int32_t");
    if (!detail::local_signal("TWAIT", signal)) return;
    const ::simpler::CommContext* c = ::pto::sim::comm::context();
    const std::int64_t timeout = c != nullptr ? c->wait_timeout_ns : 60LL * 1000000000LL;
    const std::int64_t start = ::pto::sim::comm::now_ns();
    std::uint64_t at = 0;
    std::int32_t seen = 0;
    for (std::uint64_t i = 0; detail::unmet(signal, value, cmp, &at, &seen); ++i) {
        if (::simpler::kernel_error_slot().set) return;
        if ((i & 63) == 0 && ::pto::sim::comm::now_ns() - start > timeout) {
            std::int32_t* cell = nullptr;
            ::pto::sim::comm::for_each(signal, [&](std::uint64_t k, std::int32_t* p) {
                if (k == at) cell = p;
            });
            char where[96];
            detail::describe_cell(where, sizeof where, cell);
            ::simpler::report_kernel_error(
                "TWAIT: rank %u timed out after %g s waiting for its signal (%s) to become %s %d; the value seen was %d",
                c != nullptr ? c->rank : 0u, static_cast<double>(timeout) / 1e9, where, detail::cmp_text(cmp), value,
                seen);
            return;
        }
        ::pto::sim::comm::backoff(i);
    }
}

// TBROADCAST(group, src, staging): every group member's tensor but the caller's (rootIdx) = src.
template <typename ParallelGroupType, typename GlobalSrcData, typename TileData, typename... Args>
PTO_INST RecordEvent TBROADCAST(ParallelGroupType& group, GlobalSrcData& src, TileData& staging, Args&... args) {
    (void)sizeof...(args);
    using T = typename GlobalSrcData::RawDType;
    static_assert(std::is_same<typename ParallelGroupType::value_type::RawDType, T>::value,
                  "TBROADCAST: the group's and the source's element types differ");
    static_assert(std::is_same<typename TileData::DType, T>::value, "TBROADCAST: staging tile element type");
    if (!detail::staged("TBROADCAST", staging)) return {};
    for (int r = 0; r < group.GetSize(); ++r) {
        if (r == group.GetRootIdx()) continue;
        detail::copy<AtomicType::AtomicNone>("TBROADCAST", group[r], src);
        if (::simpler::kernel_error_slot().set) break;
    }
    return {};
}

// TGATHER(group, dst, staging): dst rows [r * H, (r + 1) * H) of dim 3 = group[r] (each member of
// shape [D0, D1, D2, H, W]; dst [D0, D1, D2, N * H, W]).
template <typename ParallelGroupType, typename GlobalDstData, typename TileData, typename... Args>
PTO_INST RecordEvent TGATHER(ParallelGroupType& group, GlobalDstData& dst, TileData& staging, Args&... args) {
    (void)sizeof...(args);
    using T = typename GlobalDstData::RawDType;
    using G = typename ParallelGroupType::value_type;
    static_assert(std::is_same<typename G::RawDType, T>::value, "TGATHER: the group's and dst's element types differ");
    static_assert(std::is_same<typename TileData::DType, T>::value, "TGATHER: staging tile element type");
    if (!detail::staged("TGATHER", staging) || group.GetSize() == 0) return {};
    const std::int64_t h = group[0].GetShape(3);
    if (dst.GetShape(3) != h * group.GetSize()) {
        ::simpler::report_kernel_error("TGATHER: dst has %lld rows in dim 3, expected %d ranks x %lld",
                                       static_cast<long long>(dst.GetShape(3)), group.GetSize(),
                                       static_cast<long long>(h));
        return {};
    }
    using Part = GlobalTensor<T, Shape<-1, -1, -1, -1, -1>, Stride<-1, -1, -1, -1, -1>, GlobalDstData::layout>;
    for (int r = 0; r < group.GetSize(); ++r) {
        Part part(dst.data() + r * h * dst.GetStride(3),
                  Shape<-1, -1, -1, -1, -1>(dst.GetShape(0), dst.GetShape(1), dst.GetShape(2), h, dst.GetShape(4)),
                  Stride<-1, -1, -1, -1, -1>(dst.GetStride(0), dst.GetStride(1), dst.GetStride(2), dst.GetStride(3),
                                             dst.GetStride(4)));
        detail::copy<AtomicType::AtomicNone>("TGATHER", part, group[r]);
        if (::simpler::kernel_error_slot().set) break;
    }
    return {};
}

// TSCATTER(group, src, staging): group[r] = src rows [r * H, (r + 1) * H) of dim 3.
template <typename ParallelGroupType, typename GlobalSrcData, typename TileData, typename... Args>
PTO_INST RecordEvent TSCATTER(ParallelGroupType& group, GlobalSrcData& src, TileData& staging, Args&... args) {
    (void)sizeof...(args);
    using T = typename GlobalSrcData::RawDType;
    using G = typename ParallelGroupType::value_type;
    static_assert(std::is_same<typename G::RawDType, T>::value, "TSCATTER: the group's and src's element types differ");
    static_assert(std::is_same<typename TileData::DType, T>::value, "TSCATTER: staging tile element type");
    if (!detail::staged("TSCATTER", staging) || group.GetSize() == 0) return {};
    const std::int64_t h = group[0].GetShape(3);
    if (src.GetShape(3) != h * group.GetSize()) {
        ::simpler::report_kernel_error("TSCATTER: src has %lld rows in dim 3, expected %d ranks x %lld",
                                       static_cast<long long>(src.GetShape(3)), group.GetSize(),
                                       static_cast<long long>(h));
        return {};
    }
    using Part = GlobalTensor<T, Shape<-1, -1, -1, -1, -1>, Stride<-1, -1, -1, -1, -1>, GlobalSrcData::layout>;
    for (int r = 0; r < group.GetSize(); ++r) {
        Part part(src.data() + r * h * src.GetStride(3),
                  Shape<-1, -1, -1, -1, -1>(src.GetShape(0), src.GetShape(1), src.GetShape(2), h, src.GetShape(4)),
                  Stride<-1, -1, -1, -1, -1>(src.GetStride(0), src.GetStride(1), src.GetStride(2), src.GetStride(3),
                                             src.GetStride(4)));
        detail::copy<AtomicType::AtomicNone>("TSCATTER", group[r], part);
        if (::simpler::kernel_error_slot().set) break;
    }
    return {};
}

// TREDUCE(group, dst, acc, recv, op): dst (this rank's memory) = group[root] (op) group[r] for
// every other r in increasing order, each step rounded to the element type (as a tile of T
// accumulates).
template <typename ParallelGroupType, typename GlobalDstData, typename TileData, typename... Args>
PTO_INST RecordEvent TREDUCE(ParallelGroupType& group, GlobalDstData& dst, TileData& acc, TileData& recv, ReduceOp op,
                             Args&... args) {
    (void)sizeof...(args);
    using T = typename GlobalDstData::RawDType;
    using G = typename ParallelGroupType::value_type;
    static_assert(std::is_same<typename G::RawDType, T>::value, "TREDUCE: the group's and dst's element types differ");
    static_assert(std::is_same<typename TileData::DType, T>::value, "TREDUCE: tile element type");
    const char* name = "TREDUCE";
    const int root = group.GetRootIdx(), n = group.GetSize();
    if (!detail::staged(name, acc) || !detail::staged(name, recv)) return {};
    if (root < 0 || root >= n) {
        ::simpler::report_kernel_error("TREDUCE: rootIdx %d outside the group of %d", root, n);
        return {};
    }
    if (!detail::same_shape(name, "dst", dst, "the group's tensors", group[root])) return {};
    const std::uint64_t count = detail::numel(dst);
    detail::Buf<T> a(count), b(count);
    if (!a.ok(name) || !b.ok(name) || !::pto::sim::comm::read(name, group[root], a.bytes())) return {};
    for (int r = 0; r < n; ++r) {
        if (r == root) continue;
        if (!detail::same_shape(name, "dst", dst, "the group's tensors", group[r]) ||
            !::pto::sim::comm::read(name, group[r], b.bytes()))
            return {};
        for (std::uint64_t i = 0; i < count; ++i) a.set(i, detail::combine(a.get(i), b.get(i), op));
    }
    ::pto::sim::comm::write(name, dst, a.bytes(), false);
    return {};
}
template <typename ParallelGroupType, typename GlobalDstData, typename TileData, typename... Args>
PTO_INST RecordEvent TREDUCE(ParallelGroupType& group, GlobalDstData& dst, TileData& acc, TileData& ping,
                             TileData& pong, ReduceOp op, Args&... args) {
    if (detail::staged("TREDUCE", pong)) TREDUCE(group, dst, acc, ping, op, args...);
    return {};
}

}  // namespace comm
}  // namespace pto
