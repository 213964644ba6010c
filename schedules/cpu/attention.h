// CPU schedule (x86, ARM) of the generic fused attention (generators/attention.h); each
// family's defaults are in schedules/<family>/attention.h.
//
// Per parallel task: one query tile of one (head, batch). q is transposed once per tile so that
// q·k vectorizes over query rows (or, in tiles of a few rows, copied with its channels innermost
// so that q·k vectorizes over channels: `score_lanes`); for each key block the scores live in a register tile (query rows × `score_keys` keys), the softmax
// statistics in small buffers, and p·v in a register tile (`value_rows` rows × `value_vectors`
// vectors of channels) merged into the running state.
// Relative scores are summed in the q·k register tile's shape (a key group is its `score_keys`
// keys), relative values in the p·v register tile's.
#pragma once

#include <algorithm>

#include "Halide.h"
#include "generators/attention.h"

namespace posattn::cpu {

struct AttentionParams {
    int vector_width = 0;  // float32 lanes per vector of query rows (q·k, the softmax statistics) and of
                           // the stages computed once per call (transformed k, relative tables)
    int query_tile = 0;  // query rows per task; a multiple of vector_width
    int key_block = 0;  // keys per online-softmax block
    int score_keys = 0;  // keys per q·k register tile
    int value_rows = 0;  // query rows per p·v register tile
    int value_vectors = 0;  // vectors of value channels per p·v register tile
    int value_width = 0;  // float32 lanes per vector of value channels (p·v, the state, the output)
    // Channels per q·k vector: 1 puts query rows in the lanes (a broadcast of k per multiply-add);
    // more sums that many channels per lane, then adds the lanes of each (row, key): dense loads
    // of q and k where a tile has only a few rows (decoding).
    int score_lanes = 0;
    int relative_rows = 0;  // table rows per register tile of a query-side relative term
    int relative_keys = 0;  // keys per register tile of a key-side relative term
    // Keys per pass of p·v over the tile's register tiles. At least key_block: each register tile
    // sums the whole block in registers, reading the block's values once per tile (a tile of one
    // row group reads each value row in pieces, a pass per piece). Fewer: the tile's sums live in
    // memory and each pass's values stay in L1 for every register tile. 1: key by key, each value
    // row read whole and in order (decoding, which is memory-bound).
    int value_pass_keys = 0;
    // Interleaved runs of keys per block (AttentionTiles::key_streams): more than 1 where the
    // kernel streams k and v from memory (decoding); 1 for relative variants.
    int key_streams = 0;

    template <typename Visit>
    void fields(Visit &&visit) {
        visit("vector_width", vector_width, {1, 4, 8, 16});  // 1: one-row tiles
        visit("query_tile", query_tile, {1, 4, 8, 16, 24, 32, 48, 64});  // 1, 4, 8: tiles of a few rows (decoding)
        visit("key_block", key_block, {64, 128, 256, 512});
        visit("score_keys", score_keys, {4, 6, 8, 12, 16});
        visit("value_rows", value_rows, {1, 4, 6, 8, 12});
        visit("value_vectors", value_vectors, {1, 2, 3, 4, 8, 16});
        visit("value_width", value_width, {4, 8, 16});  // 16 with 4-lane rows: decoding
        visit("score_lanes", score_lanes, {1, 4, 8, 16});
        visit("relative_rows", relative_rows, {4, 8, 16});
        visit("relative_keys", relative_keys, {4, 8, 16});
        visit("value_pass_keys", value_pass_keys, {1, 64, 128, 512});
        visit("key_streams", key_streams, {1, 2, 4, 8});
    }
    std::string invalid() const {
        if (query_tile % vector_width || query_tile % value_rows)
            return "query_tile must be a multiple of vector_width and of value_rows";
        if (key_block % score_keys) return "key_block must be a multiple of score_keys";
        if (score_keys % key_streams) return "score_keys must be a multiple of key_streams";
        // Channel lanes keep a vector per (row, key) of the register tile.
        if (score_lanes > 1 && query_tile * score_keys > 32)
            return "with score_lanes > 1, query_tile * score_keys must be at most 32 (one register per row and key)";
        return "";
    }
};

// A relative score term's products with the table rows (generators/attention.h); `tile` is the
// loop over query tiles, `head` the loop over (head, batch) outside it.
inline void schedule_relative(RelativeStages &rel, Halide::LoopLevel tile, Halide::LoopLevel head, const AttentionParams &p) {
    using namespace Halide;
    Var x = rel.by_row.args()[0], y = rel.by_row.args()[1];
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
    RVar channel = rel.channels.x;
    rel.largest_step.compute_root();
    if (rel.by_key) {
        // by_row(row, key): per (head, batch), before its query tiles, in parallel over tiles of
        // keys, by register tiles of (two vectors of rows × relative_keys keys). One head's
        // products at a time: 4 MiB of scratch at L = 2048 and 512 rows where all heads' took
        // 33.5 MiB, and all threads share each head's products, where one thread made them
        // (1.055x at H = 1; 1.00-1.02x at H = 8). Rows past the table read a clamped row.
        Var tr = rel.table_by_row.args()[0];
        rel.table_by_row.compute_at(head).vectorize(tr, p.vector_width, TailStrategy::RoundUp);
        rel.by_row.compute_at(head)
            .split(x, xo, xi, 2 * p.vector_width, TailStrategy::RoundUp)
            .split(y, yo, yi, p.relative_keys, TailStrategy::RoundUp)
            .reorder(xi, yi, xo, yo)
            .parallel(yo)
            .vectorize(xi, p.vector_width);
        Func products = rel.key_products;
        Var tx = products.args()[0], ty = products.args()[1];
        products.compute_at(rel.by_row, xo).vectorize(tx, p.vector_width).unroll(tx).unroll(ty);
        products.update().reorder(tx, ty, channel).vectorize(tx, p.vector_width).unroll(tx).unroll(ty);
        return;
    }
    // by_row(i, row, t): per query tile, vectorized over the tile's rows like q·k, in register
    // tiles of one row group.
    RVar in_group = rel.channels.y, row_group = rel.channels.z;
    if (rel.vectors.defined())
        rel.vectors.compute_at(tile).bound_extent(x, p.query_tile).vectorize(x, p.vector_width, TailStrategy::RoundUp);
    rel.by_row.compute_at(tile).bound_extent(x, p.query_tile).vectorize(x, p.vector_width);
    rel.by_row.update()
        .split(x, xo, xi, p.vector_width)
        .reorder(xi, xo, in_group, channel, row_group)
        .vectorize(xi)
        .unroll(xo)
        .unroll(in_group);
}

// A decode class's params cut to tiles of one query row (shape class "decode1": a decoding step
// whose one query row per KV head has no GQA group to fold; a 4-row tile computed 3 rows for
// nothing): p·v over a 64-channel head in one register tile, q·k over channels in the lanes.
// AMD EPYC Zen 3, 2026-12-06, q [1, 8, 1, 128] against 2048 keys: 0.54 ms, the 4-row tile 0.92.
// (128-channel tiles: D = 64 then runs the channel tail, 4x slower.)
inline AttentionParams one_row(AttentionParams p) {
    p.vector_width = p.query_tile = p.value_rows = 1;
    p.value_vectors = std::max(1, 64 / p.value_width);
    if (p.score_lanes == 1) p.score_lanes = p.value_width;  // (no rows to put in the lanes)
    return p;
}

inline void schedule_attention(AttentionStages &st, Halide::Func out, const AttentionParams &p) {
    using namespace Halide;
    Var d = st.d, i = st.i, jj = st.jj, h = st.h, b = st.b;
    Var qo("qo"), qi("qi"), task("task"), io("io"), ii("ii"), jo("jo"), ji("ji"), dv("dv"), dvo("dvo");
    RVar rb = st.blocks.x;

    // Tasks are the query tiles of all heads, or, with a key-side relative term (whose products
    // are made per head, schedule_relative), of one head at a time.
    const bool per_head = std::any_of(st.relative.begin(), st.relative.end(), [](const RelativeStages &rel) { return rel.by_key; });
    out.split(i, qo, qi, p.query_tile, TailStrategy::GuardWithIf).reorder(d, qi, qo, h, b);
    if (per_head) out.rename(qo, task);
    else out.fuse(qo, h, task).fuse(task, b, task);
    // Not partitioned by the key blocks a tile visits (both ends depend on the tile): in the
    // partition's prologue p·v's channel loop stays whole, v is read with its channel clamp as a
    // gather, and DeBERTa ran 2x slower.
    out.parallel(task).vectorize(d, p.value_width, TailStrategy::GuardWithIf).never_partition(task);

    // Every per-tile stage covers the whole query tile, also in a partial last tile (whose extra
    // rows read clamped q rows and are never stored), so register tiles have constant shapes.
    for (Func f : {st.q_rows, st.state, st.block_max, st.block_sum, st.prob, st.logit}) f.bound_extent(i, p.query_tile);
    // A block's keys (fewer than key_block where there are fewer keys) in a block's storage: a
    // constant size, on the stack.
    for (Func f : {st.prob, st.logit}) f.bound_storage(st.jj, p.key_block);
    if (st.group_sum.defined()) st.group_sum.bound_storage(st.g, p.key_block / p.score_keys);

    if (p.score_lanes == 1)
        st.q_rows.compute_at(out, task).vectorize(i, p.vector_width, TailStrategy::RoundUp);
    else  // read along the channels (also by the rows' fallback below, as strided loads)
        st.q_rows.compute_at(out, task).reorder_storage(d, i).vectorize(d, p.score_lanes, TailStrategy::GuardWithIf);
    if (st.q_pairs.defined()) {  // (channel in pair, row) in the lanes: what vdpbf16ps multiplies
        Var c = st.q_pairs.args()[0];
        st.q_pairs.compute_at(out, task).bound(c, 0, 2).bound_extent(i, p.query_tile).vectorize(c).vectorize(i, p.vector_width);
    }
    for (RelativeStages &rel : st.relative) schedule_relative(rel, LoopLevel(out, task), LoopLevel(out, h), p);
    if (st.k_transformed.defined()) {  // once per call, in parallel over (head, batch)
        Func kt = st.k_transformed;
        Var kh = kt.args()[2], kb = kt.args()[3], khb("khb");
        kt.compute_root().fuse(kh, kb, khb).parallel(khb).vectorize(kt.args()[0], p.vector_width, TailStrategy::GuardWithIf);
    }

    if (st.offset_bias.defined()) {  // once per call, in parallel over heads
        Func bias = st.offset_bias;
        bias.compute_root().parallel(bias.args()[1]).vectorize(bias.args()[0], p.vector_width, TailStrategy::GuardWithIf);
    }
    for (Func table : st.value_tables) table.compute_root().vectorize(table.args()[0], p.value_width, TailStrategy::RoundUp);

    st.state.compute_at(out, task).vectorize(d, p.value_width, TailStrategy::RoundUp);
    // The merge of each key block into the running state, by register tiles of
    // (value_vectors vectors of value channels × value_rows query rows); p·v of the block is
    // computed per tile. Dv a multiple of the tile (the usual head sizes) runs without any tail.
    const int value_tile = p.value_width * p.value_vectors;
    // (Also p·v's passes over the whole tile, below, with their keys as the outer loop.)
    auto by_register_tiles = [&](Stage s, TailStrategy channel_tail, VarOrRVar outer) {
        return s.split(d, dvo, dv, value_tile, channel_tail)
            .split(i, io, ii, p.value_rows, TailStrategy::RoundUp)
            .reorder(dv, ii, dvo, io, outer)
            .vectorize(dv, p.value_width)
            .unroll(ii);
    };
    // Halide partitions only the steady state of a loop, not what it nests in a prologue: with
    // the tile or block loop partitioned (causal and windows trim the block loop per tile), the loop over
    // value-channel tiles stayed whole in the prologue, where v is read with its channel clamp as
    // a gather, and p·v ran 2.5x slower (causal: 46 ms instead of 29 at L = 2048).
    st.state.update().never_partition(st.t, rb);
    by_register_tiles(st.state.update().specialize(st.value_channels % value_tile == 0), TailStrategy::RoundUp, rb);
    by_register_tiles(st.state.update(), TailStrategy::GuardWithIf, rb);
    // p·v stages (the block's p·v; the relative values it starts from) and each update's reduction
    // variables.
    auto reduction_vars = [](const std::vector<RDom> &updates) {
        std::vector<std::vector<RVar>> vars;
        for (const RDom &r : updates) {
            vars.emplace_back();
            for (int dim = 0; dim < r.dimensions(); dim++) vars.back().push_back(r[dim]);
        }
        return vars;
    };
    auto with_channels_and_rows_inside = [&](Stage s, const std::vector<RVar> &reduction) {
        std::vector<VarOrRVar> order{d, i};
        order.insert(order.end(), reduction.begin(), reduction.end());
        return s.reorder(order);
    };
    // Always a full register tile: channels past Dv read a clamped column and are never merged.
    auto register_tile = [&](Func f, LoopLevel at, const std::vector<std::vector<RVar>> &updates) {
        f.compute_at(at).bound_extent(d, value_tile).bound_extent(i, p.value_rows).vectorize(d, p.value_width).unroll(d).unroll(i);
        for (size_t u = 0; u < updates.size(); u++)
            with_channels_and_rows_inside(f.update(u), updates[u]).vectorize(d, p.value_width).unroll(d).unroll(i);
    };
    std::vector<std::vector<RVar>> block_keys = reduction_vars({st.block_keys}), value_groups = reduction_vars(st.value_groups);
    if (p.value_pass_keys >= p.key_block) {
        register_tile(st.block_out, LoopLevel(st.state, dvo), block_keys);
        if (st.relative_values.defined()) register_tile(st.relative_values, LoopLevel(st.state, dvo), value_groups);
    } else {
        // For the whole query tile, in passes over value_pass_keys keys.
        auto whole_tile = [&](Func f) {
            return f.compute_at(st.state, rb).bound_extent(i, p.query_tile).vectorize(d, p.value_width, TailStrategy::RoundUp);
        };
        Func block_out = whole_tile(st.block_out);
        RVar key = st.block_keys.x, pass("value_pass"), in_pass("value_pass_key");
        if (p.value_pass_keys > 1) {  // each pass's sums in a register tile, then added to the tile's
            Func pass_sums = block_out.update().split(key, pass, in_pass, p.value_pass_keys).rfactor(pass, Var("value_pass_index"));
            register_tile(pass_sums, LoopLevel(block_out, dvo), {{in_pass}});
            key = pass;
        }
        by_register_tiles(block_out.update(), TailStrategy::RoundUp, key).unroll(dv);
        if (st.relative_values.defined()) {
            Func values = whole_tile(st.relative_values);
            for (size_t u = 0; u < value_groups.size(); u++)
                with_channels_and_rows_inside(values.update(u), value_groups[u]).vectorize(d, p.value_width, TailStrategy::RoundUp);
        }
    }
    if (st.relative_values.defined()) st.group_sum.compute_at(st.state, rb).vectorize(i, p.vector_width, TailStrategy::RoundUp);

    // Softmax statistics of the current key block, vectorized over query rows.
    st.block_max.compute_at(st.state, rb).vectorize(i, p.vector_width, TailStrategy::RoundUp);
    st.block_sum.compute_at(st.state, rb).vectorize(i, p.vector_width, TailStrategy::RoundUp);
    st.prob.compute_at(st.state, rb).vectorize(i, p.vector_width, TailStrategy::RoundUp);

    // Masked, scaled scores of the block, computed by register tiles of q·k.
    st.logit.compute_at(st.state, rb)
        .split(jj, jo, ji, p.score_keys, TailStrategy::RoundUp)
        .split(i, io, ii, p.vector_width, TailStrategy::RoundUp)
        .reorder(ii, io, ji, jo)
        .vectorize(ii)
        .unroll(io)
        .unroll(ji);
    // A mask and bias are read along the keys, a row at a time, into a register tile of the
    // logits' shape (keys innermost), which the logits read as strided loads that Halide turns
    // into dense ones and shuffles: read as the logits run, along the rows, each was a gather.
    // Only the masked specialization has the loop they are computed in.
    Var masked_tile("masked_tile");
    st.logit.specialize(st.masked).split(jo, jo, masked_tile, 1);
    st.key_terms.compute_at(st.logit, masked_tile)
        .bound_extent(i, p.query_tile)
        .bound_extent(jj, p.score_keys)
        .reorder_storage(jj, i)
        .vectorize(jj)
        .unroll(i);
    st.score.compute_at(st.logit, jo)
        .split(i, io, ii, p.vector_width, TailStrategy::RoundUp)
        .reorder(ii, io, jj)
        .vectorize(ii)
        .unroll(io)
        .unroll(jj);
    auto score_over_rows = [&](Stage s, RVar channel) {
        s.split(i, io, ii, p.vector_width, TailStrategy::RoundUp).reorder(ii, io, jj, channel).vectorize(ii).unroll(io).unroll(jj);
    };
    if (st.q_pairs.defined()) {
        // Each lane of a row vector sums a pair of channels: a VectorReduce that Halide makes one
        // vdpbf16ps of.
        RVar in_pair = st.channel_pairs.x, pair = st.channel_pairs.y;
        st.score.update()
            .split(i, io, ii, p.vector_width, TailStrategy::RoundUp)
            .reorder(in_pair, ii, io, jj, pair)
            .atomic()
            .vectorize(in_pair)
            .vectorize(ii)
            .unroll(io)
            .unroll(jj);
        score_over_rows(st.score.update(1), st.last_channel.x);
    } else if (p.score_lanes > 1) {
        // Per (row, key) of the register tile, score_lanes partial sums over the channels, then
        // their horizontal sum; where the channels are whole vectors (else over rows, as above).
        Expr channels = st.channels.x.extent();
        Stage dense = st.score.update().specialize(channels >= p.score_lanes && channels % p.score_lanes == 0);
        RVar vectors("channel_vector"), lanes("channel_lane");
        Var lane("lane");
        Func partial = dense.split(st.channels.x, vectors, lanes, p.score_lanes).rfactor(lanes, lane);
        partial.compute_at(st.logit, jo).reorder_storage(lane, i, jj).vectorize(lane).unroll(i).unroll(jj);
        partial.update().reorder(lane, i, jj, vectors).vectorize(lane).unroll(i).unroll(jj);
        dense.reorder(lanes, i, jj).atomic().vectorize(lanes).unroll(i).unroll(jj);
    }
    if (!st.q_pairs.defined()) score_over_rows(st.score.update(), st.channels.x);
    // The relative scores of the same register tile: one row per uniform key group, then the
    // gathers of the groups that are not.
    if (st.relative_scores.defined()) {
        Func rel = st.relative_scores;
        auto register_tile = [&](Stage s, VarOrRVar key) {
            s.split(i, io, ii, p.vector_width, TailStrategy::RoundUp).reorder(ii, io, key).vectorize(ii).unroll(io).unroll(key);
        };
        rel.compute_at(st.logit, jo);
        register_tile(rel, st.k);
        for (int u = 0; u < rel.num_update_definitions(); u++) register_tile(rel.update(u), st.relative_score_groups[u].x);
    }
}

}  // namespace posattn::cpu
