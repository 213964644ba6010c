// GPU schedule (CUDA, OpenCL, Vulkan) of one FLOATER step: each stage's products computed whole
// (each needs the previous stage complete), one thread per (output row, state) accumulating its
// dot product in a register. Not timed on a GPU yet (none here).
#pragma once

#include "Halide.h"
#include "schedules/cpu/floater.h"  // FloaterStage

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
                                  const FloaterParams &p) {
    using namespace Halide;
    // f(row, n): blocks of row_threads rows per state; returns the thread variable.
    auto rows = [&](Func f) {
        Var row = f.args()[0], n = f.args()[1], ro("ro"), ri("ri");
        f.compute_root().gpu_tile(row, ro, ri, p.row_threads, TailStrategy::GuardWithIf).gpu_blocks(n);
        return ri;
    };
    auto product = [&](Func f) {  // stored through a wrapper; accumulated in a register by its thread
        Func stored = f.in();
        f.compute_at(stored, rows(stored));
    };
    for (FloaterStage s : stages) {
        product(s.hidden);
        product(s.k);
        rows(s.state);
    }
    Var c = y_next.args()[0], n = y_next.args()[1], co("co"), ci("ci");
    y_next.gpu_tile(c, co, ci, p.row_threads, TailStrategy::GuardWithIf).gpu_blocks(n);
}

}  // namespace posattn::gpu
