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

// Shape class "decode" (kernels.json): a call with at most 4 query rows per tile (up to 4 queries,
// or one query whose GQA group's q heads the runtime folds into rows, runtime/src/attention.cpp),
// as one 4-row tile of 4-lane vectors. AMD EPYC, 2026-12-02, causal q [1, 32, 1, 128] alternated 31 times with the
// defaults above: 4.0-4.5 ms against 4096 keys of 8 KV heads (the 32-row tile: 6.0-7.0 ms), 0.26
// against 512 (0.51-0.73), 16.7-17.4 ms against 32 KV heads (25.0-25.4); 8 or 16 rows, key blocks
// of 128 or 512, 4 or 16 keys per score tile: 4-12% slower than this.
inline cpu::AttentionParams attention_decode_defaults() {
    cpu::AttentionParams p = attention_defaults();
    p.vector_width = 4;
    p.query_tile = 4;
    p.value_rows = 4;
    return p;
}

}  // namespace posattn::x86
