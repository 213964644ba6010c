// CPU schedules (x86, ARM) of the elementwise encodings (table and fused "x + PE" forms); each
// family's defaults are in schedules/<family>/encodings.h.
// Rows in parallel, channels in full vectors, per-column tables computed once per call.
#pragma once

#include <vector>

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

// The stage that writes out's rows, its loop over rows split into parallel tasks, and `channels`
// (innermost first) inside them: out's own stage, over (s, b) fused, or, where out is written in
// a given order of rows (generators/trig.h OrderedRows), its update over that order, k (each row
// is written once, so tasks cannot race).
inline Halide::Stage parallel_rows(Halide::Func out, std::vector<Halide::VarOrRVar> channels, const EncodingParams &p) {
    using namespace Halide;
    if (out.has_update_definition()) {
        RVar k = out.rvars()[0], task("task"), row("row");
        Stage rows = out.update();
        rows.allow_race_conditions().split(k, task, row, p.rows_per_task, TailStrategy::GuardWithIf).parallel(task);
        channels.insert(channels.end(), {row, task});
        return rows.reorder(channels);
    }
    Var s = out.args()[out.dimensions() - 2], b = out.args()[out.dimensions() - 1], row("row"), task("task");
    out.fuse(s, b, row).split(row, task, row, p.rows_per_task, TailStrategy::GuardWithIf).parallel(task);
    channels.insert(channels.end(), {row, task});
    return out.reorder(channels);
}

// Per-channel tables (c) and tables of position parts (c, row), computed once per call.
inline void schedule_column_tables(const std::vector<Halide::Func> &tables, const EncodingParams &p) {
    for (Halide::Func t : tables) {
        t.compute_root().vectorize(t.args()[0], p.vector_width, Halide::TailStrategy::GuardWithIf);
        if (t.dimensions() == 2) t.parallel(t.args()[1]);
    }
}

inline void schedule_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables,
                              const std::vector<Halide::Expr> &paths, const EncodingParams &p) {
    Halide::Var c = out.args()[0];
    Halide::Stage rows = parallel_rows(out, {c}, p);
    rows.vectorize(c, p.vector_width, Halide::TailStrategy::GuardWithIf);
    specialize_cases(rows, {}, paths);
    schedule_column_tables(column_tables, p);
}

// A vector of pairs is computed once and stored as its two members, so that the stores overlap
// the arithmetic (computing a chunk of pairs first and then storing it runs them in turn: 35%
// slower here at 512 pairs). Under each layout condition the strides are constants: the half
// layout stores two dense vectors, and the interleaved one two stride-2 vectors, which Halide
// merges into dense interleaving stores.
inline void schedule_pair_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const std::vector<Halide::Expr> &paths,
                                   const EncodingParams &p) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1];
    Stage rows = parallel_rows(out, {m, i}, p);
    rows.vectorize(i, p.vector_width, TailStrategy::GuardWithIf).unroll(m);
    specialize_cases(rows, layouts, paths);
    pairs.compute_at(out, i).vectorize(pairs.args()[0], p.vector_width, TailStrategy::RoundUp);
    schedule_column_tables(column_tables, p);
}

}  // namespace posattn::cpu
