// The tile type: a statically shaped 2-D block of elements in one memory space of the core,
// with a runtime valid shape. Generated kernels declare tiles as locals (stack scratch, one
// per invocation, as KERNEL_ABI.md requires) and pass them to the ops in simpler/tile/.
//
// Storage is always row-major [Rows][Cols] whatever the space; NZ is a layout of tensors in
// memory (see memory.hpp), not of tiles. The valid shape (valid_rows x valid_cols, each at most
// the static extent) is the region ops read and write; elements outside it are padding.
#pragma once

#include <cstdint>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/tile/dtype.hpp"

// Loop annotation for "iterations are independent" (GCC's ivdep). Clang vectorizes these loops
// at -O2 with runtime alias checks, and its assume_safety pragma warns on every loop it then
// cannot vectorize (libm calls, integer division), so it gets none.
#if defined(__GNUC__) && !defined(__clang__)
#define SIMPLER_TILE_IVDEP _Pragma("GCC ivdep")
#else
#define SIMPLER_TILE_IVDEP
#endif

namespace simpler {
namespace tile {

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

template <Space S, class T, int Rows, int Cols>
struct Tile {
    static_assert(Rows > 0 && Cols > 0, "a tile needs positive static extents");
    using value_type = T;
    static constexpr Space space = S;
    static constexpr int rows = Rows;
    static constexpr int cols = Cols;
    static constexpr int numel = Rows * Cols;

    alignas(64) T data[Rows * Cols];
    int valid_rows = Rows;
    int valid_cols = Cols;

    T* row(int r) noexcept { return data + r * Cols; }
    const T* row(int r) const noexcept { return data + r * Cols; }
    T& operator()(int r, int c) noexcept { return data[r * Cols + c]; }
    const T& operator()(int r, int c) const noexcept { return data[r * Cols + c]; }

    // Set the valid shape. Out of [0, Rows] x [0, Cols]: reported through the kernel error
    // channel and the valid shape is left unchanged. Returns whether it was applied.
    bool set_valid(int r, int c) noexcept {
        if (r < 0 || r > Rows || c < 0 || c > Cols) {
            report_kernel_error("tile: valid shape [%d, %d] outside the static shape [%d, %d]", r, c, Rows, Cols);
            return false;
        }
        valid_rows = r;
        valid_cols = c;
        return true;
    }

    // Set every element of the static extent (padding included) to v.
    void fill(T v) noexcept {
        for (int i = 0; i < Rows * Cols; ++i) data[i] = v;
    }
};

template <class T, int Rows, int Cols>
using VecTile = Tile<Space::Vec, T, Rows, Cols>;
template <class T, int Rows, int Cols>
using MatTile = Tile<Space::Mat, T, Rows, Cols>;
template <class T, int Rows, int Cols>
using LeftTile = Tile<Space::Left, T, Rows, Cols>;
template <class T, int Rows, int Cols>
using RightTile = Tile<Space::Right, T, Rows, Cols>;
template <class T, int Rows, int Cols>
using AccTile = Tile<Space::Acc, T, Rows, Cols>;

template <class X>
struct is_tile : std::false_type {};
template <Space S, class T, int R, int C>
struct is_tile<Tile<S, T, R, C>> : std::true_type {};

namespace detail {

// Run body(c) for c in [0, n): full chunks of W columns first, then the tail. The fixed-width
// inner loop is what GCC's -O2 ("very cheap") vectorizer accepts for a runtime column count;
// SIMPLER_TILE_IVDEP is sound because every op's element c reads only element c of its sources (an
// in-place op reads and writes the same element).
template <int W = 16, class Body>
inline void for_cols(int n, Body&& body) noexcept {
    int c = 0;
    for (; c + W <= n; c += W) {
        SIMPLER_TILE_IVDEP
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

}  // namespace tile
}  // namespace simpler
