// GPU schedule (CUDA, OpenCL, Vulkan) of the generic fused attention (generators/attention.h).
//
// One block per (query tile, head, batch), one thread per query row of the tile. Per key block,
// the tile's logits and probabilities live in shared memory, each row written and read by its own
// thread only (a version with a thread per (query, key) raced across the serial loop over key
// blocks: no barrier separates one block's readers from the next block's writers); q·k and p·v
// accumulate in registers. The tile's q rows are copied with the row innermost, so that the
// threads of a warp read one channel of their rows as consecutive words: read from q itself, each
// load of a warp touched 32 rows' cache lines (the attention kernels ran at 0.3 TFLOP/s on an
// H200, 2026-12-04). Those rows and the running state (numerator, denominator, max) are global
// memory, so that a block's shared memory does not grow with D (at D = 128 it outgrew CUDA's
// 48 KiB and the launch failed). The Lq × Lk matrix is never stored. Relative score and value
// terms (Shaw, Transformer-XL, DeBERTa) are read per logit from their tables laid out by offset,
// which consecutive threads (query rows) read at consecutive offsets.
#pragma once

#include <string>

#include "Halide.h"
#include "generators/attention.h"
#include "schedules/gpu/tile_rows.h"
#include "schedules/gpu/unrolled_sum.h"

namespace posattn::gpu {

struct AttentionParams {
    int query_tile = 0;  // query rows per block (one thread each)
    int key_block = 0;   // keys per online-softmax block
    // The shared memory a block may use, the API's (not searched): 48 KiB, what CUDA gives a
    // kernel without an opt-in and a common OpenCL local memory size; 32 KiB on Vulkan (lavapipe,
    // like many mobile GPUs).
    int shared_bytes = 48 << 10;

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("query_tile", query_tile, {16, 32, 64, 128});
        visit("key_block", key_block, {8, 16, 32, 64, 128});
    }
    // A block's shared memory, its logits, probabilities and their two per-block statistics, is
    // 4·query_tile·(2·key_block + 2) bytes, whatever the head size.
    std::string invalid() const {
        const int bytes = 4 * query_tile * (2 * key_block + 2);
        if (bytes > shared_bytes)
            return "query_tile and key_block need " + std::to_string(bytes) + " bytes of shared memory; at most " +
                   std::to_string(shared_bytes) + " fit";
        return "";
    }
};

// CUDA, OpenCL: 16 rows × 16 keys (2.1 KiB of shared memory): 11.6 ms for plain attention at the
// benchmark's shape on an H200 (2026-12-04, tune/grid.py), against 26.6 ms with 32 × 32 and
// 12.0–12.4 ms with 32, 64 or 128 rows × 16 keys; 32 keys or more took 16.7–37 ms. Vulkan: 16 rows
// × 32 keys, run on lavapipe only (Halide 21's Vulkan runtime aborted on the H200's driver).
inline AttentionParams attention_defaults(bool vulkan = false) {
    AttentionParams p;
    p.query_tile = 16;
    p.key_block = vulkan ? 32 : 16;
    p.shared_bytes = vulkan ? 32 << 10 : 48 << 10;
    return p;
}

inline void schedule_attention(AttentionStages &st, Halide::Func out, const AttentionParams &p, bool vulkan) {
    using namespace Halide;
    if (!st.relative.empty() || !st.value_tables.empty())
        throw CompileError("posattn: relative terms are read per logit on GPUs (AttentionTiles::relative_per_logit)");
    Var d = st.d, i = st.i, jj = st.jj, h = st.h, b = st.b, t("t"), qi("qi");
    RVar rb = st.blocks.x;

    out.split(i, t, qi, p.query_tile, TailStrategy::GuardWithIf).reorder(d, qi, t, h, b).gpu_blocks(t, h, b).gpu_threads(qi);
    for (Func f : {st.state, st.block_max, st.block_sum, st.prob, st.logit}) f.bound_extent(i, p.query_tile);

    // Shared: per key block, the tile's logits and probabilities (2·key_block floats per row).
    // Global ("heap", one slice per block, the row innermost): the tile's q rows, so that a warp
    // reads one channel of its 32 rows as one line, and the running state, touched once per key
    // block (4·(D + 3·Dv) bytes a query row and head, allocated per call: 512 MiB at
    // [2, 32, 4096, 128]). (The q rows in shared memory were overwritten after the first key block on PoCL:
    // Halide 21 let the block's logits reuse their space.) A thread accumulates each channel of
    // the block's p·v in a register. The loops over a block's keys are unrolled and those over
    // channels by 8 (unrolled_sum.h), which cuts the loop iterations a thread runs to ~5·D + 64
    // per key block.
    for (Func f : {st.q_rows, st.state}) f.compute_at(out, t).store_in(MemoryType::Heap).gpu_threads(i);
    st.state.reorder_storage(i, d);
    st.state.update().reorder(d, i, rb).gpu_threads(i);
    st.logit.compute_at(st.state, rb).reorder(jj, i).gpu_threads(i).unroll(jj);
    st.score.compute_at(st.logit, jj);
    for (int u = 0; u < st.score.num_update_definitions(); u++)  // q·k, then any relative terms
        unroll_sum(st.score.update(u), st.channels.x, vulkan);
    st.block_max.compute_at(st.state, rb).gpu_threads(i);
    st.prob.compute_at(st.state, rb).reorder(jj, i).gpu_threads(i).unroll(jj);
    st.block_sum.compute_at(st.state, rb).gpu_threads(i);
    st.block_out.compute_at(st.state, d);
    st.block_out.update().unroll(st.block_keys.x);

    for (PerLogitStages &term : st.per_logit) {  // relative tables by offset once per call
        Func by_offset = term.by_offset;
        Var offset = by_offset.args()[0], channel = by_offset.args()[1], head = by_offset.args()[2];
        Var oo("oo"), oi("oi"), co("co"), ci("ci");
        by_offset.compute_root().gpu_tile(offset, channel, oo, co, oi, ci, 32, 8, TailStrategy::GuardWithIf).gpu_blocks(head);
    }
    if (st.offset_bias.defined()) {  // once per call
        Func bias = st.offset_bias;
        Var offset = bias.args()[0], head = bias.args()[1], oo("oo"), oi("oi");
        bias.compute_root().gpu_tile(offset, oo, oi, 64, TailStrategy::GuardWithIf).gpu_blocks(head);
    }
    for (Func x : {st.q_transformed, st.k_transformed}) {  // once per call
        if (!x.defined()) continue;
        Var xd = x.args()[0], xj = x.args()[1], xh = x.args()[2], xb = x.args()[3];
        Var xhb("xhb");
        x.compute_root().fuse(xh, xb, xhb);
        gpu_tile_rows(x, xd, xj, Var("xdi"), 32, 8);
        x.gpu_blocks(xhb);
    }
}

}  // namespace posattn::gpu
