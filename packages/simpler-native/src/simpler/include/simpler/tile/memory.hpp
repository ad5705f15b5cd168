// Moving data between tensors in (simulated) device memory and tiles: load/store for the ND
// and NZ layouts, addressed through the kernel-ABI tensor descriptor ChipTensor.
//
// Every access is checked before any element moves: dtype, rank, offsets and valid shape
// against the tensor shape, and the last touched element against the backing
// (buffer.size bytes). A violation is reported through simpler::report_kernel_error and the
// whole access is skipped (the tile or tensor is left unchanged). Padding of a tile (outside
// its valid shape) is never read or written.
//
// ND: a 2-D tile addresses the last two tensor dims (rows = dim n-2, cols = dim n-1);
// `offsets` holds one index per tensor dim, leading dims select one index each. A 1-D tensor is
// one row: offsets = {col}, and the tile's valid_rows must be at most 1.
//
// NZ: Ascend's fractal NZ format (torch_npu storage format 29), in element units. A logical
// [.., R, C] matrix is cut into blocks of 16 rows by C0 = 32 / sizeof(T) columns (one 32-byte
// block row: C0 = 16 for FP16/BF16, 32 for 1-byte types, 8 for FP32), described by a ChipTensor
// of blocked shape [.., C/C0, R/16, 16, C0] (rank 4 or 5; strides in elements as usual).
// Logical element (r, c) lives at index [.., c/C0, r/16, r%16, c%C0]: column blocks outermost,
// then the row blocks of that column band, each block row-major. For a compact tensor that is
// element ((c/C0) * R + r) * C0 + c % C0. `offsets` holds the leading (batch) index, if any, and
// then the logical (row, col): ndims - 2 values.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "simpler/kernel_abi.hpp"
#include "simpler/tile/dtype.hpp"
#include "simpler/tile/tile.hpp"
#include "simpler/wire/chip_tensor.hpp"

namespace simpler {
namespace tile {

// Rows of one NZ fractal block, for every dtype.
inline constexpr int kNzBlockRows = 16;
// Bytes in one row of an NZ fractal block.
inline constexpr int kNzBlockBytes = 32;
// Columns (C0) of one NZ fractal block of T: as many elements as fill one 32-byte block row.
template <class T>
inline constexpr int kNzBlockCols = kNzBlockBytes / static_cast<int>(sizeof(T));

// Per-dimension element offsets of a load/store, one per tensor dim (ND) or per logical dim
// (NZ). Written as a braced list: load(t, x, {b, i * 16, j * 16}).
struct Offsets {
    std::int64_t v[kMaxTensorDims];
    int n;

    Offsets() noexcept : v{}, n(0) {}
    Offsets(std::initializer_list<std::int64_t> list) noexcept : v{}, n(0) {
        for (std::int64_t x : list) {
            if (n < static_cast<int>(kMaxTensorDims)) v[n] = x;
            ++n;  // a longer list is reported (count mismatch) when used
        }
    }
};

namespace detail {

// A checked rectangular access: element index of logical (r, c) =
// base + (r / 16) * rb + (r % 16) * ri + (c / C0) * cb + (c % C0) * ci for NZ, and
// base + r * ri + c * ci for ND (rb = cb = 0).
struct Access {
    std::uint64_t addr;
    std::uint64_t base;
    std::int64_t row_inner, col_inner, row_block, col_block;
    int rows, cols;     // valid region
    std::int64_t r0, c0;  // logical start (row, col)
};

inline const char* dtype_name(std::uint8_t code) noexcept {
    return is_known_dtype(code) ? kDataTypeNames[code] : "unknown";
}

// Validate a tile access of valid shape [vr, vc] at `off` into `t`; fill `acc`.
template <class T>
inline bool plan_access(const char* op, const ChipTensor& t, const Offsets& off, int vr, int vc, bool nz,
                        Access* acc) noexcept {
    const std::uint32_t nd = t.ndims;
    if (t.dtype != static_cast<std::uint8_t>(dtype_v<T>)) {
        report_kernel_error("tile %s: tensor dtype %s does not match the tile dtype %s", op, dtype_name(t.dtype),
                            dtype_name(static_cast<std::uint8_t>(dtype_v<T>)));
        return false;
    }
    if (nd < (nz ? 4u : 1u) || nd > kMaxTensorDims) {
        report_kernel_error("tile %s: tensor rank %u not supported (%s needs %s)", op, nd, nz ? "NZ" : "ND",
                            nz ? "4 or 5 blocked dims" : "1..5 dims");
        return false;
    }
    const int want = static_cast<int>(nz ? nd - 2 : nd);
    if (off.n != want && off.n != 0) {
        report_kernel_error("tile %s: %d offsets given for a rank-%u %s tensor, expected %d", op, off.n, nd,
                            nz ? "NZ" : "ND", want);
        return false;
    }
    std::int64_t o[kMaxTensorDims] = {};
    for (int i = 0; i < off.n && i < want; ++i) o[i] = off.v[i];

    Access a{};
    a.addr = t.buffer.addr;
    a.rows = vr;
    a.cols = vc;
    // Leading dims: one index each, inside the shape.
    const int lead = want - (nz ? 2 : (nd >= 2 ? 2 : 1));
    std::uint64_t base = t.start_offset;
    for (int i = 0; i < lead; ++i) {
        if (o[i] < 0 || static_cast<std::uint64_t>(o[i]) >= t.shapes[i]) {
            report_kernel_error("tile %s: offset %lld of dim %d outside the tensor shape %u", op,
                                static_cast<long long>(o[i]), i, t.shapes[i]);
            return false;
        }
        if (__builtin_add_overflow(base, static_cast<std::uint64_t>(o[i]) * t.strides[i], &base)) goto overflow;
    }
    {
        std::int64_t rows_total, cols_total;
        if (nz) {
            if (t.shapes[nd - 2] != static_cast<std::uint32_t>(kNzBlockRows) ||
                t.shapes[nd - 1] != static_cast<std::uint32_t>(kNzBlockCols<T>)) {
                report_kernel_error("tile %s: NZ tensor of %s must end in [%d, %d] blocks (16 rows x 32 bytes), got [%u, %u]",
                                    op, dtype_name(t.dtype), kNzBlockRows, kNzBlockCols<T>, t.shapes[nd - 2],
                                    t.shapes[nd - 1]);
                return false;
            }
            rows_total = static_cast<std::int64_t>(t.shapes[nd - 3]) * kNzBlockRows;
            cols_total = static_cast<std::int64_t>(t.shapes[nd - 4]) * kNzBlockCols<T>;
            a.r0 = o[want - 2];
            a.c0 = o[want - 1];
            a.row_block = t.strides[nd - 3];
            a.row_inner = t.strides[nd - 2];
            a.col_block = t.strides[nd - 4];
            a.col_inner = t.strides[nd - 1];
        } else if (nd >= 2) {
            rows_total = t.shapes[nd - 2];
            cols_total = t.shapes[nd - 1];
            a.r0 = o[nd - 2];
            a.c0 = o[nd - 1];
            a.row_inner = t.strides[nd - 2];
            a.col_inner = t.strides[nd - 1];
        } else {
            rows_total = 1;
            cols_total = t.shapes[0];
            a.r0 = 0;
            a.c0 = o[0];
            a.row_inner = 0;
            a.col_inner = t.strides[0];
        }
        // Written as r0 > total - valid so that no offset, however large, overflows.
        if (a.r0 < 0 || a.c0 < 0 || a.r0 > rows_total - vr || a.c0 > cols_total - vc) {
            report_kernel_error("tile %s: region of [%d, %d] at (%lld, %lld) outside the tensor's %s [%lld, %lld]", op, vr,
                                vc, static_cast<long long>(a.r0), static_cast<long long>(a.c0),
                                nz ? "NZ matrix" : "last dims", static_cast<long long>(rows_total),
                                static_cast<long long>(cols_total));
            return false;
        }
        if (vr == 0 || vc == 0) {  // touches nothing
            a.base = base;
            *acc = a;
            return true;
        }
        if (t.buffer.addr == 0) {
            report_kernel_error("tile %s: tensor has a null address", op);
            return false;
        }
        // Largest element index touched (strides are unsigned, so each term is maximal at the
        // largest index of its component; for NZ this bounds the block and in-block parts).
        std::uint64_t last = base;
        auto add = [&](std::int64_t idx, std::int64_t stride) noexcept {
            std::uint64_t term = 0;
            return !__builtin_mul_overflow(static_cast<std::uint64_t>(idx), static_cast<std::uint64_t>(stride), &term) &&
                   !__builtin_add_overflow(last, term, &last);
        };
        const std::int64_t r_last = a.r0 + vr - 1, c_last = a.c0 + vc - 1;
        bool ok;
        if (nz) {
            constexpr std::int64_t br = kNzBlockRows, bc = kNzBlockCols<T>;
            const std::int64_t rin = (a.r0 / br == r_last / br) ? r_last % br : br - 1;
            const std::int64_t cin = (a.c0 / bc == c_last / bc) ? c_last % bc : bc - 1;
            ok = add(r_last / br, a.row_block) && add(rin, a.row_inner) && add(c_last / bc, a.col_block) &&
                 add(cin, a.col_inner);
        } else {
            ok = add(r_last, a.row_inner) && add(c_last, a.col_inner);
        }
        std::uint64_t end_bytes = 0;
        if (!ok || __builtin_add_overflow(last, std::uint64_t{1}, &end_bytes) ||
            __builtin_mul_overflow(end_bytes, static_cast<std::uint64_t>(sizeof(T)), &end_bytes))
            goto overflow;
        if (end_bytes > t.buffer.size) {
            report_kernel_error("tile %s: element %llu lies outside the tensor's backing of %llu bytes (%zu-byte elements)",
                                op, static_cast<unsigned long long>(last), static_cast<unsigned long long>(t.buffer.size),
                                sizeof(T));
            return false;
        }
        a.base = base;
        *acc = a;
        return true;
    }
overflow:
    report_kernel_error("tile %s: element index overflows 64 bits", op);
    return false;
}

// Copy the checked region between tensor memory and a tile row buffer. ToTile selects the
// direction. ND rows with a unit column stride are plain contiguous loops.
template <bool ToTile, class T, class TileT>
inline void transfer(const Access& a, TileT& tile, bool nz) noexcept {
    T* mem = reinterpret_cast<T*>(static_cast<std::uintptr_t>(a.addr)) + a.base;
    for (int r = 0; r < a.rows; ++r) {
        T* trow = tile.row(r);
        const std::int64_t gr = a.r0 + r;
        if (!nz) {
            T* m = mem + gr * a.row_inner + a.c0 * a.col_inner;
            if (a.col_inner == 1) {
                if (ToTile)
                    for_cols(a.cols, [&](int c) { trow[c] = m[c]; });
                else
                    for_cols(a.cols, [&](int c) { m[c] = trow[c]; });
            } else {
                const std::int64_t cs = a.col_inner;
                for (int c = 0; c < a.cols; ++c) {
                    if (ToTile)
                        trow[c] = m[c * cs];
                    else
                        m[c * cs] = trow[c];
                }
            }
            continue;
        }
        constexpr int bc = kNzBlockCols<T>;
        T* mrow = mem + (gr / kNzBlockRows) * a.row_block + (gr % kNzBlockRows) * a.row_inner;
        int c = 0;
        while (c < a.cols) {
            const std::int64_t gc = a.c0 + c;
            const int in = static_cast<int>(gc % bc);
            int run = bc - in;
            if (run > a.cols - c) run = a.cols - c;
            T* m = mrow + (gc / bc) * a.col_block + in * a.col_inner;
            const std::int64_t cs = a.col_inner;
            for (int k = 0; k < run; ++k) {
                if (ToTile)
                    trow[c + k] = m[k * cs];
                else
                    m[k * cs] = trow[c + k];
            }
            c += run;
        }
    }
}

}  // namespace detail

// Load dst's valid region from ND tensor `src` at `offsets`. Returns false (and reports) when
// the access is rejected; dst is then unchanged.
template <Space S, class T, int R, int C>
inline bool load(Tile<S, T, R, C>& dst, const ChipTensor& src, const Offsets& offsets = {}) noexcept {
    detail::Access a;
    if (!detail::operands_ok("load", dst)) return false;
    if (!detail::plan_access<T>("load", src, offsets, dst.valid_rows, dst.valid_cols, false, &a)) return false;
    detail::transfer<true, T>(a, dst, false);
    return true;
}

// Set dst's valid shape to [valid_rows, valid_cols], then load.
template <Space S, class T, int R, int C>
inline bool load(Tile<S, T, R, C>& dst, const ChipTensor& src, const Offsets& offsets, int valid_rows,
                 int valid_cols) noexcept {
    if (!dst.set_valid(valid_rows, valid_cols)) return false;
    return load(dst, src, offsets);
}

// Store src's valid region into ND tensor `dst` at `offsets`.
template <Space S, class T, int R, int C>
inline bool store(const ChipTensor& dst, const Tile<S, T, R, C>& src, const Offsets& offsets = {}) noexcept {
    detail::Access a;
    if (!detail::operands_ok("store", src)) return false;
    if (!detail::plan_access<T>("store", dst, offsets, src.valid_rows, src.valid_cols, false, &a)) return false;
    detail::transfer<false, T>(a, const_cast<Tile<S, T, R, C>&>(src), false);
    return true;
}

// NZ counterparts: `offsets` = leading indices, then logical row and column.
template <Space S, class T, int R, int C>
inline bool load_nz(Tile<S, T, R, C>& dst, const ChipTensor& src, const Offsets& offsets = {}) noexcept {
    detail::Access a;
    if (!detail::operands_ok("load_nz", dst)) return false;
    if (!detail::plan_access<T>("load_nz", src, offsets, dst.valid_rows, dst.valid_cols, true, &a)) return false;
    detail::transfer<true, T>(a, dst, true);
    return true;
}

template <Space S, class T, int R, int C>
inline bool load_nz(Tile<S, T, R, C>& dst, const ChipTensor& src, const Offsets& offsets, int valid_rows,
                    int valid_cols) noexcept {
    if (!dst.set_valid(valid_rows, valid_cols)) return false;
    return load_nz(dst, src, offsets);
}

template <Space S, class T, int R, int C>
inline bool store_nz(const ChipTensor& dst, const Tile<S, T, R, C>& src, const Offsets& offsets = {}) noexcept {
    detail::Access a;
    if (!detail::operands_ok("store_nz", src)) return false;
    if (!detail::plan_access<T>("store_nz", dst, offsets, src.valid_rows, src.valid_cols, true, &a)) return false;
    detail::transfer<false, T>(a, const_cast<Tile<S, T, R, C>&>(src), true);
    return true;
}

// Kernel-entry helpers: args[i] of a kernel entry is a ChipTensor address or raw scalar bits.
inline const ChipTensor& tensor_arg(std::int64_t arg) noexcept {
    return *reinterpret_cast<const ChipTensor*>(static_cast<std::uintptr_t>(arg));
}

// A scalar argument of type T from its raw u64 bits: floats in the low 32 bits, 16-bit floats
// in the low 16 bits, integers sign- or zero-extended, bool = nonzero.
template <class T>
inline T scalar_arg(std::int64_t arg) noexcept {
    const auto u = static_cast<std::uint64_t>(arg);
    if constexpr (std::is_same<T, float>::value) {
        return tile_detail::bits_float(static_cast<std::uint32_t>(u));
    } else if constexpr (std::is_same<T, double>::value) {
        double d;
        std::memcpy(&d, &u, sizeof d);
        return d;
    } else if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value) {
        return T::from_bits(static_cast<std::uint16_t>(u));
    } else if constexpr (std::is_same<T, bool>::value) {
        return u != 0;
    } else {
        return static_cast<T>(u);
    }
}

}  // namespace tile
}  // namespace simpler
