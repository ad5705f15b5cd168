// Helpers of the PTO-ISA tests: a fresh simulated kernel invocation per test, the kernel error
// channel, and global tensors over host arrays.
#pragma once

#include <string>

#include "../kernel_test_util.hpp"
#include "pto/pto-inst.hpp"
#include "simpler/kernel_abi.hpp"

namespace ptotest {

using kerneltest::Rng;
using kerneltest::take_error;

// Start a new kernel invocation (fresh buffers state, no pending errors).
inline void fresh() {
    take_error();
    pto::sim::begin_kernel();
}

template <class T, int R, int C>
using Gt = pto::GlobalTensor<T, pto::Shape<1, 1, 1, R, C>, pto::Stride<1, 1, 1, C, 1>>;

template <class T, int R, int C>
using VecT = pto::Tile<pto::TileType::Vec, T, R, C, pto::BLayout::RowMajor, -1, -1>;

// Both ways of each synchronisation between the pipes: what the sync pass emits.
inline void sync(pto::pipe_t a, pto::pipe_t b) {
    pto::set_flag(a, b, EVENT_ID0);
    pto::wait_flag(a, b, EVENT_ID0);
}

}  // namespace ptotest
