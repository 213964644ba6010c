// x86 schedules of the elementwise encodings (sinusoidal, learned; table and fused "x + PE").
// Rows in parallel, channels in full vectors, per-column tables computed once per call.
// Measured 2026-11-30 (AMD EPYC, AVX-512, 2 threads, [8, 8192, 1024] float32, bench/bench.py):
// sinusoid table interleaved 26 GB/s (73-78% of the copy stream, 93% of the fill), half 18-20 GB/s
// (~100% of a fill with its two-run store pattern), x + sinusoid 33 GB/s (~99% of copy), learned
// gathers 31 GB/s (~98% of copy). rows_per_task 64 over 16: +8% on the tables.
#pragma once

#include "Halide.h"

namespace posattn::x86 {

struct EncodingParams {
    int vector_width = 16;    // float32 lanes per vector (AVX-512)
    int rows_per_task = 64;   // (batch, position) rows per parallel task

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("vector_width", vector_width);
        visit("rows_per_task", rows_per_task);
    }
};

// Fuses (s, b) into rows and splits them into parallel tasks; returns the row variable.
inline Halide::Var parallel_rows(Halide::Func out, Halide::Var s, Halide::Var b, const EncodingParams &p) {
    using namespace Halide;
    Var row("row"), task("task");
    out.fuse(s, b, row).split(row, task, row, p.rows_per_task, TailStrategy::GuardWithIf).parallel(task);
    return row;
}

// Per-channel tables, computed once per call.
inline void schedule_column_tables(const std::vector<Halide::Func> &tables, const EncodingParams &p) {
    for (Halide::Func t : tables)
        t.compute_root().vectorize(t.args()[0], p.vector_width, Halide::TailStrategy::GuardWithIf);
}

inline void schedule_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables,
                              const EncodingParams &p = {}) {
    Halide::Var c = out.args()[0];
    parallel_rows(out, out.args()[1], out.args()[2], p);
    out.vectorize(c, p.vector_width, Halide::TailStrategy::GuardWithIf);
    schedule_column_tables(column_tables, p);
}

// A vector of pairs is computed once and stored as its two members, so that the stores overlap
// the arithmetic (computing a chunk of pairs first and then storing it runs them in turn: 35%
// slower here at 512 pairs). Under each layout condition the strides are constants: the half
// layout stores two dense vectors, and the interleaved one two stride-2 vectors, which Halide
// merges into dense interleaving stores.
inline void schedule_pair_encoding(Halide::Func out, Halide::Func column, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const EncodingParams &p = {}) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1];
    parallel_rows(out, out.args()[2], out.args()[3], p);
    out.reorder(m, i).vectorize(i, p.vector_width, TailStrategy::GuardWithIf).unroll(m);
    for (const Expr &layout : layouts) out.specialize(layout);
    pairs.compute_at(out, i).vectorize(pairs.args()[0], p.vector_width, TailStrategy::RoundUp);
    schedule_column_tables({column}, p);
}

}  // namespace posattn::x86
