// What a generated PTO-ISA kernel needs from simpler besides the instruction set itself: the
// kernel-ABI argument decoding (KERNEL_ABI.md), checked global-memory views of ChipTensor
// arguments for TLOAD/TSTORE, and the few element-wise ops PTO-ISA has no instruction for,
// written as loops over the public Tile API (GetValue/SetValue).
//
// Backend-neutral: it uses only the public PTO-ISA API (pto::Tile, pto::GlobalTensor,
// pto::Shape, pto::Stride), so a kernel compiles against our CPU implementation
// (simpler.get_pto_include()) and against the official headers (PTO_ISA_ROOT) alike. Include it
// after <pto/pto-inst.hpp>.
//
// Failures (a region outside its tensor, a dtype or rank mismatch) are reported through
// simpler::report_kernel_error; the helper returns false and the generated code returns from the
// kernel without touching memory.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/data_type.hpp"

namespace simpler {
namespace kernel {

// args[i] of a kernel entry is a ChipTensor address or raw scalar bits.
inline const ChipTensor& tensor_arg(std::int64_t arg) noexcept {
    return *reinterpret_cast<const ChipTensor*>(static_cast<std::uintptr_t>(arg));
}

// A scalar argument of type T from its raw 64 bits: 32-bit floats in the low 32 bits, 16-bit
// floats in the low 16 bits (their bit pattern), integers truncated from the sign- or
// zero-extended value, bool = nonzero.
template <class T>
inline T scalar_arg(std::int64_t arg) noexcept {
    const auto u = static_cast<std::uint64_t>(arg);
    if constexpr (std::is_same<T, bool>::value) {
        return u != 0;
    } else if constexpr (std::is_integral<T>::value) {
        return static_cast<T>(u);
    } else if constexpr (sizeof(T) == 8) {
        T v;
        std::memcpy(&v, &u, sizeof v);
        return v;
    } else if constexpr (sizeof(T) == 4) {
        const auto bits = static_cast<std::uint32_t>(u);
        T v;
        std::memcpy(&v, &bits, sizeof v);
        return v;
    } else {
        static_assert(sizeof(T) == 2, "scalar_arg: unsupported scalar type");
        const auto bits = static_cast<std::uint16_t>(u);
        T v;
        std::memcpy(&v, &bits, sizeof v);
        return v;
    }
}

// The global-memory view a kernel hands TLOAD/TSTORE: a 2-D window of rows x cols elements,
// rows `row_stride` elements apart, elements `col_stride` apart.
template <class T>
using GmView = pto::GlobalTensor<T, pto::Shape<1, 1, 1, -1, -1>, pto::Stride<1, 1, 1, -1, -1>>;

inline const char* dtype_label(std::uint8_t code) noexcept {
    return is_known_dtype(code) ? kDataTypeNames[code] : "unknown";
}

namespace detail {

// The tensor's dtype is the tile's (`dtype`, a wire DataType code); reported otherwise.
inline bool dtype_matches(const char* op, const ChipTensor& t, std::uint8_t dtype) noexcept {
    if (t.dtype == dtype) return true;
    report_kernel_error("%s: tensor dtype %s does not match the tile dtype %s", op, dtype_label(t.dtype),
                        dtype_label(dtype));
    return false;
}

// A window whose last element is element `last` of `t` (elements of `elem` bytes) lies inside
// the tensor's backing, which has an address; reported otherwise.
inline bool backing_covers(const char* op, const ChipTensor& t, std::uint64_t last, std::size_t elem) noexcept {
    if (t.buffer.addr == 0) {
        report_kernel_error("%s: tensor has a null address", op);
        return false;
    }
    std::uint64_t end_bytes = 0;
    if (__builtin_add_overflow(last, std::uint64_t{1}, &end_bytes) ||
        __builtin_mul_overflow(end_bytes, static_cast<std::uint64_t>(elem), &end_bytes)) {
        report_kernel_error("%s: element index overflows 64 bits", op);
        return false;
    }
    if (end_bytes > t.buffer.size) {
        report_kernel_error("%s: element %llu lies outside the tensor's backing of %llu bytes (%zu-byte elements)", op,
                            static_cast<unsigned long long>(last), static_cast<unsigned long long>(t.buffer.size),
                            elem);
        return false;
    }
    return true;
}

}  // namespace detail

// Check the [rows, cols] region at `offsets` (one per tensor dim: leading dims pick one index
// each, the last two are the window's row and column; a 1-D tensor is one row, offsets = {col})
// against `t` (dtype code `dtype`, rank, shape, strides, backing size; all arithmetic
// overflow-checked) and point `view` at it. `op` names the instruction in a report. Returns
// false after reporting; `view` is then unchanged.
template <class T>
inline bool gm_view(GmView<T>& view, const char* op, const ChipTensor& t, std::uint8_t dtype,
                    std::initializer_list<std::int64_t> offsets, std::int64_t rows, std::int64_t cols) noexcept {
    const std::uint32_t nd = t.ndims;
    if (!detail::dtype_matches(op, t, dtype)) return false;
    if (nd < 1 || nd > kMaxTensorDims) {
        report_kernel_error("%s: tensor rank %u not supported (1..%u dims)", op, nd, kMaxTensorDims);
        return false;
    }
    if (offsets.size() != nd) {
        report_kernel_error("%s: %zu offsets given for a rank-%u tensor, expected %u", op, offsets.size(), nd, nd);
        return false;
    }
    if (rows < 0 || cols < 0 || (nd == 1 && rows > 1)) {
        report_kernel_error("%s: region [%lld, %lld] is not a valid window of a rank-%u tensor", op,
                            static_cast<long long>(rows), static_cast<long long>(cols), nd);
        return false;
    }
    const std::int64_t* o = offsets.begin();  // nd of them (checked above)
    const std::uint32_t lead = nd >= 2 ? nd - 2 : 0;
    std::uint64_t base = t.start_offset;
    for (std::uint32_t d = 0; d < lead; ++d) {
        std::uint64_t term = 0;
        if (o[d] < 0 || static_cast<std::uint64_t>(o[d]) >= t.shapes[d]) {
            report_kernel_error("%s: offset %lld of dim %u outside the tensor shape %u", op,
                                static_cast<long long>(o[d]), d, t.shapes[d]);
            return false;
        }
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(o[d]), static_cast<std::uint64_t>(t.strides[d]), &term) ||
            __builtin_add_overflow(base, term, &base)) {
            report_kernel_error("%s: element index overflows 64 bits", op);
            return false;
        }
    }
    const std::int64_t rows_total = nd >= 2 ? static_cast<std::int64_t>(t.shapes[nd - 2]) : 1;
    const std::int64_t cols_total = t.shapes[nd - 1];
    const std::int64_t r0 = nd >= 2 ? o[nd - 2] : 0, c0 = o[nd - 1];
    const std::int64_t rs = nd >= 2 ? static_cast<std::int64_t>(t.strides[nd - 2]) : 0;
    const std::int64_t cs = t.strides[nd - 1];
    // Written as r0 > total - rows so that no offset, however large, overflows.
    if (r0 < 0 || c0 < 0 || r0 > rows_total - rows || c0 > cols_total - cols) {
        report_kernel_error("%s: region of [%lld, %lld] at (%lld, %lld) outside the tensor's last dims [%lld, %lld]",
                            op, static_cast<long long>(rows), static_cast<long long>(cols),
                            static_cast<long long>(r0), static_cast<long long>(c0),
                            static_cast<long long>(rows_total), static_cast<long long>(cols_total));
        return false;
    }
    std::uint64_t first = base, t1 = 0, t2 = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(r0), static_cast<std::uint64_t>(rs), &t1) ||
        __builtin_mul_overflow(static_cast<std::uint64_t>(c0), static_cast<std::uint64_t>(cs), &t2) ||
        __builtin_add_overflow(first, t1, &first) || __builtin_add_overflow(first, t2, &first)) {
        report_kernel_error("%s: element index overflows 64 bits", op);
        return false;
    }
    if (rows > 0 && cols > 0) {
        std::uint64_t last = first;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(rows - 1), static_cast<std::uint64_t>(rs), &t1) ||
            __builtin_mul_overflow(static_cast<std::uint64_t>(cols - 1), static_cast<std::uint64_t>(cs), &t2) ||
            __builtin_add_overflow(last, t1, &last) || __builtin_add_overflow(last, t2, &last)) {
            report_kernel_error("%s: element index overflows 64 bits", op);
            return false;
        }
        if (!detail::backing_covers(op, t, last, sizeof(T))) return false;
    }
    T* data = reinterpret_cast<T*>(static_cast<std::uintptr_t>(t.buffer.addr)) + first;
    view = GmView<T>(data, pto::Shape<1, 1, 1, -1, -1>(rows, cols), pto::Stride<1, 1, 1, -1, -1>(rs, cs));
    return true;
}

// A float scalar as integer type T: toward zero, saturated to T's range, NaN -> 0 (how a float
// scalar operand of an integer tile op converts).
template <class T>
inline T trunc_saturate(double x) noexcept {
    if (x != x) return T(0);
    const double t = std::trunc(x);
    if (t <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (t >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(t);
}

// The GM view of a window of an NZ tensor (Ascend's fractal format: a logical [.., R, C] matrix
// stored as blocks of 16 rows x C0 = 32 / sizeof(T) columns, described by a ChipTensor of
// blocked shape [.., C/C0, R/16, 16, C0]): PTO-ISA's NZ GlobalTensor [1, cols/C0, rows/16, 16, C0].
inline constexpr std::int64_t kNzBlockRows = 16;   // rows of one NZ block
inline constexpr std::int64_t kNzBlockBytes = 32;  // bytes of one NZ block row (C0 * sizeof(T))
template <class T>
using GmViewNz = pto::GlobalTensor<T, pto::Shape<1, -1, -1, -1, -1>, pto::Stride<1, -1, -1, -1, -1>, pto::Layout::NZ>;

// Check the logical [rows, cols] window at `offsets` (the leading batch index, if any, then the
// logical row and column) of NZ tensor `t` and point `view` at it. The window must start and end
// on block boundaries (rows and the row offset multiples of 16, cols and the column offset
// multiples of C0): the NZ view addresses whole blocks. Returns false after reporting.
template <class T>
inline bool gm_view_nz(GmViewNz<T>& view, const char* op, const ChipTensor& t, std::uint8_t dtype,
                       std::initializer_list<std::int64_t> offsets, std::int64_t rows, std::int64_t cols) noexcept {
    constexpr std::int64_t br = kNzBlockRows, bc = kNzBlockBytes / static_cast<std::int64_t>(sizeof(T));
    const std::uint32_t nd = t.ndims;
    if (!detail::dtype_matches(op, t, dtype)) return false;
    if (nd < 4 || nd > 5 || t.shapes[nd - 2] != br || t.shapes[nd - 1] != bc) {
        report_kernel_error("%s: an NZ tensor of this dtype has rank 4 or 5 and ends in [%lld, %lld] blocks", op,
                            static_cast<long long>(br), static_cast<long long>(bc));
        return false;
    }
    if (offsets.size() != nd - 2) {
        report_kernel_error("%s: %zu offsets given for an NZ tensor of rank %u, expected %u", op, offsets.size(), nd,
                            nd - 2);
        return false;
    }
    const std::int64_t* o = offsets.begin();  // nd - 2 of them (checked above)
    const std::int64_t r0 = o[nd - 4], c0 = o[nd - 3];
    const std::int64_t rows_total = static_cast<std::int64_t>(t.shapes[nd - 3]) * br;
    const std::int64_t cols_total = static_cast<std::int64_t>(t.shapes[nd - 4]) * bc;
    if (rows < 0 || cols < 0 || r0 < 0 || c0 < 0 || r0 > rows_total - rows || c0 > cols_total - cols) {
        report_kernel_error("%s: region of [%lld, %lld] at (%lld, %lld) outside the NZ matrix [%lld, %lld]", op,
                            static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(r0),
                            static_cast<long long>(c0), static_cast<long long>(rows_total),
                            static_cast<long long>(cols_total));
        return false;
    }
    if (r0 % br || c0 % bc || rows % br || cols % bc) {
        report_kernel_error("%s: NZ region of [%lld, %lld] at (%lld, %lld) is not made of whole [%lld, %lld] blocks", op,
                            static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(r0),
                            static_cast<long long>(c0), static_cast<long long>(br), static_cast<long long>(bc));
        return false;
    }
    std::uint64_t first = t.start_offset, term = 0;
    if (nd == 5) {
        if (o[0] < 0 || static_cast<std::uint64_t>(o[0]) >= t.shapes[0]) {
            report_kernel_error("%s: batch offset %lld outside the tensor shape %u", op, static_cast<long long>(o[0]),
                                t.shapes[0]);
            return false;
        }
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(o[0]), static_cast<std::uint64_t>(t.strides[0]), &term) ||
            __builtin_add_overflow(first, term, &first))
            goto overflow;
    }
    {
        const std::int64_t cb = t.strides[nd - 4], rb = t.strides[nd - 3], ri = t.strides[nd - 2], ci = t.strides[nd - 1];
        std::uint64_t t1 = 0, t2 = 0;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(c0 / bc), static_cast<std::uint64_t>(cb), &t1) ||
            __builtin_mul_overflow(static_cast<std::uint64_t>(r0 / br), static_cast<std::uint64_t>(rb), &t2) ||
            __builtin_add_overflow(first, t1, &first) || __builtin_add_overflow(first, t2, &first))
            goto overflow;
        if (rows > 0 && cols > 0) {
            std::uint64_t last = first, a = 0, b = 0, c = 0, d = 0;
            if (__builtin_mul_overflow(static_cast<std::uint64_t>(cols / bc - 1), static_cast<std::uint64_t>(cb), &a) ||
                __builtin_mul_overflow(static_cast<std::uint64_t>(rows / br - 1), static_cast<std::uint64_t>(rb), &b) ||
                __builtin_mul_overflow(static_cast<std::uint64_t>(br - 1), static_cast<std::uint64_t>(ri), &c) ||
                __builtin_mul_overflow(static_cast<std::uint64_t>(bc - 1), static_cast<std::uint64_t>(ci), &d) ||
                __builtin_add_overflow(last, a, &last) || __builtin_add_overflow(last, b, &last) ||
                __builtin_add_overflow(last, c, &last) || __builtin_add_overflow(last, d, &last))
                goto overflow;
            if (!detail::backing_covers(op, t, last, sizeof(T))) return false;
        }
        T* data = reinterpret_cast<T*>(static_cast<std::uintptr_t>(t.buffer.addr)) + first;
        view = GmViewNz<T>(data, pto::Shape<1, -1, -1, -1, -1>(cols / bc, rows / br, br, bc),
                           pto::Stride<1, -1, -1, -1, -1>(cb, rb, ri, ci));
        return true;
    }
overflow:
    report_kernel_error("%s: element index overflows 64 bits", op);
    return false;
}

// A run-time valid shape [rows, cols] for a tile of static shape [max_rows, max_cols]: false
// (reported) when it lies outside.
inline bool valid_shape_ok(const char* op, std::int64_t rows, std::int64_t cols, std::int64_t max_rows,
                           std::int64_t max_cols) noexcept {
    if (rows < 0 || cols < 0 || rows > max_rows || cols > max_cols) {
        report_kernel_error("%s: valid shape [%lld, %lld] outside the static shape [%lld, %lld]", op,
                            static_cast<long long>(rows), static_cast<long long>(cols),
                            static_cast<long long>(max_rows), static_cast<long long>(max_cols));
        return false;
    }
    return true;
}

// Element (r, c) of a tile's storage for GetValue/SetValue (the tile's row and column strides).
template <class TileT>
inline std::uint32_t elem(int r, int c) noexcept {
    return static_cast<std::uint32_t>(r * TileT::RowStride + c * TileT::ColStride);
}

template <class TileT>
inline std::uint32_t elem(const TileT&, int r, int c) noexcept {
    return elem<TileT>(r, c);
}

// pl.tile.write: element (r, c) of a tile = v (SetValue, PIPE_S), converted to the element type;
// a position outside the tile's static shape is reported and nothing is written.
template <class TileT, class V>
inline void write_elem(TileT& tile, std::int64_t r, std::int64_t c, V v) noexcept {
    if (r < 0 || c < 0 || r >= TileT::Rows || c >= TileT::Cols) {
        report_kernel_error("tile write: element (%lld, %lld) is outside the tile [%d, %d]", static_cast<long long>(r),
                            static_cast<long long>(c), TileT::Rows, TileT::Cols);
        return;
    }
    tile.SetValue(elem<TileT>(static_cast<int>(r), static_cast<int>(c)), static_cast<typename TileT::DType>(v));
}

// dst = f(src) over dst's valid shape, computed in float (or double for a double tile).
template <class Dst, class Src, class F>
inline void unary_loop(Dst& dst, Src& src, F f) noexcept {
    using T = typename Dst::DType;
    using W = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
    const int vr = static_cast<int>(dst.GetValidRow()), vc = static_cast<int>(dst.GetValidCol());
    for (int r = 0; r < vr; ++r)
        for (int c = 0; c < vc; ++c)
            dst.SetValue(elem<Dst>(r, c), static_cast<T>(f(static_cast<W>(src.GetValue(elem<Src>(r, c))))));
}

// Element-wise sine and cosine (PTO-ISA has no instruction for them).
template <class Dst, class Src>
inline void tsin(Dst& dst, Src& src) noexcept {
    unary_loop(dst, src, [](auto x) { return std::sin(x); });
}

template <class Dst, class Src>
inline void tcos(Dst& dst, Src& src) noexcept {
    unary_loop(dst, src, [](auto x) { return std::cos(x); });
}

// pl.print of a scalar: "<tag> <label>: <value>" on stdout, the tag naming the task and core
// (format_kernel_tag); pl.print of a tile prints "<tag> <label>:" and then TPRINT's output.
inline void print_label(const char* label) noexcept {
    char tag[64];
    format_kernel_tag(tag, sizeof tag);
    std::printf("%s %s:\n", tag, label);
}

inline void print_scalar(const char* label, double value) noexcept {
    char tag[64];
    format_kernel_tag(tag, sizeof tag);
    std::printf("%s %s: %.9g\n", tag, label, value);
}

inline void print_scalar(const char* label, long long value) noexcept {
    char tag[64];
    format_kernel_tag(tag, sizeof tag);
    std::printf("%s %s: %lld\n", tag, label, value);
}

inline void print_scalar(const char* label, unsigned long long value) noexcept {
    char tag[64];
    format_kernel_tag(tag, sizeof tag);
    std::printf("%s %s: %llu\n", tag, label, value);
}

}  // namespace kernel
}  // namespace simpler
