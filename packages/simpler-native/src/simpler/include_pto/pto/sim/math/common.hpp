// The element math under our PTO-ISA instructions (pto/sim/instr_*.hpp): operations on
// row-major 2-D blocks with a static shape and a runtime valid shape. An operand is any type
// marked by is_tile<> with value_type, space, rows, cols, data, valid_rows and valid_cols (the
// instructions pass pto::sim::View over a placed tile's storage). The valid shape (valid_rows x
// valid_cols, each at most the static extent) is the region ops read and write; elements outside
// it are padding. Internal to our backend: kernels use the PTO-ISA instructions, never this.
#pragma once

#include <cstdint>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/dtype.hpp"

// Loop annotation for "iterations are independent" (GCC's ivdep). Clang vectorizes these loops
// at -O2 with runtime alias checks, and its assume_safety pragma warns on every loop it then
// cannot vectorize (libm calls, integer division), so it gets none.
#if defined(__GNUC__) && !defined(__clang__)
#define PTO_SIM_MATH_IVDEP _Pragma("GCC ivdep")
#else
#define PTO_SIM_MATH_IVDEP
#endif

// Loop annotation for "unroll this short loop of a compile-time count fully" (the register
// blocks of matmul.hpp, the side-by-side rows of reduce.hpp): their arrays then stay in registers.
#if defined(__clang__)
#define PTO_SIM_MATH_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define PTO_SIM_MATH_UNROLL _Pragma("GCC unroll 16")
#else
#define PTO_SIM_MATH_UNROLL
#endif

namespace pto {
namespace sim {
namespace math {

// The element types, dtype codes and conversions (simpler/dtype.hpp) and the kernel error
// channel, by the names the math uses.
using ::simpler::bfloat16;
using ::simpler::compute_t;
using ::simpler::convert;
using ::simpler::DType;
using ::simpler::dtype_of;
using ::simpler::dtype_v;
using ::simpler::format_kernel_tag;
using ::simpler::from_compute;
using ::simpler::half;
using ::simpler::is_float_like_v;
using ::simpler::is_half_like_v;
using ::simpler::is_int_v;
using ::simpler::report_kernel_error;
using ::simpler::RoundMode;
using ::simpler::to_compute;

// Memory spaces of an AICore: Vec (vector unit buffer), Mat (cube input staging, L1), Left and
// Right (cube operands, L0A/L0B), Acc (cube accumulator, L0C).
enum class Space : std::uint8_t { Vec, Mat, Left, Right, Acc };

inline const char* space_name(Space s) noexcept {
    switch (s) {
        case Space::Vec: return "Vec";
        case Space::Mat: return "Mat";
        case Space::Left: return "Left";
        case Space::Right: return "Right";
        case Space::Acc: return "Acc";
    }
    return "?";
}

template <class X>
struct is_tile : std::false_type {};

namespace detail {

// Run body(c) for c in [0, n): full chunks of W columns first, then the tail. The fixed-width
// inner loop is what GCC's -O2 ("very cheap") vectorizer accepts for a runtime column count;
// PTO_SIM_MATH_IVDEP is sound because every op's element c reads only element c of its sources (an
// in-place op reads and writes the same element).
template <int W = 16, class Body>
inline void for_cols(int n, Body&& body) noexcept {
    int c = 0;
    for (; c + W <= n; c += W) {
        PTO_SIM_MATH_IVDEP
        for (int k = 0; k < W; ++k) body(c + k);
    }
    for (; c < n; ++c) body(c);
}

// Checks shared by the ops. Each reports through the kernel error channel and returns false;
// the op then leaves its destination untouched.

// Operands' valid shapes must lie inside their static shapes (set_valid guarantees it; code that
// writes valid_rows/valid_cols directly could break it, and the ops then would read or write
// past a tile's storage).
template <class X>
inline bool valid_in_range(const char* op, const X& t) noexcept {
    if (t.valid_rows < 0 || t.valid_cols < 0 || t.valid_rows > X::rows || t.valid_cols > X::cols) {
        report_kernel_error("tile %s: operand valid shape [%d, %d] outside its static shape [%d, %d]", op, t.valid_rows,
                            t.valid_cols, X::rows, X::cols);
        return false;
    }
    return true;
}

template <class... X>
inline bool operands_ok(const char* op, const X&... t) noexcept {
    return (valid_in_range(op, t) && ...);
}
template <class Dst>
inline bool fits(const char* op, const Dst&, int r, int c) noexcept {
    if (r < 0 || c < 0 || r > Dst::rows || c > Dst::cols) {
        report_kernel_error("tile %s: result valid shape [%d, %d] does not fit the destination [%d, %d]", op, r, c,
                            Dst::rows, Dst::cols);
        return false;
    }
    return true;
}

template <class A, class B>
inline bool same_valid(const char* op, const A& a, const B& b) noexcept {
    if (a.valid_rows != b.valid_rows || a.valid_cols != b.valid_cols) {
        report_kernel_error("tile %s: operand valid shapes differ: [%d, %d] vs [%d, %d]", op, a.valid_rows,
                            a.valid_cols, b.valid_rows, b.valid_cols);
        return false;
    }
    return true;
}

}  // namespace detail

}  // namespace math
}  // namespace sim
}  // namespace pto
