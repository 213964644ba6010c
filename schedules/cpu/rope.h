// CPU schedule (x86, ARM) of RoPE. Tasks are tiles of positions of one batch; a tile's cos/sin table is
// computed once and used by every head, so the trigonometry costs 1/H of a per-head one. Within
// a head the tile's rows are contiguous memory, one stream in and one out.
#pragma once

#include "Halide.h"

namespace posattn::cpu {

struct RopeParams {
    int vector_width = 0;  // float32 lanes per vector
    int positions_per_task = 0;  // rows of one head per tile; its cos/sin is shared by all heads

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("vector_width", vector_width, {4, 8, 16, 32});
        visit("positions_per_task", positions_per_task, {16, 32, 64, 128, 256, 512});
    }
};

inline void schedule_rope(Halide::Func out, Halide::Func out_pass, Halide::Func rotated, Halide::Func cos_sin,
                          const std::vector<Halide::Expr> &layouts, const RopeParams &p) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1], l = out.args()[2], h = out.args()[3], b = out.args()[4];
    Var lo("lo"), li("li"), task("task");
    // Tasks of positions_per_task rows of one batch, each head in turn; `inner`: the loops inside a row.
    auto row_tasks = [&](Func f, std::vector<VarOrRVar> inner) -> Func {
        inner.insert(inner.end(), {li, h, lo, b});
        return f.split(l, lo, li, p.positions_per_task, TailStrategy::GuardWithIf).reorder(inner).fuse(lo, b, task).parallel(task);
    };
    row_tasks(out, {m, i}).vectorize(i, p.vector_width, TailStrategy::GuardWithIf).unroll(m);
    for (const Expr &layout : layouts) out.specialize(layout);
    // The rotation of a vector of pairs is computed (reading both members) before either member
    // is stored, which keeps an in-place call (out aliasing x) correct.
    rotated.compute_at(out, i).vectorize(rotated.args()[0], p.vector_width, TailStrategy::GuardWithIf);
    cos_sin.compute_at(out, task).vectorize(cos_sin.args()[0], p.vector_width, TailStrategy::GuardWithIf);

    if (!out_pass.defined()) return;
    // The pass-through channels of each row are copied in the same loop over rows, right after
    // its rotated ones: one stream through the rows instead of two strided passes.
    Var c = out_pass.args()[0];
    row_tasks(out_pass, {c}).vectorize(c, p.vector_width, TailStrategy::GuardWithIf).compute_with(out, li);
}

}  // namespace posattn::cpu
