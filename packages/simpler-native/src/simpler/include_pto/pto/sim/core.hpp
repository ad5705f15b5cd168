// The simulated AICore behind our PTO-ISA implementation: the core's on-chip buffers (UB, L1,
// L0A, L0B, L0C) and the per-invocation checks of docs/tile-interface.md:
//  - capacity: a tile placed by TASSIGN past its buffer's end;
//  - overlap: an instruction reading a tile whose bytes were last written through a different
//    tile (another live tile clobbered it); a tile over exactly the same bytes is the same
//    storage seen through another shape, not a different tile; and an instruction writing its
//    destination over bytes of one of its sources read through another tile;
//  - pipe hazards: an instruction on pipe Q touching bytes last written (RAW, WAW) or read (WAR)
//    on pipe P != Q, with no set_flag(P, Q, e) issued after that access and waited for by Q
//    (directly or through a chain of events), and no pipe_barrier(PIPE_ALL) since.
// Each is reported through simpler::report_kernel_error (the first report of a kernel wins).
//
// Buffers: the runtime hands the running core's buffers through KernelContext.buffers; outside
// a kernel (unit tests) the thread gets its own set with the a2a3 capacities.
//
// State: per buffer, a sorted partition of the touched bytes into segments, each remembering
// the tile and pipe that last wrote it and, per pipe, the last read. An access splits at most
// two segments and walks the ones it covers; a write merges them. Per pipe, a vector clock of
// the other pipes' progress it has waited for (set_flag snapshots the setter's clock,
// wait_flag merges it). Everything resets when a new kernel invocation starts on the thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "pto/sim/types.hpp"
#include "simpler/kernel_abi.hpp"

namespace pto {
namespace sim {

inline constexpr int kPipes = 8;  // Seg::rpipes holds a bit per pipe
inline constexpr int kEvents = 8;
inline constexpr int kBufs = ::simpler::kCoreBufferCount;
enum Buf : std::uint8_t { UB = 0, L1 = 1, L0A = 2, L0B = 3, L0C = 4, BT = 5 };

inline const char* buffer_name(int b) noexcept {
    static const char* const names[kBufs] = {"UB", "L1", "L0A", "L0B", "L0C", "BT"};
    return b >= 0 && b < kBufs ? names[b] : "?";
}

inline const char* pipe_name(int p) noexcept {
    static const char* const names[kPipes] = {"PIPE_S",    "PIPE_V", "PIPE_MTE1", "PIPE_MTE2",
                                              "PIPE_MTE3", "PIPE_M", "PIPE_ALL",  "PIPE_FIX"};
    return p >= 0 && p < kPipes ? names[p] : "PIPE_?";
}

inline const char* tile_type_name(TileType t) noexcept {
    switch (t) {
        case TileType::Vec: return "Vec";
        case TileType::Mat: return "Mat";
        case TileType::Left: return "Left";
        case TileType::Right: return "Right";
        case TileType::Acc: return "Acc";
        case TileType::Bias: return "Bias";
        default: return "unsupported";
    }
}

// The buffer a tile type lives in; kBufs for the tile types we do not implement.
constexpr int buffer_of(TileType t) noexcept {
    return t == TileType::Vec     ? UB
           : t == TileType::Mat   ? L1
           : t == TileType::Left  ? L0A
           : t == TileType::Right ? L0B
           : t == TileType::Acc   ? L0C
           : t == TileType::Bias  ? BT
                                  : kBufs;
}

// a2a3 capacities (pypto/ir/platforms.py): the buffers of a thread outside a kernel.
inline constexpr std::uint64_t kDefaultBufferBytes[kBufs] = {192u << 10, 512u << 10, 64u << 10,
                                                             64u << 10,  128u << 10, 1u << 10};

// What the checks know of a placed tile (for messages): registered by TASSIGN.
// How a tile's elements sit in its bytes: our storage is row-major whatever the layout, so a
// tile whose ISA placement is not row-major (boxed, or column-major with rows and columns) has
// a representation of its own, and converts through the ISA's placement (to_isa: our storage
// -> the ISA's; from_isa: back) when the same bytes were last held through another layout.
using Relayout = void (*)(const std::uint8_t* from, std::uint8_t* to) noexcept;

struct TileDesc {
    TileType loc;
    const char* dtype;
    int rows, cols;
    std::uint8_t buf;
    std::uint32_t offset;
    std::uint32_t bytes;
    std::uint8_t blayout = 0, slayout = 0, esize = 0;
    int fractal = 0;
    bool plain = true;  // stored as the ISA stores it (row-major, or one row or column)
    Relayout to_isa = nullptr, from_isa = nullptr;
};

// Two tiles over the same bytes keep them in the same representation.
inline bool same_representation(const TileDesc& a, const TileDesc& b) noexcept {
    if (a.plain && b.plain) return true;
    return a.rows == b.rows && a.cols == b.cols && a.blayout == b.blayout && a.slayout == b.slayout &&
           a.esize == b.esize && a.fractal == b.fractal;
}

struct Seg {
    std::uint32_t lo, hi;     // byte range in the buffer
    std::uint32_t writer;     // tile id (1-based) of the last write; 0: never written this kernel
    std::uint8_t wpipe;       // pipe of the last write
    std::uint8_t rpipes;      // bit p: rseq[p] != 0
    std::uint32_t wseq;       // its issue number on that pipe (0: none)
    const char* wop;          // its instruction
    std::uint32_t rseq[kPipes];  // per pipe: issue number of the last read since that write
    const char* rop[kPipes];
};

struct Core {
    std::uint64_t invocation = ~std::uint64_t{0};
    std::uint8_t* base[kBufs] = {};
    std::uint64_t cap[kBufs] = {};
    std::vector<TileDesc> tiles;
    std::vector<Seg> segs[kBufs];
    std::uint32_t touched = ~0u;  // bit b: segs[b] changed since the last reset (all: never reset)
    std::uint32_t counter[kPipes] = {};
    std::uint32_t clock[kPipes][kPipes] = {};  // clock[Q][P]: P's issue count Q has waited for
    // pending[P][Q][e]: the setter's clock at set_flag(P, Q, e); valid while bit Q * kEvents + e
    // of pending_set[P] is 1 (only the bits are cleared per invocation).
    std::uint32_t pending[kPipes][kPipes][kEvents][kPipes] = {};
    std::uint64_t pending_set[kPipes] = {};
    std::unique_ptr<std::uint8_t[]> own[kBufs];  // the buffers of a thread outside a kernel
    // Scalar accesses (GetValue/SetValue, PIPE_S) are checked over their tile's whole valid
    // region; a repeat of the last read (write) of the same region with nothing issued on
    // another pipe and no event or barrier since changes nothing and is skipped. `epoch`
    // counts those intervening operations.
    std::uint64_t epoch = 0;
    struct ScalarAccess {
        std::uint32_t id, lo, hi;
        int buf;
        std::uint64_t epoch;
    } last_scalar[2] = {};
    // Per storage (buffer, offset, bytes): the tile whose representation its bytes hold, kept
    // only in buffers that hold a tile not stored as the ISA stores it (`layouts_in`).
    struct Held {
        std::uint8_t buf;
        std::uint32_t offset, bytes, id;
    };
    std::vector<Held> held;
    bool layouts_in[kBufs] = {};
    std::vector<std::uint8_t> scratch;

    void reset(std::uint64_t inv, const ::simpler::KernelContext* ctx) noexcept {
        invocation = inv;
        for (int b = 0; b < kBufs; ++b) {
            if (ctx != nullptr && ctx->buffers != nullptr) {
                base[b] = ctx->buffers->base[b];
                cap[b] = ctx->buffers->bytes[b];
            } else {
                if (!own[b]) own[b].reset(new std::uint8_t[kDefaultBufferBytes[b]]());
                base[b] = own[b].get();
                cap[b] = kDefaultBufferBytes[b];
            }
            if ((touched >> b & 1u) != 0) {
                segs[b].clear();
                segs[b].push_back(Seg{0, static_cast<std::uint32_t>(cap[b]), 0, 0, 0, 0, nullptr, {}, {}});
            } else {
                segs[b][0].hi = static_cast<std::uint32_t>(cap[b]);  // still the one untouched segment
            }
        }
        touched = 0;
        tiles.clear();
        held.clear();
        std::memset(layouts_in, 0, sizeof layouts_in);
        ++epoch;
        std::memset(counter, 0, sizeof counter);
        std::memset(clock, 0, sizeof clock);
        std::memset(pending_set, 0, sizeof pending_set);
    }
};

// The thread's core, made on its first use: a heap object held by a thread-local owner (run at
// thread exit), its address kept in the thread's kernel state (simpler::KernelThread::backend),
// which core() reads with the invocation count and the context in one thread-local lookup.
struct CoreOwner {
    std::unique_ptr<Core> core;
    ~CoreOwner() { ::simpler::kernel_thread().backend = nullptr; }
};

[[gnu::noinline, gnu::cold]] inline Core* make_core(::simpler::KernelThread& t) noexcept {
    static thread_local CoreOwner owner;
    owner.core.reset(new Core());
    t.backend = owner.core.get();
    return owner.core.get();
}

// The calling thread's core, reset at the start of each kernel invocation.
inline Core& core() noexcept {
    ::simpler::KernelThread& t = ::simpler::kernel_thread();
    Core* c = static_cast<Core*>(t.backend);
    if (__builtin_expect(c == nullptr, 0)) c = make_core(t);
    if (c->invocation != t.invocation) c->reset(t.invocation, t.context);
    return *c;
}

// Start a new kernel invocation on this thread (tests: what the runtime's set_context does).
inline void begin_kernel() noexcept {
    ++::simpler::kernel_invocation();
    (void)core();
}

// Register a placed tile; the same type, shape and address is the same tile (a tile declared
// again in each loop iteration keeps its identity). Returns its id (1-based).
inline std::uint32_t register_tile(Core& c, const TileDesc& d) noexcept {
    // TASSIGN has just built d on its stack (zeroed with one wide store, then field by field).
    // offset is read on its own: GCC otherwise loads buf and offset as one 8-byte word, a load
    // spanning two stores, which the CPU cannot forward and which waits for every older store
    // (a whole tile copy's) to drain: 5% of the 16M add's CPU (docs/performance-throughput.md).
    std::uint32_t d_offset;
    std::memcpy(&d_offset, &d.offset, sizeof d_offset);
    __asm__("" : "+r"(d_offset));
    for (std::size_t i = c.tiles.size(); i-- > 0;) {
        const TileDesc& t = c.tiles[i];
        if (t.buf == d.buf && t.offset == d_offset && t.bytes == d.bytes && t.loc == d.loc && t.rows == d.rows &&
            t.cols == d.cols && t.dtype == d.dtype && t.blayout == d.blayout && t.slayout == d.slayout &&
            t.fractal == d.fractal)
            return static_cast<std::uint32_t>(i + 1);
    }
    if (!d.plain) c.layouts_in[d.buf] = true;
    c.tiles.push_back(d);
    ++c.epoch;
    return static_cast<std::uint32_t>(c.tiles.size());
}

// Before an access through tile `id`: its storage's bytes in its representation. When they were
// last held through a tile of another layout (TRESHAPE's alias, e.g. an NZ Mat tile read as
// ZN), they are converted through the ISA's placement, so every tile over the same bytes sees
// the elements the ISA would show it. A write of every byte of the storage (`overwrite`) needs
// no conversion: the bytes only change hands.
[[gnu::noinline]] inline void hold_slow(Core& c, std::uint32_t id, bool overwrite) noexcept {
    const TileDesc& t = c.tiles[id - 1];
    for (Core::Held& h : c.held) {
        if (h.buf != t.buf || h.offset != t.offset || h.bytes != t.bytes) continue;
        if (h.id != id) {
            const TileDesc& o = c.tiles[h.id - 1];
            if (!overwrite && !same_representation(o, t)) {
                if (c.scratch.size() < t.bytes) c.scratch.resize(t.bytes);
                std::uint8_t* data = c.base[t.buf] + t.offset;
                o.to_isa(data, c.scratch.data());
                t.from_isa(c.scratch.data(), data);
            }
            h.id = id;
        }
        return;
    }
    c.held.push_back(Core::Held{t.buf, t.offset, t.bytes, id});
}
// Only a buffer holding a tile not stored as the ISA stores it has anything to convert: the
// check is inline, the bookkeeping (hold_slow) is not.
inline void hold(Core& c, std::uint32_t id, bool overwrite = false) noexcept {
    if (id == 0 || id > c.tiles.size() || !c.layouts_in[c.tiles[id - 1].buf]) return;
    hold_slow(c, id, overwrite);
}
inline void hold(std::uint32_t id) noexcept { hold(core(), id); }

// Two tiles over exactly the same bytes (buffer, offset, size) are one storage seen through two
// tile shapes (a [R, 1] column read as a [1, R] row, as TASSIGN aliasing places them): a read
// through one of bytes written through the other is not a clobber.
inline bool same_storage(const Core& c, std::uint32_t a, std::uint32_t b) noexcept {
    if (a == 0 || b == 0 || a > c.tiles.size() || b > c.tiles.size()) return false;
    const TileDesc& x = c.tiles[a - 1];
    const TileDesc& y = c.tiles[b - 1];
    return x.buf == y.buf && x.offset == y.offset && x.bytes == y.bytes;
}

inline int describe(char* out, std::size_t n, std::uint32_t id) noexcept {
    const Core& c = core();
    if (id == 0 || id > c.tiles.size()) return std::snprintf(out, n, "(no tile)");
    const TileDesc& t = c.tiles[id - 1];
    return std::snprintf(out, n, "%s %s [%d, %d] at %s+0x%x", tile_type_name(t.loc), t.dtype, t.rows, t.cols,
                         buffer_name(t.buf), t.offset);
}

// One instruction in flight: issued on `pipe`, it records its accesses.
class Op {
public:
    Op(const char* name, pipe_t pipe) noexcept : name_(name), pipe_(pipe), c_(core()) {
        ++c_.counter[pipe_];
        c_.clock[pipe_][pipe_] = c_.counter[pipe_];
        if (pipe_ != PIPE_S) ++c_.epoch;
    }

    const char* name() const noexcept { return name_; }
    Core& state() const noexcept { return c_; }  // the core it runs on (one thread-local lookup)

    // A read of bytes [lo, hi) of buffer b through tile `id`.
    void read(int b, std::uint32_t lo, std::uint32_t hi, std::uint32_t id) noexcept {
        if (nreads_ < kMaxReads) reads_[nreads_++] = Range{b, lo, hi, id};
        access(b, lo, hi, id, false);
    }
    // A write of bytes [lo, hi) of buffer b through tile `id`. A destination that shares bytes
    // with a source of the same instruction read through another storage is reported: the
    // instruction would overwrite source elements it has yet to read.
    void write(int b, std::uint32_t lo, std::uint32_t hi, std::uint32_t id) noexcept {
        for (int i = 0; i < nreads_; ++i) {
            const Range& r = reads_[i];
            if (r.b != b || r.hi <= lo || hi <= r.lo || r.id == id || same_storage(c_, r.id, id)) continue;
            char mine[128], theirs[128];
            describe(mine, sizeof mine, id);
            describe(theirs, sizeof theirs, r.id);
            ::simpler::report_kernel_error(
                "%s writes tile %s over bytes at %s+0x%x of its source tile %s: the two tiles overlap", name_, mine,
                buffer_name(b), lo > r.lo ? lo : r.lo, theirs);
            break;
        }
        access(b, lo, hi, id, true);
    }

private:
    bool ordered(int p, std::uint32_t seq) const noexcept {
        return p == pipe_ || seq == 0 || c_.clock[pipe_][p] >= seq;
    }

    // Index of the segment starting at `at`, splitting the one that contains it.
    std::size_t split(std::vector<Seg>& v, std::uint32_t at) noexcept {
        std::size_t lo = 0, hi = v.size();
        while (lo < hi) {  // first segment with hi > at
            const std::size_t mid = (lo + hi) / 2;
            if (v[mid].hi <= at)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == v.size()) return lo;
        if (v[lo].lo == at) return lo;
        Seg right = v[lo];
        right.lo = at;
        v[lo].hi = at;
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(lo + 1), right);
        return lo + 1;
    }

    void hazard(bool is_write, const char* what, int b, std::uint32_t at, std::uint32_t id, const char* other_op,
                int p) noexcept {
        char tile[128];
        describe(tile, sizeof tile, id);
        ::simpler::report_kernel_error(
            "%s %s tile %s (bytes at %s+0x%x) %s by %s on %s without set_flag/wait_flag(%s, %s) or "
            "pipe_barrier(PIPE_ALL) between them",
            name_, is_write ? "writes" : "reads", tile, buffer_name(b), at, what, other_op ? other_op : "?",
            pipe_name(p), pipe_name(p), pipe_name(pipe_));
    }

    void access(int b, std::uint32_t lo, std::uint32_t hi, std::uint32_t id, bool is_write) noexcept {
        if (hi <= lo) return;
        c_.touched |= 1u << b;
        std::vector<Seg>& v = c_.segs[b];
        const std::size_t first = split(v, lo);
        const std::size_t end = split(v, hi);
        for (std::size_t i = first; i < end; ++i) {
            Seg& s = v[i];
            if (s.wseq != 0 && !ordered(s.wpipe, s.wseq))
                hazard(is_write, is_write ? "last written" : "written", b, s.lo, id, s.wop, s.wpipe);
            if (is_write) {
                for (unsigned m = s.rpipes; m != 0; m &= m - 1) {  // the pipes that read it, in order
                    const int p = __builtin_ctz(m);
                    if (!ordered(p, s.rseq[p])) hazard(true, "last read", b, s.lo, id, s.rop[p], p);
                }
            } else if (s.writer != 0 && s.writer != id && !same_storage(c_, s.writer, id)) {
                char mine[128], theirs[128];
                describe(mine, sizeof mine, id);
                describe(theirs, sizeof theirs, s.writer);
                ::simpler::report_kernel_error(
                    "%s reads tile %s, but its bytes at %s+0x%x were last written through another live tile %s (by %s): "
                    "the two tiles overlap",
                    name_, mine, buffer_name(b), s.lo, theirs, s.wop ? s.wop : "?");
            }
        }
        const std::uint32_t seq = c_.counter[pipe_];
        if (is_write) {
            Seg merged{v[first].lo, v[end - 1].hi, id, static_cast<std::uint8_t>(pipe_), 0, seq, name_, {}, {}};
            v.erase(v.begin() + static_cast<std::ptrdiff_t>(first + 1), v.begin() + static_cast<std::ptrdiff_t>(end));
            v[first] = merged;
        } else {
            for (std::size_t i = first; i < end; ++i) {
                v[i].rseq[pipe_] = seq;
                v[i].rop[pipe_] = name_;
                v[i].rpipes = static_cast<std::uint8_t>(v[i].rpipes | 1u << pipe_);
            }
        }
    }

    struct Range {
        int b;
        std::uint32_t lo, hi, id;
    };
    static constexpr int kMaxReads = 5;  // an instruction's reads (the most: TMRGSORT's four lists and its tmp)

    const char* name_;
    pipe_t pipe_;
    Core& c_;
    Range reads_[kMaxReads];
    int nreads_ = 0;
};

// A scalar access (PIPE_S) to the [lo, hi) region of tile `id`: checked unless it repeats the
// last one of its kind with nothing in between (Core::last_scalar).
inline void scalar_access(const char* name, int b, std::uint32_t lo, std::uint32_t hi, std::uint32_t id,
                          bool is_write) noexcept {
    Core& c = core();
    Core::ScalarAccess& last = c.last_scalar[is_write ? 1 : 0];
    if (last.epoch == c.epoch && last.id == id && last.buf == b && last.lo == lo && last.hi == hi) return;
    Op op(name, PIPE_S);
    if (is_write)
        op.write(b, lo, hi, id);
    else
        op.read(b, lo, hi, id);
    last = Core::ScalarAccess{id, lo, hi, b, c.epoch};
    // A write into the cached read's bytes makes it stale (a read checks who wrote its bytes).
    Core::ScalarAccess& rd = c.last_scalar[0];
    if (is_write && rd.buf == b && rd.lo < hi && lo < rd.hi && rd.id != id) rd.epoch = c.epoch - 1;
}

inline bool pipe_ok(const char* op, pipe_t p, bool allow_all) noexcept {
    if (p < 0 || p >= kPipes || (p == PIPE_ALL && !allow_all)) {
        ::simpler::report_kernel_error("%s: pipe %d is not one of PIPE_S/V/MTE1/MTE2/MTE3/M/FIX%s", op, p,
                                       allow_all ? "/ALL" : "");
        return false;
    }
    return true;
}

inline bool event_ok(const char* op, int e) noexcept {
    if (e < 0 || e >= kEvents) {
        ::simpler::report_kernel_error("%s: event id %d is not one of EVENT_ID0..EVENT_ID7", op, e);
        return false;
    }
    return true;
}

}  // namespace sim

// set_flag(src, dst, e): pipe `src` signals event e to pipe `dst` once everything it issued so
// far (and everything it waited for) is done. An event is the triple (src, dst, e) and each
// set_flag pairs with one wait_flag: a set of an event still pending (set, not yet waited for)
// is reported, as its two waits would share one signal.
inline void set_flag(pipe_t src, pipe_t dst, event_t e) noexcept {
    if (!sim::pipe_ok("set_flag", src, false) || !sim::pipe_ok("set_flag", dst, false) || !sim::event_ok("set_flag", e))
        return;
    sim::Core& c = sim::core();
    ++c.epoch;
    const std::uint64_t bit = std::uint64_t{1} << (dst * sim::kEvents + e);
    if ((c.pending_set[src] & bit) != 0) {
        ::simpler::report_kernel_error(
            "set_flag(%s, %s, EVENT_ID%d) while the previous set_flag of that event is not waited for (two pending "
            "events share one id)",
            sim::pipe_name(src), sim::pipe_name(dst), e);
        return;
    }
    c.pending_set[src] |= bit;
    std::memcpy(c.pending[src][dst][e], c.clock[src], sizeof c.pending[src][dst][e]);
}

// wait_flag(src, dst, e): pipe `dst` waits for event e from `src`. A wait with no set_flag
// pending would hang the device: reported.
inline void wait_flag(pipe_t src, pipe_t dst, event_t e) noexcept {
    if (!sim::pipe_ok("wait_flag", src, false) || !sim::pipe_ok("wait_flag", dst, false) ||
        !sim::event_ok("wait_flag", e))
        return;
    sim::Core& c = sim::core();
    const std::uint64_t bit = std::uint64_t{1} << (dst * sim::kEvents + e);
    if ((c.pending_set[src] & bit) == 0) {
        ::simpler::report_kernel_error(
            "wait_flag(%s, %s, EVENT_ID%d) with no matching set_flag pending (the device would wait forever)",
            sim::pipe_name(src), sim::pipe_name(dst), e);
        return;
    }
    c.pending_set[src] &= ~bit;
    ++c.epoch;
    const std::uint32_t* snap = c.pending[src][dst][e];
    for (int p = 0; p < sim::kPipes; ++p)
        if (snap[p] > c.clock[dst][p]) c.clock[dst][p] = snap[p];
}

// pipe_barrier(PIPE_ALL) orders everything issued before it against everything after; a
// barrier on one pipe orders that pipe with itself, which the model already assumes.
inline void pipe_barrier(pipe_t pipe) noexcept {
    if (!sim::pipe_ok("pipe_barrier", pipe, true)) return;
    if (pipe != PIPE_ALL) return;
    sim::Core& c = sim::core();
    ++c.epoch;
    for (int q = 0; q < sim::kPipes; ++q)
        for (int p = 0; p < sim::kPipes; ++p) c.clock[q][p] = c.counter[p];
}

}  // namespace pto
