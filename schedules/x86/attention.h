// x86 defaults of the CPU fused attention schedule (schedules/cpu/attention.h), for AVX-512 (16
// float32 lanes, 32 vector registers) and for AVX2 (8 lanes, 16 registers).
// Measured 2026-11-30 on this project's machine (AMD EPYC, AVX-512, 2 threads), B=1, H=8,
// L=2048, D=64: ~50 ms = 170-175 GFLOP/s, 73-75% of the measured 2-thread FMA peak (~232 GFLOP/s);
// the Adams2019 build of the same algorithm is 2.5x slower (bench/bench.py).
#pragma once

#include "schedules/cpu/attention.h"

namespace posattn::x86 {

inline cpu::AttentionParams attention_defaults(bool avx512) {
    cpu::AttentionParams p;
    p.vector_width = 16;
    p.query_tile = 32;
    p.key_block = 256;
    p.score_keys = 8;
    p.value_rows = 8;
    p.value_vectors = 2;
    p.value_width = 16;
    p.score_lanes = 1;
    p.relative_rows = 8;
    p.relative_keys = 8;
    p.value_pass_keys = 512;
    p.key_streams = 1;
    if (avx512) return p;
    // AVX2 (16 registers of 8 lanes): q·k in tiles of 3 vectors of rows × 4 keys, p·v of 6 rows ×
    // 2 vectors, 12 accumulators each. AMD EPYC Zen 3, 2026-12-06, B=1 H=8 L=2048 D=64 (the
    // tuner's measure, 21 interleaved repeats): 95 ms, where the AVX-512 tiles (32 accumulators,
    // spilled) took 147; 16-row tiles 99-107, 12 rows × 1 vector 99, 512-key blocks 94.
    p.vector_width = 8;
    p.query_tile = 24;
    p.score_keys = 4;
    p.value_rows = 6;
    p.value_width = 8;
    return p;
}

// Shape class "decode" (kernels.json): a call with at most 4 query rows per tile (up to 4 queries,
// or one query whose GQA group's q heads the runtime folds into rows, runtime/src/attention.cpp),
// as one 4-row tile. q·k sums 16 channels per lane and adds the lanes of each (row, key) (with
// the rows in 4 lanes, each multiply-add took a broadcast of k), p·v runs on 16-channel vectors.
// AMD EPYC, 2026-12-02, causal q [1, 32, 1, 128] against 4096 keys of 8 KV heads (K and V
// rotated over three caches, candidates alternated call by call 41 times): 2.92 ms, where the
// rows in the lanes (8-key score tiles) took 3.31 ms with 16-channel p·v and 3.57 ms with
// 4-channel p·v (the 32-row tile before that: 6.0-7.0 ms); 8 channels per lane 3.00 ms. Earlier,
// 8 or 16 rows, key blocks of 128 or 512, 16 keys per score tile: 4-12% slower.
// p·v key by key (each value row read whole, in order; two 16-channel vectors per step): Intel
// Xeon, 2026-12-04, the same call with the caches flushed before each (a 64 MiB copy), alternated
// with the register tiles, which walked the value block in 16-channel columns, a line per key at
// a 512-byte stride: 1.14-1.23x (four runs of 101-151 pairs).
inline cpu::AttentionParams attention_decode_defaults(bool avx512) {
    cpu::AttentionParams p = attention_defaults(avx512);
    p.vector_width = 4;
    p.query_tile = 4;
    p.value_rows = 4;
    p.value_vectors = 2;
    p.score_keys = 4;
    p.score_lanes = 16;
    p.value_width = 16;
    p.value_pass_keys = 1;
    // Blocks of 512 keys visited as 4 interleaved runs (AttentionTiles::key_streams): 4 streams of
    // k, then of v, in flight, where one run kept one (a C loop of the same reads on the same
    // machine: 24 GB/s by one run, 33-38 by 4). AMD EPYC Zen 3, 2026-12-06, alternated rounds:
    // q [1, 8, 1, 128] x 4096 keys (decode1) 0.81 ms, 256 keys in one run 1.49, ggml 0.79;
    // q [1, 32, 1, 128] x 4096 keys of 8 KV heads 1.64 ms, one run 2.44.
    p.key_block = 512;
    p.key_streams = 4;
    if (avx512) return p;
    // AVX2: 8 channels per lane and per p·v vector. AMD EPYC Zen 3, 2026-12-06, the call above
    // (41 interleaved repeats): 3.83 ms, the AVX-512 tiles 4.37.
    p.score_lanes = 8;
    p.value_width = 8;
    p.value_vectors = 4;
    return p;
}

// Shape class "decode8" (kernels.json): one 8-row tile, the decode tiles' (a GQA group of 5 to
// 8 q heads, which the 32-row tiles ran 24 rows for nothing).
inline cpu::AttentionParams attention_decode8_defaults(bool avx512) {
    cpu::AttentionParams p = attention_decode_defaults(avx512);
    p.query_tile = 8;
    if (avx512) return p;
    // AVX2: the 8 rows in one vector's lanes (q·k takes a broadcast of k per multiply-add, with no
    // sums across lanes per row and key), p·v in tiles of 8 rows × 1 vector. AMD EPYC Zen 3,
    // 2026-12-06, q [1, 64, 1, 128] against 4096 keys of 8 KV heads, alternated: 2.38 ms where the
    // channels in the lanes took 3.25 (D = 64: 1.27 ms, 2.32); with one key stream 2.91.
    p.vector_width = 8;
    p.score_lanes = 1;
    p.value_rows = 8;
    p.value_vectors = 1;
    return p;
}

// Shape class "window" (kernels.json): a sliding window narrower than the keys, whose tiles visit
// only the key blocks that reach their window (generators/attention.h), so narrower blocks waste
// fewer masked keys. Intel Xeon, 2026-12-04, causal [1, 8, 2048, 64] (7 alternated pairs): window
// 256 9.5 ms against 11.8 with 256-key blocks and 15.6 with that machine's plain record (48 rows,
// 512-key blocks); window 1024 1.05x and 1.2x faster; window 1900 1.10x faster than the record.
inline cpu::AttentionParams attention_window_defaults(bool avx512) {
    cpu::AttentionParams p = attention_defaults(avx512);
    p.key_block = 128;
    if (avx512) return p;
    // AVX2: 16-row tiles, which divide the usual document and window sizes (24 rows straddle two
    // packed documents and visit both one's key blocks). AMD EPYC Zen 3, 2026-12-06, speed over
    // causal [1, 8, 2048, 64] (9 alternated pairs): 8 packed documents of 256 4.68x (24 rows 3.56x,
    // 16 rows x 8 p.v rows 3.69x, 32 rows 3.72x), window 256 2.57x (2.23x), window 1024 1.13x (1.03x).
    p.query_tile = 16;
    p.value_rows = 4;
    return p;
}

}  // namespace posattn::x86
