// The tile library for generated kernels: include this one header. API reference:
// docs/tile-interface.md in the source repository. Everything lives in namespace simpler::tile
// (the 16-bit float types are simpler::half and simpler::bfloat16).
#pragma once

#include "simpler/kernel_abi.hpp"
#include "simpler/tile/bitwise.hpp"
#include "simpler/tile/compare.hpp"
#include "simpler/tile/debug.hpp"
#include "simpler/tile/dtype.hpp"
#include "simpler/tile/elementwise.hpp"
#include "simpler/tile/layout.hpp"
#include "simpler/tile/matmul.hpp"
#include "simpler/tile/memory.hpp"
#include "simpler/tile/reduce.hpp"
#include "simpler/tile/tile.hpp"
