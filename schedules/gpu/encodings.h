// GPU schedules (CUDA, OpenCL, Vulkan) of the elementwise encodings (table and fused "x + PE"
// forms): one thread per (channel, row) output, rows = (batch, position) fused; per-channel
// tables computed once per call by their own kernel. Not timed on a GPU yet (none here).
#pragma once

#include "Halide.h"
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
};

inline EncodingParams encoding_defaults() {
    EncodingParams p;
    p.channel_threads = 32;  // a warp along the contiguous axis: coalesced stores
    p.row_threads = 8;
    return p;
}

// out(c, s, b) → out(c, row): the block's threads over (channels, rows).
inline void gpu_rows(Halide::Func out, const EncodingParams &p) {
    using namespace Halide;
    Var c = out.args()[0], s = out.args()[1], b = out.args()[2], row("row"), co("co"), ci("ci"), ro("ro"), ri("ri");
    out.fuse(s, b, row).gpu_tile(c, row, co, ro, ci, ri, p.channel_threads, p.row_threads, TailStrategy::GuardWithIf);
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
                              const Halide::Expr &uses_tables, const EncodingParams &p) {
    gpu_rows(out, p);
    specialize_cases(out, {}, uses_tables);
    schedule_column_tables(column_tables, p);
}

// Each thread computes one pair and stores both members.
inline void schedule_pair_encoding(Halide::Func out, const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const Halide::Expr &uses_tables,
                                   const EncodingParams &p) {
    using namespace Halide;
    Var i = out.args()[0], m = out.args()[1], s = out.args()[2], b = out.args()[3];
    Var row("row"), io("io"), ii("ii"), ro("ro"), ri("ri");
    out.reorder(m, i, s, b).fuse(s, b, row)
        .gpu_tile(i, row, io, ro, ii, ri, p.channel_threads, p.row_threads, TailStrategy::GuardWithIf)
        .unroll(m);
    specialize_cases(out, layouts, uses_tables);
    pairs.compute_at(out, ii);
    schedule_column_tables(column_tables, p);
}

}  // namespace posattn::gpu
