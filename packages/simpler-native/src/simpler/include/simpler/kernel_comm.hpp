// Tile-level cross-rank operations of generated PTO-ISA kernels (pld.tile.remote_load and
// remote_store): a tile moved between this core and a window of another rank of a multi-chip
// program (simpler/comm_context.hpp, reached through KernelContext::comm).
//
// On the shared-memory path the peer's window is mapped in this process, so the access is a
// TLOAD/TSTORE through a checked GM view of the peer's window (simpler/kernel_args.hpp); an
// atomic remote_store adds element by element. On the host path only this rank's window is
// memory of this process: the access becomes one request to the rank's host process with the
// byte runs it touches, and the tile is read or written element by element (GetValue /
// SetValue). Either way the operation drains every pipe before and after
// (pipe_barrier(PIPE_ALL)), since which pipe moves the data depends on the path at run time.
//
// Backend-neutral like kernel_args.hpp: only the public PTO-ISA API on tiles. Failures are
// reported through simpler::report_kernel_error ("tile remote_load: ...") and the operation
// returns false without touching the tile or the peer's window.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "simpler/kernel_args.hpp"
#include "simpler/tile/comm.hpp"

namespace simpler {
namespace kernel {

namespace comm_detail {

// Element index in `t` of element (r, c) of the 2-D window at `offsets` (validated by gm_view).
inline std::uint64_t window_element(const ChipTensor& t, std::initializer_list<std::int64_t> offsets, int r,
                                    int c) noexcept {
    std::uint64_t e = t.start_offset;
    std::uint32_t d = 0;
    for (std::int64_t o : offsets) e += static_cast<std::uint64_t>(o) * t.strides[d++];
    const std::uint32_t nd = t.ndims;
    if (nd >= 2) e += static_cast<std::uint64_t>(r) * t.strides[nd - 2];
    return e + static_cast<std::uint64_t>(c) * t.strides[nd - 1];
}

// *p += add, atomically, in the element type `dtype` names (16-bit floats add in float and round
// once, as the tile library's atomic add does).
template <class T>
inline void atomic_add(T* p, T add, std::uint8_t dtype) noexcept {
    if (dtype == static_cast<std::uint8_t>(DataType::FLOAT16) ||
        dtype == static_cast<std::uint8_t>(DataType::BFLOAT16)) {
        if constexpr (sizeof(T) == 2) {
            if (dtype == static_cast<std::uint8_t>(DataType::FLOAT16)) {
                simpler::half a;
                std::memcpy(&a, &add, sizeof a);
                tile::comm_detail::atomic_add(reinterpret_cast<simpler::half*>(p), a);
            } else {
                simpler::bfloat16 a;
                std::memcpy(&a, &add, sizeof a);
                tile::comm_detail::atomic_add(reinterpret_cast<simpler::bfloat16*>(p), a);
            }
        }
        return;
    }
    if constexpr (std::is_arithmetic<T>::value) tile::comm_detail::atomic_add(p, add);
}

// The start every remote tile operation shares: all pipes drained, this rank's comm context,
// the peer's view `v` of window `win` (window index `wi`) and the checked GM view of a
// [rows, cols] window at `offsets` in it. False after reporting.
template <class T>
struct PeerWindow {
    const CommContext* ctx = nullptr;
    ChipTensor v;
    int wi = -1;
    GmView<T> view;
};
template <class T>
inline bool open_peer_window(PeerWindow<T>& w, const char* name, const char* op, const ChipTensor& win,
                             std::int64_t peer, std::uint8_t dtype, std::initializer_list<std::int64_t> offsets,
                             int rows, int cols) noexcept {
    using namespace pto;  // the official headers declare the pipes and pipe_barrier outside it
    pipe_barrier(PIPE_ALL);
    w.ctx = tile::comm_detail::context(name);
    return w.ctx != nullptr && tile::comm_detail::peer_view(name, *w.ctx, win, peer, &w.v, &w.wi) &&
           gm_view<T>(w.view, op, w.v, dtype, offsets, rows, cols);
}

}  // namespace comm_detail

// dst's valid region from window `win` of rank `peer` at `offsets` (one per window dim, as for
// TLOAD's GM view). `dtype` is the tile's wire DataType code.
template <class TileT>
inline bool remote_load(TileT& dst, const ChipTensor& win, std::int64_t peer, std::uint8_t dtype,
                        std::initializer_list<std::int64_t> offsets) noexcept {
    using namespace pto;
    using T = typename TileT::DType;
    const int rows = static_cast<int>(dst.GetValidRow()), cols = static_cast<int>(dst.GetValidCol());
    comm_detail::PeerWindow<T> w;
    if (!comm_detail::open_peer_window(w, "remote_load", "tile remote_load", win, peer, dtype, offsets, rows, cols))
        return false;
    const CommContext* c = w.ctx;
    const ChipTensor& v = w.v;
    if (!tile::comm_detail::on_host(*c)) {
        TLOAD(dst, w.view);
        pipe_barrier(PIPE_ALL);
        return true;
    }
    tile::comm_detail::HostRuns runs;
    if (!runs.reserve("remote_load", static_cast<std::uint64_t>(rows) * cols * sizeof(T))) return false;
    for (int r = 0; r < rows; ++r)
        for (int col = 0; col < cols; ++col) {
            const std::uint64_t e = comm_detail::window_element(v, offsets, r, col);
            if (runs.add("remote_load", e * sizeof(T), sizeof(T)) == nullptr) return false;
        }
    if (!runs.call("remote_load", *c, CommHostOp::Read, peer, w.wi)) return false;
    for (int r = 0; r < rows; ++r)
        for (int col = 0; col < cols; ++col) {
            T x;
            std::memcpy(&x, runs.data() + (static_cast<std::uint64_t>(r) * cols + col) * sizeof(T), sizeof x);
            dst.SetValue(elem(dst, r, col), x);
        }
    pipe_barrier(PIPE_ALL);
    return true;
}

// src's valid region into window `win` of rank `peer` at `offsets`; with `add` each element is
// added atomically to what the peer's window holds.
template <class TileT>
inline bool remote_store(const ChipTensor& win, TileT& src, std::int64_t peer, std::uint8_t dtype,
                         std::initializer_list<std::int64_t> offsets, bool add) noexcept {
    using namespace pto;
    using T = typename TileT::DType;
    const int rows = static_cast<int>(src.GetValidRow()), cols = static_cast<int>(src.GetValidCol());
    comm_detail::PeerWindow<T> w;
    if (!comm_detail::open_peer_window(w, "remote_store", "tile remote_store", win, peer, dtype, offsets, rows,
                                       cols))
        return false;
    const CommContext* c = w.ctx;
    const ChipTensor& v = w.v;
    const bool host = tile::comm_detail::on_host(*c);
    if (!host && !add) {
        TSTORE(w.view, src);
        pipe_barrier(PIPE_ALL);
        return true;
    }
    if (!host) {
        T* mem = reinterpret_cast<T*>(static_cast<std::uintptr_t>(v.buffer.addr));
        for (int r = 0; r < rows; ++r)
            for (int col = 0; col < cols; ++col)
                comm_detail::atomic_add(mem + comm_detail::window_element(v, offsets, r, col),
                                        static_cast<T>(src.GetValue(elem(src, r, col))), dtype);
        pipe_barrier(PIPE_ALL);
        return true;
    }
    tile::comm_detail::HostRuns runs;
    if (!runs.reserve("remote_store", static_cast<std::uint64_t>(rows) * cols * sizeof(T))) return false;
    for (int r = 0; r < rows; ++r)
        for (int col = 0; col < cols; ++col) {
            unsigned char* at = runs.add("remote_store", comm_detail::window_element(v, offsets, r, col) * sizeof(T),
                                         sizeof(T));
            if (at == nullptr) return false;
            const T x = src.GetValue(elem(src, r, col));
            std::memcpy(at, &x, sizeof x);
        }
    const bool ok = runs.call("remote_store", *c, add ? CommHostOp::AtomicAdd : CommHostOp::Write, peer, w.wi, dtype);
    pipe_barrier(PIPE_ALL);
    return ok;
}

}  // namespace kernel
}  // namespace simpler
