// The PTO-ISA instructions our CPU backend implements (docs/tile-interface.md lists them with
// their semantics). Every instruction:
//  1. is issued on its pipe (sim::Op: TLOAD MTE2; TSTORE MTE3 from Vec/Mat, FIX from Acc;
//     TMOV/TEXTRACT Mat->Left/Right MTE1, Acc->Vec/Mat FIX; TMATMUL* M; vector ops V);
//  2. checks its operands are placed (TASSIGN) and their valid shapes cover the iteration
//     domain (dst's valid shape unless the ISA page says otherwise);
//  3. records its reads and writes (the overlap and pipe-hazard checks of sim/core.hpp);
//  4. computes with the element math of pto/sim/math/*.hpp through row-major views.
// A failed check is reported through simpler::report_kernel_error and the instruction does not
// compute (hazards are reported and the instruction still computes: the CPU order is safe).
#pragma once

#include "pto/sim/instr_move.hpp"
#include "pto/sim/instr_convert.hpp"
#include "pto/sim/instr_matmul.hpp"
#include "pto/sim/instr_elementwise.hpp"
#include "pto/sim/instr_compare.hpp"
#include "pto/sim/instr_reduce.hpp"
#include "pto/sim/instr_sort.hpp"
#include "pto/sim/instr_random.hpp"
#include "pto/sim/instr_debug.hpp"
