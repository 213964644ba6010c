// CPU schedule (x86, ARM) of one FLOATER step: every stage's two products are computed whole (each needs the
// previous stage complete), vectorized over output rows, which are split into parallel tasks;
// the reduction runs over the input rows of the transposed weights, one contiguous row at a time.
#pragma once

#include "Halide.h"

namespace posattn {

// One Runge–Kutta stage: state(c, n) → hidden(u, n) = W1·[state; t] + b1 → k(c, n).
struct FloaterStage {
    Halide::Func state, hidden, k;
};

namespace cpu {

struct FloaterParams {
    int vector_width = 0;  // float32 lanes per vector
    int rows_per_task = 0;  // output rows (hidden units or channels) per parallel task
    int row_vectors = 0;  // vectors of rows per register tile
    int states_per_tile = 0;  // states (initial values) per register tile

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("vector_width", vector_width, {4, 8, 16});
        visit("rows_per_task", rows_per_task, {16, 32, 64, 128, 256});
        visit("row_vectors", row_vectors, {1, 2, 4, 6, 8});
        visit("states_per_tile", states_per_tile, {1, 2, 3, 6});
    }
};

inline void schedule_floater_step(Halide::Func y_next, const std::vector<FloaterStage> &stages,
                                  const FloaterParams &p) {
    using namespace Halide;
    // Each product f is stored through a wrapper; f itself is computed per register tile of
    // row_vectors × states_per_tile accumulators, which stay in registers along the reduction,
    // so that each weight vector loaded serves states_per_tile states. Tiles past the last row or
    // state compute on clamped reads (generators/floater_generator.cpp) and are never stored.
    auto product = [&](Func f) {
        Var row = f.args()[0], n = f.args()[1], task("task"), tile("tile"), ri("ri"), no("no"), ni("ni"), vi("vi");
        int tile_rows = p.vector_width * p.row_vectors;
        Func stored = f.in();
        stored.compute_root()
            .split(row, task, ri, p.rows_per_task, TailStrategy::GuardWithIf)
            .split(ri, tile, ri, tile_rows, TailStrategy::GuardWithIf)
            .split(n, no, ni, p.states_per_tile, TailStrategy::GuardWithIf)
            .reorder(ri, ni, no, tile, task)
            .vectorize(ri, p.vector_width, TailStrategy::GuardWithIf)
            .parallel(task);
        RVar r(f.update().get_schedule().rvars()[0].var);
        f.compute_at(stored, no).bound_extent(row, tile_rows).bound_extent(n, p.states_per_tile)
            .split(row, ri, vi, p.vector_width).vectorize(vi).unroll(ri).unroll(n);
        f.update().split(row, ri, vi, p.vector_width).reorder(vi, ri, n, r).vectorize(vi).unroll(ri).unroll(n);
    };
    for (FloaterStage s : stages) {
        product(s.hidden);
        product(s.k);
        s.state.compute_root().vectorize(s.state.args()[0], p.vector_width, TailStrategy::GuardWithIf);
    }
    y_next.vectorize(y_next.args()[0], p.vector_width, TailStrategy::GuardWithIf);
}

}  // namespace cpu
}  // namespace posattn
