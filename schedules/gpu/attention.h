// GPU schedule (CUDA, OpenCL, Vulkan) of the generic fused attention (generators/attention.h).
//
// One block per (query tile, head, batch), one thread per query row of the tile. The tile's q
// rows, running state (numerator, denominator, max) and, per key block, logits and
// probabilities live in shared memory, each row written and read by its own thread only (a
// version with a thread per (query, key) raced across the serial loop over key blocks: no barrier
// separates one block's readers from the next block's writers); q·k and p·v accumulate in
// registers. The Lq × Lk matrix is never stored. Relative score and value terms (Shaw,
// Transformer-XL, DeBERTa) are read per logit from their tables laid out by offset, which
// consecutive threads (query rows) read at consecutive offsets. Not timed on a GPU (none lent).
#pragma once

#include "Halide.h"
#include "generators/attention.h"

namespace posattn::gpu {

struct AttentionParams {
    int query_tile = 0;  // query rows per block (one thread each)
    int key_block = 0;   // keys per online-softmax block

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("query_tile", query_tile, {16, 32, 64, 128});
        visit("key_block", key_block, {16, 32, 64, 128});
    }
};

inline AttentionParams attention_defaults() {
    AttentionParams p;
    p.query_tile = 32;
    p.key_block = 64;  // 2 × 8 KiB of shared logits and probabilities per block
    return p;
}

inline void schedule_attention(AttentionStages &st, Halide::Func out, const AttentionParams &p) {
    using namespace Halide;
    if (!st.relative.empty() || !st.value_tables.empty())
        throw CompileError("posattn: relative terms are read per logit on GPUs (AttentionTiles::relative_per_logit)");
    Var d = st.d, i = st.i, jj = st.jj, h = st.h, b = st.b, t("t"), qi("qi");
    RVar rb = st.blocks.x;

    out.split(i, t, qi, p.query_tile, TailStrategy::GuardWithIf).reorder(d, qi, t, h, b).gpu_blocks(t, h, b).gpu_threads(qi);
    for (Func f : {st.q_rows, st.state, st.block_max, st.block_sum, st.prob, st.logit}) f.bound_extent(i, p.query_tile);

    st.state.compute_at(out, t).gpu_threads(i);
    st.state.update().reorder(d, i, rb).gpu_threads(i);
    // Per key block, inside the serial loop over blocks. The q rows too: Halide 21 packs shared
    // allocations by their first and last barrier stage and does not extend a lifetime over the
    // serial loop, so q rows staged once before it shared memory with a later stage of the loop
    // body and were overwritten from the second key block on.
    st.q_rows.compute_at(st.state, rb).gpu_threads(i);
    st.logit.compute_at(st.state, rb).reorder(jj, i).gpu_threads(i);
    st.score.compute_at(st.logit, jj);
    st.block_max.compute_at(st.state, rb).gpu_threads(i);
    st.prob.compute_at(st.state, rb).reorder(jj, i).gpu_threads(i);
    st.block_sum.compute_at(st.state, rb).gpu_threads(i);
    st.block_out.compute_at(st.state, rb).gpu_threads(i);
    st.block_out.update().gpu_threads(i);

    for (PerLogitStages &term : st.per_logit) {  // relative tables by offset once per call; query vectors as q rows
        Func by_offset = term.by_offset;
        Var offset = by_offset.args()[0], channel = by_offset.args()[1], head = by_offset.args()[2];
        Var oo("oo"), oi("oi"), co("co"), ci("ci");
        by_offset.compute_root().gpu_tile(offset, channel, oo, co, oi, ci, 32, 8, TailStrategy::GuardWithIf).gpu_blocks(head);
        if (term.vectors.defined()) term.vectors.compute_at(st.state, rb).bound_extent(i, p.query_tile).gpu_threads(i);
    }
    if (st.k_transformed.defined()) {  // once per call
        Func kt = st.k_transformed;
        Var kd = kt.args()[0], kj = kt.args()[1], kh = kt.args()[2], kb = kt.args()[3];
        Var khb("khb"), kdo("kdo"), kdi("kdi"), kjo("kjo"), kji("kji");
        kt.compute_root().fuse(kh, kb, khb)
            .gpu_tile(kd, kj, kdo, kjo, kdi, kji, 32, 8, TailStrategy::GuardWithIf)
            .gpu_blocks(khb);
    }
}

}  // namespace posattn::gpu
