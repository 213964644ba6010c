// CPU schedule (x86, ARM) of the linear generator: a register-tiled matrix product, vectorized over outputs.
#pragma once

#include "Halide.h"
#include "generators/linear.h"

namespace posattn::cpu {

struct LinearParams {
    int vector_width = 0;  // float32 lanes per vector
    int tile_vectors = 0;  // vectors of outputs per register tile
    int tile_rows = 0;  // rows of x per register tile
    int rows_per_task = 0;  // rows of x per parallel task, a multiple of tile_rows

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("vector_width", vector_width, {4, 8, 16});
        visit("tile_vectors", tile_vectors, {1, 2, 3, 4});
        visit("tile_rows", tile_rows, {2, 4, 6, 8, 12});
        visit("rows_per_task", rows_per_task, {12, 24, 48, 96});
    }
    std::string invalid() const { return rows_per_task % tile_rows ? "rows_per_task must be a multiple of tile_rows" : ""; }
    int tile_width() const { return vector_width * tile_vectors; }  // outputs per register tile
};

inline void schedule_linear(LinearStages &st, Halide::Func out, const LinearParams &p) {
    using namespace Halide;
    Var o = out.args()[0], n = out.args()[1];
    Var oo("oo"), oi("oi"), no("no"), ni("ni"), nt("nt"), task("task");
    const int tile = p.tile_width();
    // Jobs are (row block, panel) pairs: each panel of a register tile's outputs (tile × E of the
    // transposed weight, in L2) against every row tile of the block; many jobs balance the two
    // threads where row blocks alone may not (96-row blocks: 288 rows against 224 at N = 512).
    out.split(n, task, nt, p.rows_per_task, TailStrategy::GuardWithIf)
        .tile(o, nt, oo, no, oi, ni, tile, p.tile_rows, TailStrategy::GuardWithIf)
        .reorder(oi, ni, no, oo, task)
        .fuse(oo, task, task)
        .parallel(task)
        .vectorize(oi, p.vector_width);
    // The weight transposed once into panels (generators/linear.h), in parallel over them. A panel
    // read with the whole weight's row stride (3 KiB at O = 768, past the L1 stride prefetcher's
    // reach) took 1.18x the time (Intel Xeon, 2026-12-05, 21 alternated pairs). (Transposed inside
    // the loop over inputs, it was one parallel loop of a few tiny tasks per input: 512 thread-pool
    // dispatches for a 512-input weight, a third of the kernel's time, AMD EPYC, 2026-12-03.)
    st.product.compute_at(out, no)
        .bound_extent(o, tile)
        .bound_extent(n, p.tile_rows)
        .vectorize(o, p.vector_width)
        .unroll(o)
        .unroll(n);
    auto by_output_vectors = [&](Stage s, RVar input) { s.reorder(o, n, input).vectorize(o, p.vector_width).unroll(o).unroll(n); };
    if (!st.bfloat16_pairs) {
        Var panel_output = st.weight_panels.args()[0], panel = st.weight_panels.args()[2];
        st.weight_panels.compute_root().parallel(panel).vectorize(panel_output, p.vector_width);
        by_output_vectors(st.product.update(), st.reduction.x);
        return;
    }
    // (pair lane, output) in the lanes: each lane sums a pair of products, one vdpbf16ps.
    Var in_pair = st.weight_panels.args()[0], panel_output = st.weight_panels.args()[1], panel = st.weight_panels.args()[3];
    st.weight_panels.compute_root().parallel(panel).bound(in_pair, 0, 2).vectorize(in_pair).vectorize(panel_output, p.vector_width);
    RVar pair_lane = st.reduction.x, pair = st.reduction.y;
    st.product.update(0).reorder(pair_lane, o, n, pair).atomic().vectorize(pair_lane).vectorize(o, p.vector_width).unroll(o).unroll(n);
    by_output_vectors(st.product.update(1), st.last_input.x);
}

}  // namespace posattn::cpu
