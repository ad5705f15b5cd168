// Helpers of the element-math tests (pto/sim/math/*.hpp): a self-owning row-major tile the math
// accepts as an operand; the kernel error channel and random numbers (kernel_test_util.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "pto/sim/math/bitwise.hpp"
#include "pto/sim/math/common.hpp"
#include "pto/sim/math/compare.hpp"
#include "pto/sim/math/debug.hpp"
#include "pto/sim/math/elementwise.hpp"
#include "pto/sim/math/layout.hpp"
#include "pto/sim/math/matmul.hpp"
#include "pto/sim/math/reduce.hpp"
#include "simpler/dtype.hpp"
#include "../kernel_test_util.hpp"
#include "simpler/kernel_abi.hpp"

namespace mathtest {

using pto::sim::math::Space;

// A statically shaped 2-D block with its own storage and a runtime valid shape: the operand
// interface the math expects (the instructions pass pto::sim::View over a placed tile instead).
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

    void set_valid(int r, int c) noexcept {
        valid_rows = r;
        valid_cols = c;
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

using kerneltest::Rng;
using kerneltest::take_error;
// The element types the tests instantiate the math with.
using simpler::bfloat16;
using simpler::half;

}  // namespace mathtest

// The math accepts the test tiles as operands.
namespace pto {
namespace sim {
namespace math {
template <Space S, class T, int R, int C>
struct is_tile<::mathtest::Tile<S, T, R, C>> : std::true_type {};
}  // namespace math
}  // namespace sim
}  // namespace pto
