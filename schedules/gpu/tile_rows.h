// Threads over (channel, row) tiles of an output, for GPU schedules, with the row tiles on the
// grid's x (2^31 − 1 blocks) and the channel tiles on y. gpu_tile put the row tiles on y, which
// CUDA caps at 65,535 blocks: an encoding of B·S rows, 8 rows a block, failed to launch from
// 524,288 rows on (an H200, 2026-12-04). Both tiles fused into x instead launched, but took 1.4x
// as long at the benchmark's shape (its index arithmetic); this form differs from gpu_tile's
// PTX only in which block index is which, and has not been timed on a GPU yet.
#pragma once

#include <string>

#include "Halide.h"

namespace posattn::gpu {

inline void gpu_tile_rows(Halide::Stage stage, const Halide::VarOrRVar &x, const Halide::VarOrRVar &row,
                          const Halide::VarOrRVar &x_thread, int x_threads, int row_threads) {
    using namespace Halide;
    auto named = [](const VarOrRVar &like, const std::string &name) {
        return like.is_rvar ? VarOrRVar(RVar(name)) : VarOrRVar(Var(name));
    };
    VarOrRVar x_tile = named(x, x.name() + "_tile"), row_tile = named(row, row.name() + "_tile"),
              row_thread = named(row, row.name() + "_thread");
    stage.split(x, x_tile, x_thread, x_threads, TailStrategy::GuardWithIf)
        .split(row, row_tile, row_thread, row_threads, TailStrategy::GuardWithIf)
        .reorder(x_thread, row_thread, row_tile, x_tile)
        .gpu_blocks(row_tile, x_tile)
        .gpu_threads(x_thread, row_thread);
}

}  // namespace posattn::gpu
