// x86 defaults (AVX-512: 16 float32 lanes, 32 vector registers) of the CPU FLOATER step schedule
// (schedules/cpu/floater.h).
// Measured 2026-11-30 (AMD EPYC, AVX-512, 2 threads), d = hidden = 512, 6 states, rk4_38:
// ~1.1 ms per position (5 steps), 112 GFLOP/s, ~48% of the FMA peak, 6x NumPy on OpenBLAS (twice
// the speed of accumulating in memory). The weights (2 MiB) stream from L2/L3 each stage.
#pragma once

#include "schedules/cpu/floater.h"

namespace posattn::x86 {

inline cpu::FloaterParams floater_defaults() {
    cpu::FloaterParams p;
    p.vector_width = 16;
    p.rows_per_task = 64;
    p.row_vectors = 4;
    p.states_per_tile = 3;
    return p;
}

}  // namespace posattn::x86
