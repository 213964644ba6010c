// x86 defaults (AVX-512: 16 float32 lanes, 32 vector registers) of the CPU linear schedule
// (schedules/cpu/linear.h).
// Measured 2026-11-30 on this project's machine (AMD EPYC, AVX-512, 2 threads), N=512, E=O=768:
// 67-83 GFLOP/s, 30-58% of the FMA peak (bench/bench.py's linear row).
#pragma once

#include "schedules/cpu/linear.h"

namespace posattn::x86 {

inline cpu::LinearParams linear_defaults() {
    cpu::LinearParams p;
    p.vector_width = 16;
    p.tile_vectors = 2;
    p.tile_rows = 6;
    p.rows_per_task = 48;
    return p;
}

}  // namespace posattn::x86
