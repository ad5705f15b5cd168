// simpler's CPU implementation of the PTO-ISA subset that generated kernels use: the entry
// header of the public instruction set (#include <pto/pto-inst.hpp>, namespace pto), written by
// simpler from the public ISA reference and compiled by g++ >= 12 in C++17. Tiles live in the
// running core's simulated on-chip buffers; capacity, overlap and pipe-synchronisation errors
// are reported through the kernel error channel (simpler/kernel_abi.hpp).
// Reference: docs/tile-interface.md in the source repository. The official headers
// (PTO_ISA_ROOT) replace this whole include root.
#pragma once

#include "pto/sim/core.hpp"
#include "pto/sim/instr.hpp"
#include "pto/sim/tile.hpp"
#include "pto/sim/types.hpp"
