// The tensor map's overlap and coverage tests (declared in chip.hpp): views compared as N-D boxes.
#include "chip_internal.hpp"

namespace simpler::chip {

namespace {

// A nonempty view as a box: base in bytes, element size, and its dims of extent > 1 with their
// strides, ordered by decreasing stride. False when it cannot be described so.
struct Box {
    std::uint64_t base = 0;  // byte address of element [0, ..., 0]
    std::uint64_t elem = 0;  // bytes per element
    std::uint32_t n = 0;
    std::uint64_t shape[kMaxTensorDims] = {};
    std::uint64_t stride[kMaxTensorDims] = {};
};

bool make_box(const ChipTensor& t, Box* b) noexcept {
    const std::uint64_t bits = dtype_bits(t.dtype);
    if (bits == 0 || bits % 8 != 0 || t.ndims == 0 || t.ndims > kMaxTensorDims || chip_tensor_is_empty(t)) return false;
    b->elem = bits / 8;
    std::uint64_t off = 0;
    if (__builtin_mul_overflow(t.start_offset, b->elem, &off) || __builtin_add_overflow(t.buffer.addr, off, &b->base))
        return false;
    b->n = 0;
    for (std::uint32_t i = 0; i < t.ndims; ++i) {
        if (t.shapes[i] == 1) continue;
        std::uint32_t j = b->n++;  // insertion sort by decreasing stride
        while (j > 0 && b->stride[j - 1] < t.strides[i]) {
            b->shape[j] = b->shape[j - 1];
            b->stride[j] = b->stride[j - 1];
            --j;
        }
        b->shape[j] = t.shapes[i];
        b->stride[j] = t.strides[i];
    }
    return true;
}

// Box coordinates of b's origin in a's lattice (o, with b's base = a's base + sum o[i] *
// stride[i] elements), when a and b have one element size and one set of strides, and when
// addresses are one-to-one with coordinates over the union of both boxes (then boxes that
// share no coordinate share no element). False otherwise.
// `small` with dims of extent 1 inserted so that its strides are `big`'s (a dim of extent 1
// may take any stride). False when its strides are not a subset of big's.
bool lift_box(Box* small, const Box& big) noexcept {
    if (small->n > big.n) return false;
    Box out = *small;
    out.n = big.n;
    std::uint32_t k = 0;
    for (std::uint32_t i = 0; i < big.n; ++i) {
        out.stride[i] = big.stride[i];
        if (k < small->n && small->stride[k] == big.stride[i]) {
            out.shape[i] = small->shape[k++];
        } else {
            out.shape[i] = 1;
        }
    }
    if (k != small->n) return false;
    *small = out;
    return true;
}

// a and b are lifted to the same dims (lift_box) in place.
bool box_offsets(Box& a, Box& b, std::int64_t* o) noexcept {
    if (a.n < b.n && !lift_box(&a, b)) return false;
    if (b.n < a.n && !lift_box(&b, a)) return false;
    if (a.elem != b.elem || a.n != b.n) return false;
    for (std::uint32_t i = 0; i < a.n; ++i)
        if (a.stride[i] != b.stride[i] || a.stride[i] == 0 || a.stride[i] > (std::uint64_t{1} << 31)) return false;
    const std::uint64_t diff = b.base >= a.base ? b.base - a.base : a.base - b.base;
    if (diff % a.elem != 0 || diff / a.elem > (std::uint64_t{1} << 62)) return false;
    auto rem = static_cast<std::int64_t>(diff / a.elem);
    if (b.base < a.base) rem = -rem;
    for (std::uint32_t i = 0; i < a.n; ++i) {  // decreasing strides: rem - o[i] * s in [0, s)
        const auto s = static_cast<std::int64_t>(a.stride[i]);
        std::int64_t q = rem / s;
        if (rem % s < 0) --q;
        o[i] = q;
        rem -= q * s;
    }
    if (rem != 0) return false;  // b's origin is not on a's lattice this way: unsure
    // One-to-one over the union box: each stride exceeds the furthest reach of the inner dims.
    std::uint64_t inner = 0;  // sum over dims j > i of (width_j - 1) * stride_j
    for (std::uint32_t k = a.n; k-- > 0;) {
        if (inner >= a.stride[k]) return false;
        const std::int64_t lo = o[k] < 0 ? o[k] : 0;
        const std::int64_t hi_a = static_cast<std::int64_t>(a.shape[k]);
        const std::int64_t hi_b = o[k] + static_cast<std::int64_t>(b.shape[k]);
        const std::int64_t width = (hi_a > hi_b ? hi_a : hi_b) - lo;
        if (width <= 0 || width > (std::int64_t{1} << 32)) return false;
        std::uint64_t term = 0;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(width - 1), a.stride[k], &term) ||
            __builtin_add_overflow(inner, term, &inner))
            return false;
    }
    return true;
}

}  // namespace

bool tensors_may_overlap(const ChipTensor& a, const ChipTensor& b) noexcept {
    std::uint64_t alo = 0, ahi = 0, blo = 0, bhi = 0;
    if (!tensor_region(a, &alo, &ahi) || !tensor_region(b, &blo, &bhi)) return false;  // empty: touches nothing
    if (!(alo < bhi && blo < ahi)) return false;
    Box ba, bb;
    std::int64_t o[kMaxTensorDims] = {};
    if (!make_box(a, &ba) || !make_box(b, &bb) || !box_offsets(ba, bb, o)) return true;
    for (std::uint32_t i = 0; i < ba.n; ++i)  // [0, a.shape) and [o, o + b.shape) per dim
        if (o[i] >= static_cast<std::int64_t>(ba.shape[i]) || o[i] + static_cast<std::int64_t>(bb.shape[i]) <= 0)
            return false;
    return true;
}

bool tensor_covers(const ChipTensor& outer, const ChipTensor& inner) noexcept {
    std::uint64_t olo = 0, ohi = 0, ilo = 0, ihi = 0;
    if (!tensor_region(inner, &ilo, &ihi)) return true;  // empty: nothing to cover
    if (!tensor_region(outer, &olo, &ohi) || ilo < olo || ihi > ohi) return false;
    Box bo, bi;
    std::int64_t o[kMaxTensorDims] = {};
    if (!make_box(outer, &bo) || !make_box(inner, &bi)) return false;
    // A dense row-major view touches every byte of its range.
    bool dense = bo.n == 0 || bo.stride[bo.n - 1] == 1;
    for (std::uint32_t i = 0; dense && i + 1 < bo.n; ++i) dense = bo.stride[i] == bo.stride[i + 1] * bo.shape[i + 1];
    if (dense) return true;
    if (!box_offsets(bo, bi, o)) return false;
    for (std::uint32_t i = 0; i < bo.n; ++i)
        if (o[i] < 0 || o[i] + static_cast<std::int64_t>(bi.shape[i]) > static_cast<std::int64_t>(bo.shape[i])) return false;
    return true;
}

}  // namespace simpler::chip
