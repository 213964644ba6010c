// x86 defaults (AVX-512: 16 float32 lanes, 32 vector registers; AVX2: 8 and 16) of the CPU linear schedule
// (schedules/cpu/linear.h).
// Measured 2026-12-03 on this project's machine (AMD EPYC, AVX-512, 2 threads), N=512, E=O=768:
// 4.0 ms, 151 GFLOP/s, 70% of the FMA peak, with its tuned record (bench/bench.py's linear row);
// the defaults 3.7 ms against the record's 3.5 in the tuner's run (before the weight's panels).
// Intel Xeon, 2026-12-05, with the panels: the defaults 2.62 ms, its record (3 vectors × 8 rows,
// 48-row blocks) 2.33 in the tuner's run; 2.45 ms, 61% of the FMA peak, in bench.py's.
#pragma once

#include "schedules/cpu/linear.h"

namespace posattn::x86 {

inline cpu::LinearParams linear_defaults(bool avx512) {
    cpu::LinearParams p;
    p.vector_width = avx512 ? 16 : 8;  // AVX2: the same 12 accumulators in its 16 registers
    p.tile_vectors = 2;
    p.tile_rows = 6;
    p.rows_per_task = 48;
    return p;
}

}  // namespace posattn::x86
