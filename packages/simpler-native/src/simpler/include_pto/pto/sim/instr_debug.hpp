// Debug: TPRINT. Part of our PTO-ISA CPU backend; pto/sim/instr.hpp describes what every
// instruction does.
#pragma once

#include "pto/sim/instr_support.hpp"

namespace pto {

// ---- debug -------------------------------------------------------------------------------------

// TPRINT(src): print src's valid region to stdout, tagged with the task and core (the NPU has
// no such channel).
template <PrintFormat Format = PrintFormat::Width8_Precision4, typename TileData>
PTO_INST void TPRINT(TileData& src) {
    sim::Op op("TPRINT", PIPE_S);
    if (!sim::placed(op, src)) return;
    const int vr = sim::vrow(src), vc = sim::vcol(src);
    sim::rd(op, src, vr, vc);
    std::string out = sim::math::detail::kernel_tag();
    char head[128];
    std::snprintf(head, sizeof head, " TPRINT: %s %s [%d, %d], valid [%d, %d]\n", sim::tile_type_name(TileData::Loc),
                  sim::dtype_name<typename TileData::DType>(), TileData::Rows, TileData::Cols, vr, vc);
    out += head;
    for (int r = 0; r < vr; ++r) {
        out += r == 0 ? "[[" : " [";
        for (int c = 0; c < vc; ++c) sim::math::detail::append_value(out, src.data()[r * TileData::Cols + c]);
        out += r + 1 == vr ? "]]\n" : "]\n";
    }
    sim::math::detail::emit(out);
}

}  // namespace pto
