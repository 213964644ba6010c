// GPU schedules (CUDA, OpenCL, Vulkan) of the elementwise encodings (table and fused "x + PE"
// forms): one thread per (channel, row) output, rows = (batch, position) fused; per-channel
// tables computed once per call by their own kernel. Timed on an H200 (docs/benchmarks.md): 8–37% of
// its copy bandwidth, whatever the block shape.
#pragma once

#include <string>
#include <vector>

#include "Halide.h"
#include "schedules/gpu/tile_rows.h"
#include "schedules/specialize.h"

namespace posattn::gpu {

struct EncodingParams {
    int channel_threads = 0;  // threads per block along channels
    int row_threads = 0;      // threads per block along rows

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("channel_threads", channel_threads, {8, 16, 32, 64, 128});
        visit("row_threads", row_threads, {1, 2, 4, 8, 16});
    }
    // CUDA's limit on a block, and what most GPU APIs report (lavapipe too).
    std::string invalid() const {
        return channel_threads * row_threads > 1024 ? "channel_threads * row_threads must be at most 1024 (threads per block)" : "";
    }
};

inline EncodingParams encoding_defaults() {
    EncodingParams p;
    p.channel_threads = 32;  // a warp along the contiguous axis: coalesced stores
    p.row_threads = 8;
    return p;
}

// The stage that writes out's rows, as the CPU schedules' parallel_rows (out's own, or its update
// over a given order of rows, k), its block's threads over (channel x, row), thread index xi
// along x, and `inner` (innermost first) within each thread.
inline Halide::Stage gpu_rows(Halide::Func out, Halide::Var x, Halide::Var xi, std::vector<Halide::VarOrRVar> inner,
                              const EncodingParams &p) {
    using namespace Halide;
    if (out.has_update_definition()) {
        RVar k = out.rvars()[0];
        Stage rows = out.update();
        inner.insert(inner.end(), {x, k});
        rows.reorder(inner).allow_race_conditions();
        gpu_tile_rows(rows, x, k, xi, p.channel_threads, p.row_threads);
        return rows;
    }
    Var s = out.args()[out.dimensions() - 2], b = out.args()[out.dimensions() - 1], row("row");
    inner.insert(inner.end(), {x, s, b});
    out.reorder(inner).fuse(s, b, row);
    gpu_tile_rows(out, x, row, xi, p.channel_threads, p.row_threads);
    return out;
}

inline void schedule_column_tables(const std::vector<Halide::Func> &tables, const EncodingParams &p) {
    using namespace Halide;
    for (Func t : tables) {
        Var c = t.args()[0], co("co"), ci("ci");
        if (t.dimensions() == 2) {
            Var row = t.args()[1], ro("ro"), ri("ri");
            t.compute_root().gpu_tile(c, row, co, ro, ci, ri, p.channel_threads, p.row_threads, TailStrategy::GuardWithIf);
        } else {
            t.compute_root().gpu_tile(c, co, ci, p.channel_threads * p.row_threads, TailStrategy::GuardWithIf);
        }
    }
}

inline void schedule_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables,
                              const std::vector<Halide::Expr> &paths, const EncodingParams &p) {
    specialize_cases(gpu_rows(out, out.args()[0], Halide::Var("ci"), {}, p), {}, paths);
    schedule_column_tables(column_tables, p);
}

// Each thread computes one pair and stores both members.
inline void schedule_pair_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const std::vector<Halide::Expr> &paths,
                                   const EncodingParams &p) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1], ii("ii");
    Stage rows = gpu_rows(out, i, ii, {m}, p);
    rows.unroll(m);
    specialize_cases(rows, layouts, paths);
    pairs.compute_at(out, ii);
    schedule_column_tables(column_tables, p);
}

}  // namespace posattn::gpu
