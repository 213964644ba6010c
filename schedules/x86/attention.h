// x86 defaults (AVX-512: 16 float32 lanes, 32 vector registers) of the CPU fused attention schedule
// (schedules/cpu/attention.h).
// Measured 2026-11-30 on this project's machine (AMD EPYC, AVX-512, 2 threads), B=1, H=8,
// L=2048, D=64: ~50 ms = 170-175 GFLOP/s, 73-75% of the measured 2-thread FMA peak (~232 GFLOP/s);
// the Adams2019 build of the same algorithm is 2.5x slower (bench/bench.py).
#pragma once

#include "schedules/cpu/attention.h"

namespace posattn::x86 {

inline cpu::AttentionParams attention_defaults() {
    cpu::AttentionParams p;
    p.vector_width = 16;
    p.query_tile = 32;
    p.key_block = 256;
    p.score_keys = 8;
    p.value_rows = 8;
    p.value_vectors = 2;
    p.relative_rows = 8;
    p.relative_keys = 8;
    return p;
}

}  // namespace posattn::x86
