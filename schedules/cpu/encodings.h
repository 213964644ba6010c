// CPU schedules (x86, ARM) of the elementwise encodings (table and fused "x + PE" forms); each
// family's defaults are in schedules/<family>/encodings.h.
// Rows in parallel, channels in full vectors, per-column tables computed once per call.
#pragma once

#include <optional>
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

// A kernel compiled with row_tiles (kernels.json; the trig x + PE forms): its task's rows in tiles
// of tile_rows rows × tile_vectors vectors of channels (parallel_rows); tile_rows 0: whole rows.
struct TiledEncodingParams : EncodingParams {
    int tile_rows = 0, tile_vectors = 0;

    template <typename Visit>
    void fields(Visit &&visit) {
        EncodingParams::fields(visit);
        visit("tile_rows", tile_rows, {0, 4, 8, 16, 32, 64});
        visit("tile_vectors", tile_vectors, {1, 2, 4, 8, 16, 32, 64});
    }
};

// The stage that writes out's rows, its loop over rows split into parallel tasks, and `channels`
// (innermost first) inside them: out's own stage, over (s, b) fused, or, where out is written in
// a given order of rows (generators/trig.h OrderedRows), its update over that order, k (each row
// is written once, so tasks cannot race).
// In tiles (tile_rows > 0): for the trig x + PE forms, whose rows run in their own order and so
// read a row of each position table (generators/trig.h PositionSplit) at random for each row they
// write: 24 KiB of tables from L2 for each 4 KiB row of sin-only's three tables at d = 1024
// (512 KiB in all at 2^13 positions). The task's rows then run in tiles of tile_rows rows ×
// tile_vectors vectors of the outermost channel, so that the tile's columns of every table row
// (32 KiB there, at 4 vectors of 16 lanes) stay in L1. Intel Xeon, 2026-12-04, [8, 8192, 1024],
// random positions, alternated with whole rows (15 pairs): sin-only x + PE 1.14x, sinusoid x + PE
// 1.19x with 16 × 4 tiles; also 1.17x for the sinusoid where it evaluates every value instead
// (sin-only 1.01x), so some of the gain is in reading 16 rows (4 KiB, a page each) in turn rather
// than one. Tiles of 64 rows ran at 0.62x the speed of whole rows. The table forms, whose rows run
// sorted by position and so reuse each table row from L1, lose with tiles (0.90x), as do integer
// x + PE (0.94x), learned x + PE (0.91x) and complex-order (0.99x).
inline Halide::Stage parallel_rows(Halide::Func out, std::vector<Halide::VarOrRVar> channels, const EncodingParams &p,
                                   int tile_rows = 0, int tile_vectors = 0) {
    using namespace Halide;
    std::optional<Stage> rows;
    std::vector<VarOrRVar> row_loops;  // innermost first: the row within its task (its tile), the task
    if (out.has_update_definition()) {
        RVar k = out.rvars()[0], task("task"), row("row");
        rows = out.update();
        rows->allow_race_conditions().split(k, task, row, p.rows_per_task, TailStrategy::GuardWithIf);
        row_loops = {row, task};
    } else {
        Var s = out.args()[out.dimensions() - 2], b = out.args()[out.dimensions() - 1], task("task"), row("row");
        rows = out;
        rows->fuse(s, b, row).split(row, task, row, p.rows_per_task, TailStrategy::GuardWithIf);
        row_loops = {row, task};
    }
    rows->parallel(row_loops[1]);
    if (tile_rows > 0) {
        VarOrRVar row = row_loops[0], row_tile = row.is_rvar ? VarOrRVar(RVar("row_tile")) : VarOrRVar(Var("row_tile"));
        Var outermost = channels.back().var, channel_tile("channel_tile");
        rows->split(row, row_tile, row, tile_rows, TailStrategy::GuardWithIf)
            .split(outermost, channel_tile, outermost, p.vector_width * tile_vectors, TailStrategy::GuardWithIf);
        row_loops.insert(row_loops.begin() + 1, {channel_tile, row_tile});
    }
    channels.insert(channels.end(), row_loops.begin(), row_loops.end());
    return rows->reorder(channels);
}

// Per-channel tables (c) and tables of position parts (c, row), computed once per call.
inline void schedule_column_tables(const std::vector<Halide::Func> &tables, const EncodingParams &p) {
    for (Halide::Func t : tables) {
        t.compute_root().vectorize(t.args()[0], p.vector_width, Halide::TailStrategy::GuardWithIf);
        if (t.dimensions() == 2) t.parallel(t.args()[1]);
    }
}

inline void schedule_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables,
                              const std::vector<Halide::Expr> &paths, const EncodingParams &p, int tile_rows = 0,
                              int tile_vectors = 0) {
    Halide::Var c = out.args()[0];
    Halide::Stage rows = parallel_rows(out, {c}, p, tile_rows, tile_vectors);
    rows.vectorize(c, p.vector_width, Halide::TailStrategy::GuardWithIf);
    specialize_cases(rows, {}, paths);
    schedule_column_tables(column_tables, p);
}
inline void schedule_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables,
                              const std::vector<Halide::Expr> &paths, const TiledEncodingParams &p) {
    schedule_encoding(out, column_tables, paths, p, p.tile_rows, p.tile_vectors);
}

// A vector of pairs is computed once and stored as its two members, so that the stores overlap
// the arithmetic (computing a chunk of pairs first and then storing it runs them in turn: 35%
// slower here at 512 pairs). Under each layout condition the strides are constants: the half
// layout stores two dense vectors, and the interleaved one two stride-2 vectors, which Halide
// merges into dense interleaving stores.
inline void schedule_pair_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const std::vector<Halide::Expr> &paths,
                                   const EncodingParams &p, int tile_rows = 0, int tile_vectors = 0) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1];
    Stage rows = parallel_rows(out, {m, i}, p, tile_rows, tile_vectors);
    rows.vectorize(i, p.vector_width, TailStrategy::GuardWithIf).unroll(m);
    specialize_cases(rows, layouts, paths);
    pairs.compute_at(out, i).vectorize(pairs.args()[0], p.vector_width, TailStrategy::RoundUp);
    schedule_column_tables(column_tables, p);
}
inline void schedule_pair_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const std::vector<Halide::Expr> &paths,
                                   const TiledEncodingParams &p) {
    schedule_pair_encoding(out, column_tables, pairs, layouts, paths, p, p.tile_rows, p.tile_vectors);
}

}  // namespace posattn::cpu
