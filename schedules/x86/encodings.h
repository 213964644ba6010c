// x86 schedule of the elementwise encodings (sinusoidal, learned; table and fused "x + PE").
// Rows in parallel, channels in full vectors, the per-pair tables hoisted.
// Measured 2026-11-30 (AMD EPYC, AVX-512, 2 threads, [8, 8192, 1024] float32, bench/bench.py):
// sinusoid table 19 GB/s (~60% of the copy stream, ~75% of the fill stream), x + sinusoid 27 GB/s
// (~83% of copy), learned gathers 27-33 GB/s (~90% of copy).
#pragma once

#include "Halide.h"

namespace posattn::x86 {

struct EncodingParams {
    int vector_width = 16;    // float32 lanes per vector (AVX-512)
    int rows_per_task = 16;   // (batch, position) rows per parallel task

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("vector_width", vector_width);
        visit("rows_per_task", rows_per_task);
    }
};

// out(c, s, b): channels c, positions s, batch b. Column tables (per-pair frequencies) are
// computed once per call. When `interleaved_pairs` holds, channels 2i and 2i+1 are the sine and
// cosine of one angle, computed together by `pairs` for a vector of pairs at a time, and Halide
// merges the two stride-2 stores of the unrolled pair into one dense store.
inline void schedule_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                              Halide::Expr interleaved_pairs, const EncodingParams &p = {}) {
    using namespace Halide;
    Var c = out.args()[0], s = out.args()[1], b = out.args()[2];
    Var row("row"), task("task"), pair("pair"), half("half");
    out.fuse(s, b, row).split(row, task, row, p.rows_per_task, TailStrategy::GuardWithIf).parallel(task);
    if (interleaved_pairs.defined()) {
        out.specialize(interleaved_pairs)
            .split(c, pair, half, 2, TailStrategy::GuardWithIf)
            .reorder(half, pair)
            .vectorize(pair, p.vector_width, TailStrategy::GuardWithIf)
            .unroll(half);
        pairs.compute_at(out, pair).vectorize(pairs.args()[0], p.vector_width, TailStrategy::RoundUp);
    }
    out.vectorize(c, p.vector_width, TailStrategy::GuardWithIf);
    for (Func t : column_tables) t.compute_root().vectorize(t.args()[0], p.vector_width, TailStrategy::GuardWithIf);
}

}  // namespace posattn::x86
