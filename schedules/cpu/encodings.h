// CPU schedules (x86, ARM) of the elementwise encodings (table and fused "x + PE" forms); each
// family's defaults are in schedules/<family>/encodings.h.
// Rows in parallel, channels in full vectors, per-column tables computed once per call.
#pragma once

#include "Halide.h"
#include "schedules/specialize.h"

namespace posattn::cpu {

struct EncodingParams {
    int vector_width = 0;  // float32 lanes per vector
    int rows_per_task = 0;  // (batch, position) rows per parallel task

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("vector_width", vector_width, {4, 8, 16, 32, 64});
        visit("rows_per_task", rows_per_task, {4, 8, 16, 32, 64, 128, 256});
    }
};

// Fuses (s, b) into rows and splits them into parallel tasks; returns the row variable.
inline Halide::Var parallel_rows(Halide::Func out, Halide::Var s, Halide::Var b, const EncodingParams &p) {
    using namespace Halide;
    Var row("row"), task("task");
    out.fuse(s, b, row).split(row, task, row, p.rows_per_task, TailStrategy::GuardWithIf).parallel(task);
    return row;
}

// Per-channel tables (c) and tables of position parts (c, row), computed once per call.
inline void schedule_column_tables(const std::vector<Halide::Func> &tables, const EncodingParams &p) {
    for (Halide::Func t : tables) {
        t.compute_root().vectorize(t.args()[0], p.vector_width, Halide::TailStrategy::GuardWithIf);
        if (t.dimensions() == 2) t.parallel(t.args()[1]);
    }
}

inline void schedule_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables,
                              const Halide::Expr &uses_tables, const EncodingParams &p) {
    Halide::Var c = out.args()[0];
    parallel_rows(out, out.args()[1], out.args()[2], p);
    out.vectorize(c, p.vector_width, Halide::TailStrategy::GuardWithIf);
    specialize_cases(out, {}, uses_tables);
    schedule_column_tables(column_tables, p);
}

// A vector of pairs is computed once and stored as its two members, so that the stores overlap
// the arithmetic (computing a chunk of pairs first and then storing it runs them in turn: 35%
// slower here at 512 pairs). Under each layout condition the strides are constants: the half
// layout stores two dense vectors, and the interleaved one two stride-2 vectors, which Halide
// merges into dense interleaving stores.
inline void schedule_pair_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const Halide::Expr &uses_tables,
                                   const EncodingParams &p) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1];
    parallel_rows(out, out.args()[2], out.args()[3], p);
    out.reorder(m, i).vectorize(i, p.vector_width, TailStrategy::GuardWithIf).unroll(m);
    specialize_cases(out, layouts, uses_tables);
    pairs.compute_at(out, i).vectorize(pairs.args()[0], p.vector_width, TailStrategy::RoundUp);
    schedule_column_tables(column_tables, p);
}

}  // namespace posattn::cpu
