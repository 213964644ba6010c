// GPU schedule (CUDA, OpenCL, Vulkan) of the linear generator: one thread per output, its dot
// product accumulated in a register; the weight transposed once so that a warp's threads read
// consecutive outputs. On an H200: 1.2 ms, 492 GFLOP/s, for the benchmark's 512 × 768 → 768
// (before the weight's panels of 2026-12-05, unmeasured on a GPU since).
#pragma once

#include "Halide.h"
#include "generators/linear.h"
#include "schedules/gpu/tile_rows.h"

namespace posattn::gpu {

struct LinearParams {
    int output_threads = 0;  // threads per block along outputs
    int row_threads = 0;     // threads per block along rows of x

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("output_threads", output_threads, {8, 16, 32, 64});
        visit("row_threads", row_threads, {1, 2, 4, 8, 16});
    }
};

inline LinearParams linear_defaults() {
    LinearParams p;
    p.output_threads = 32;
    p.row_threads = 8;
    return p;
}

inline void schedule_linear(LinearStages &st, Halide::Func out, const LinearParams &p) {
    using namespace Halide;
    Var o = out.args()[0], n = out.args()[1], oi("oi");
    gpu_tile_rows(out, o, n, oi, p.output_threads, p.row_threads);
    st.product.compute_at(out, oi);
    // A panel per thread block's outputs (linear_panel_width), tiled over (output, input); the
    // panels are a third block dimension.
    Var wo = st.weight_panels.args()[0], we = st.weight_panels.args()[1], wt = st.weight_panels.args()[2];
    Var wbo("wbo"), wbi("wbi"), web("web"), wei("wei");
    st.weight_panels.compute_root()
        .gpu_tile(wo, we, wbo, web, wbi, wei, p.output_threads, p.row_threads, TailStrategy::GuardWithIf)
        .gpu_blocks(wt);
}

}  // namespace posattn::gpu
