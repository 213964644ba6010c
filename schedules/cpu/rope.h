// CPU schedule (x86, ARM) of RoPE. Tasks are tiles of positions of one batch; a tile's cos/sin table is
// computed once and used by every head, so the trigonometry costs 1/H of a per-head one. Within
// a head the tile's rows are contiguous memory, one stream in and one out.
#pragma once

#include "Halide.h"

namespace posattn::cpu {

struct RopeParams {
    int vector_width = 0;  // float32 lanes per vector
    int positions_per_task = 0;  // rows of one head per tile (for a shorter sequence, about this
                                 // many rows of several heads); its cos/sin is shared by all heads
    int pass_rows_per_task = 0;  // rows per task of the pass-through copy

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("vector_width", vector_width, {4, 8, 16, 32});
        visit("positions_per_task", positions_per_task, {16, 32, 64, 128, 256, 512});
        visit("pass_rows_per_task", pass_rows_per_task, {16, 32, 64, 128, 256});
    }
};

// Through the store stage (generators/store_stage.h), a task computes and stores its positions of
// one head at a time, or of a group of heads where the sequence is shorter than positions_per_task
// (decoding: one store for up to positions_per_task heads).
inline void schedule_rope(Halide::Func out, Halide::Func tile, Halide::Func out_pass, Halide::Func rotated,
                          Halide::Func cos_sin, const std::vector<Halide::Expr> &layouts,
                          const RopeParams &p) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1], l = out.args()[2], h = out.args()[3], b = out.args()[4];
    Var lo("lo"), li("li"), task("task"), ho("ho"), hi("hi");
    // Through the store stage a tail tile is computed in full (store_stage.h), so a short sequence
    // (one position when decoding) takes tiles of its own length.
    Expr L = out.output_buffer().dim(2).extent();
    Expr positions = out.is_extern() ? min(p.positions_per_task, L) : Expr(p.positions_per_task);
    out.split(l, lo, li, positions, TailStrategy::GuardWithIf)
        .reorder(m, i, li, h, lo, b)
        .fuse(lo, b, task)
        .parallel(task);
    Func computed = out;
    if (out.is_extern()) {
        // Groups of equal size: a tail group is computed in full (like a tail tile), its heads
        // past H read clamped and never stored.
        Expr H = out.output_buffer().dim(3).extent();
        Expr most = clamp(p.positions_per_task / max(L, 1), 1, max(H, 1));
        Expr groups = (H + most - 1) / most;
        out.split(h, ho, hi, max((H + groups - 1) / max(groups, 1), 1), TailStrategy::GuardWithIf);
        computed = tile;
        tile.compute_at(out, ho).bound(m, 0, 2).reorder(m, i, l, h);  // (the stage's region is known only at run time)
    }
    computed.vectorize(i, p.vector_width, TailStrategy::GuardWithIf).unroll(m);
    for (const Expr &layout : layouts) computed.specialize(layout);
    // The rotation of a vector of pairs is computed (reading both members) before either member
    // is stored, which keeps an in-place call (out aliasing x) correct.
    rotated.compute_at(computed, i).vectorize(rotated.args()[0], p.vector_width, TailStrategy::GuardWithIf);
    cos_sin.compute_at(out, task).vectorize(cos_sin.args()[0], p.vector_width, TailStrategy::GuardWithIf);

    if (!out_pass.defined()) return;
    Var c = out_pass.args()[0], row("row"), rows("rows");
    out_pass.fuse(out_pass.args()[1], out_pass.args()[2], row)
        .fuse(row, out_pass.args()[3], row)
        .split(row, rows, row, p.pass_rows_per_task, TailStrategy::GuardWithIf)
        .parallel(rows)
        .vectorize(c, p.vector_width, TailStrategy::GuardWithIf);
}

}  // namespace posattn::cpu
