// GPU schedule (CUDA, OpenCL, Vulkan) of one FLOATER step: one kernel, one block per state. The
// block runs the stages in order (each needs the previous one whole; Halide puts barriers between
// them) with their rows in shared memory, row_threads threads over each stage's rows, and each
// row's dot product accumulated in its thread's register. One launch per step, and no
// intermediate in device memory: with one kernel per stage (the first version), Halide 21's
// Vulkan allocator reused freed regions with stale, smaller buffers (fixed upstream after the
// release, PR #9224) and lavapipe read wrong stages. Shared memory grows with d and hidden:
// rk4 at d = hidden = 2048 asks 40,960 bytes (over lavapipe's 32 KiB: Halide's error says so).
// On an H200 (docs/benchmarks.md), one launch per step: 420 ms for the benchmark's rk4_38.
#pragma once

#include "Halide.h"
#include "schedules/cpu/floater.h"  // FloaterStage
#include "schedules/gpu/unrolled_sum.h"

namespace posattn::gpu {

struct FloaterParams {
    int row_threads = 0;  // threads per block along output rows

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("row_threads", row_threads, {32, 64, 128, 256});
    }
};

inline FloaterParams floater_defaults() {
    FloaterParams p;
    p.row_threads = 64;
    return p;
}

inline void schedule_floater_step(Halide::Func y_next, const std::vector<FloaterStage> &stages,
                                  const FloaterParams &p, bool vulkan) {
    using namespace Halide;
    Var c = y_next.args()[0], n = y_next.args()[1], co("co"), ci("ci");
    y_next.split(c, co, ci, p.row_threads, TailStrategy::GuardWithIf).reorder(ci, co, n).gpu_blocks(n).gpu_threads(ci);
    auto rows = [&](Func f) {
        Var row = f.args()[0], ro("ro"), ri("ri");
        f.compute_at(y_next, n).split(row, ro, ri, p.row_threads, TailStrategy::GuardWithIf).reorder(ri, ro).gpu_threads(ri);
        return ri;
    };
    // Each product is stored through a wrapper and accumulated in a register by its thread, its sum
    // unrolled by 8 (unrolled_sum.h): a step is ~stages·(⌈hidden/row_threads⌉·d +
    // ⌈d/row_threads⌉·hidden) terms per thread (rk4 at d = hidden = 1024: 131,072 rolled).
    auto product = [&](Func f) {
        Func stored = f.in();
        f.compute_at(stored, rows(stored));
        unroll_sum(f.update(), RVar(f.update().get_schedule().rvars()[0].var), vulkan);
    };
    for (FloaterStage s : stages) {
        rows(s.state);
        product(s.hidden);
        product(s.k);
    }
}

}  // namespace posattn::gpu
