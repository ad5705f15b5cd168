// The entry header of PTO-ISA's communication instructions (#include <pto/comm/pto_comm_inst.hpp>,
// namespace pto::comm), as the public instruction set spells it: our CPU backend's
// implementation (pto/sim/comm.hpp). With PTO_ISA_ROOT the official headers replace this whole
// include root, this header included.
#pragma once
#include "pto/pto-inst.hpp"
#include "pto/sim/comm.hpp"
