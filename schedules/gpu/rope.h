// GPU schedule (CUDA, OpenCL, Vulkan) of RoPE: one thread per (pair, position) of a (head, batch),
// rotating the pair from registers (so an in-place call stays correct); the per-position cos/sin
// table computed once per call and shared by every head. 37% of an H200's copy (tile_rows.h since).
#pragma once

#include "Halide.h"
#include "schedules/gpu/tile_rows.h"

namespace posattn::gpu {

struct RopeParams {
    int pair_threads = 0;      // threads per block along pairs of channels
    int position_threads = 0;  // threads per block along positions

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("pair_threads", pair_threads, {8, 16, 32, 64});
        visit("position_threads", position_threads, {1, 2, 4, 8, 16});
    }
};

inline RopeParams rope_defaults() {
    RopeParams p;
    p.pair_threads = 32;
    p.position_threads = 8;
    return p;
}

inline void schedule_rope(Halide::Func out, Halide::Func out_pass, Halide::Func rotated, Halide::Func cos_sin,
                          const std::vector<Halide::Expr> &layouts, const RopeParams &p) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1], l = out.args()[2], h = out.args()[3], b = out.args()[4];
    Var hb("hb"), ii("ii");
    out.reorder(m, i, l, h, b).fuse(h, b, hb);
    gpu_tile_rows(out, i, l, ii, p.pair_threads, p.position_threads);
    out.gpu_blocks(hb).unroll(m);
    for (const Expr &layout : layouts) out.specialize(layout);
    rotated.compute_at(out, ii);
    cos_sin.compute_root();
    gpu_tile_rows(cos_sin, cos_sin.args()[0], cos_sin.args()[1], Var("cii"), p.pair_threads, p.position_threads);
    cos_sin.gpu_blocks(cos_sin.args()[2]);
    if (!out_pass.defined()) return;
    Var c = out_pass.args()[0], row("row");
    out_pass.fuse(out_pass.args()[1], out_pass.args()[2], row).fuse(row, out_pass.args()[3], row);
    gpu_tile_rows(out_pass, c, row, Var("cc"), p.pair_threads, p.position_threads);
}

}  // namespace posattn::gpu
