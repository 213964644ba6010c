// The generic fused attention algorithm. A variant is a declaration (AttentionDeclaration), not
// a new kernel: its score terms and q/k transforms are plugged into one algorithm that keeps an
// online softmax over key blocks, so the Lq × Lk score matrix is never stored.
//
//   logit(i, j) = scale · (q'_i · k'_j + Σ relative scores(i, j)) + Σ biases(i, j)
//                 q' = transform_q(q), k' = transform_k(k)
//   visible(i, j) = j < key_lengths[b]  ∧  j − p_i ≤ lookahead  ∧  p_i − j < window  (causal: lookahead 0)
//                 p_i = i + Lk − Lq, the query's absolute position (SPEC §0, bottom-right)
//   out_i = Σ_j softmax_j(logit) (v_j + Σ relative values(i, j)) over visible j; a row with no
//           visible key is exactly 0.
//
// A relative term reads a table row chosen by an index function of (i, j). Its dot products are
// computed per tile, not per (i, j): a query-side term takes the product of the query tile with
// every table row (a small matmul) and gathers from it; a key-side term takes the products of
// every key with every row once per call.
//
// Keys are processed in blocks of `key_block`. Each block yields its own max m_r, sum of
// exponentials l_r and weighted values o_r; the running state (num, den, m) is merged with them:
//   m' = max(m, m_r),  num' = num·e^(m−m') + o_r·e^(m_r−m'),  den' = den·e^(m−m') + l_r·e^(m_r−m').
// The query tile and the key block are the tiling decisions the algorithm itself must know (the
// state is kept per query tile, so that key blocks no row of a tile sees are skipped), so the
// schedule supplies them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "Halide.h"
#include "softmax_exp.h"

namespace posattn {

// Where one logit lives: query row i of q, key j, q head h (k/v head h / group), batch b.
struct ScoreSite {
    Halide::Expr query, key, head, batch;
    Halide::Expr query_position;  // absolute position of query i: i + Lk − Lq
};

using IndexFunction = std::function<Halide::Expr(const ScoreSite &)>;

// A score term added to q'·k' before scaling: vectors · table(·, index(i, j), h), where the
// vectors are the query rows (content-to-position: Shaw's a^K, Transformer-XL's BD, DeBERTa's
// c2p) or the keys k'_j (position-to-content: DeBERTa's p2c).
struct RelativeScore {
    bool by_key = false;
    // Query side: the vectors made from q (Transformer-XL's q + v); q' itself if unset.
    std::function<Halide::Func(Halide::Func)> query_vectors;
    Halide::Func table;  // table(d, row, h), rows [0, rows)
    Halide::Expr rows;
    IndexFunction index;  // a row in [0, rows)
};

// A value term: v_j + table(·, index(i, j), h) in place of v_j (Shaw's a^V).
struct RelativeValue {
    Halide::Func table;  // table(d, row, h), rows [0, rows)
    Halide::Expr rows;
    IndexFunction index;
};

// What a variant is. The plain declaration is empty.
struct AttentionDeclaration {
    // Added to the logit after scaling, unscaled (ALiBi, T5 buckets).
    std::vector<IndexFunction> logit_biases;
    std::vector<RelativeScore> relative_scores;
    std::vector<RelativeValue> relative_values;
    // Applied to q(d, i, h, b) and k(d, j, h, b) before the dot product (RoPE); identity if unset.
    // A transformed k is computed once per call (stages.k_transformed), a transformed q per tile.
    std::function<Halide::Func(Halide::Func)> transform_q, transform_k;
};

// The products of one relative score term: by_row(i, row, h, b) for a query tile, or
// by_row(row, j, h, b) for every key, made from the query rows (q_rows, or vectors(i, d, h, b)
// when the term makes its own) or from table_by_row(row, d, h) (key side, the table transposed).
struct RelativeStages {
    bool by_key;
    Halide::Func by_row, vectors, table_by_row;
    Halide::RDom channels;
};

// The Funcs and Vars a schedule needs.
struct AttentionStages {
    std::vector<RelativeStages> relative;
    Halide::Func out, state, block_out, block_sum, block_max, prob, logit, score, q_rows;
    Halide::Func k_transformed;  // defined when the declaration transforms k
    std::vector<Halide::Func> value_tables;  // per relative value term, padded channels
    Halide::Var d, i, jj, h, b;  // value/channel, query row, key within block, head, batch
    Halide::RDom blocks, block_keys, channels;
    Halide::Expr value_channels;  // Dv
    int query_tile, key_block;
};

// q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] as Halide (channel, row, head, batch).
inline AttentionStages define_attention(const AttentionDeclaration &decl, int query_tile, int key_block,
                                        Halide::Func q, Halide::Func k, Halide::Func v,
                                        Halide::Expr D, Halide::Expr Dv, Halide::Expr Lq, Halide::Expr Lk,
                                        Halide::Expr group, Halide::Func key_lengths,
                                        Halide::Expr scale, Halide::Expr lookahead, Halide::Expr window) {
    using namespace Halide;
    AttentionStages st;
    st.query_tile = query_tile;
    st.key_block = key_block;
    st.value_channels = Dv;
    st.out = Func("out_tile");
    st.state = Func("state");
    st.block_out = Func("block_out");
    st.block_sum = Func("block_sum");
    st.block_max = Func("block_max");
    st.prob = Func("prob");
    st.logit = Func("logit");
    st.score = Func("score");
    st.q_rows = Func("q_rows");
    Var d = st.d, i = st.i, jj = st.jj, h = st.h, b = st.b, r("r");

    Func qt = decl.transform_q ? decl.transform_q(q) : q;
    Func kt = k;
    if (decl.transform_k) kt = st.k_transformed = decl.transform_k(k);
    // Rows past Lq (in a partial query tile), keys past Lk (in the last key block) and value
    // channels past Dv (in a partial register tile) read a clamped row or column; those results
    // are masked or never stored.
    st.q_rows(i, d, h, b) = qt(d, clamp(i, 0, Lq - 1), h, b);
    auto key_row = [&](Expr j) { return clamp(j, 0, Lk - 1); };

    const float lowest = std::numeric_limits<float>::lowest();
    st.channels = RDom(0, D, "channel");
    st.block_keys = RDom(0, key_block, "block_key");
    st.blocks = RDom(0, (Lk + key_block - 1) / key_block, "key_block");

    // Scores of one (query, key) block: score(i, jj, r, h, b) for key j = r·key_block + jj.
    Expr j = r * key_block + jj;
    st.score(i, jj, r, h, b) = 0.0f;
    st.score(i, jj, r, h, b) += st.q_rows(i, st.channels, h, b) * kt(st.channels, key_row(j), h / group, b);

    ScoreSite site{i, j, h, b, i + (Lk - Lq)};
    Expr score = st.score(i, jj, r, h, b);
    for (const RelativeScore &term : decl.relative_scores) {
        RelativeStages rel{term.by_key, Func(term.by_key ? "key_relative" : "query_relative"),
                           Func("relative_query_rows"), Func("relative_table_by_row"), RDom(0, D, "relative_channel")};
        Var row("row"), key("key");
        Expr safe_row = clamp(row, 0, term.rows - 1);  // the schedule may round rows up
        Expr index = clamp(term.index(site), 0, term.rows - 1);
        if (term.by_key) {
            rel.table_by_row(row, d, h) = term.table(d, safe_row, h);
            rel.by_row(row, key, h, b) = 0.0f;
            rel.by_row(row, key, h, b) += rel.table_by_row(row, rel.channels, h) * kt(rel.channels, key, h / group, b);
            score += rel.by_row(index, key_row(j), h, b);
        } else {
            Func vectors = st.q_rows;  // q' as (row, channel), shared with q·k
            if (term.query_vectors) {
                Func made = term.query_vectors(q);
                vectors = rel.vectors;
                vectors(i, d, h, b) = made(d, clamp(i, 0, Lq - 1), h, b);
            }
            rel.by_row(i, row, h, b) = 0.0f;
            rel.by_row(i, row, h, b) += vectors(i, rel.channels, h, b) * term.table(rel.channels, safe_row, h);
            score += rel.by_row(i, index, h, b);
        }
        st.relative.push_back(rel);
    }
    Expr logit = score * scale;
    for (const auto &bias : decl.logit_biases) logit += bias(site);
    Expr visible = j < key_lengths(b) && j - site.query_position <= lookahead && site.query_position - j < window;
    st.logit(i, jj, r, h, b) = select(visible, logit, -std::numeric_limits<float>::infinity());

    // Per-block softmax statistics. The max is floored at the lowest finite float so that a
    // fully masked block gives exp(−inf − lowest) = 0 instead of NaN.
    Expr kb = st.block_keys;
    st.block_max(i, r, h, b) = max(maximum(st.logit(i, kb, r, h, b)), lowest);
    st.prob(i, jj, r, h, b) = softmax_exp(st.logit(i, jj, r, h, b) - st.block_max(i, r, h, b));
    st.block_sum(i, r, h, b) = sum(st.prob(i, kb, r, h, b));
    st.block_out(d, i, r, h, b) = 0.0f;
    Expr key = r * key_block + kb, value = v(min(d, Dv - 1), key_row(key), h / group, b);
    for (const RelativeValue &term : decl.relative_values) {
        // The table with its channels padded to whole register tiles, so that a row is read as
        // dense vectors (a clamped channel index would make every read a gather).
        Func padded("relative_values_padded");
        Var row("row");
        padded(d, row, h) = term.table(min(d, Dv - 1), clamp(row, 0, term.rows - 1), h);
        st.value_tables.push_back(padded);
        value += padded(d, clamp(term.index({i, key, h, b, i + (Lk - Lq)}), 0, term.rows - 1), h);
    }
    st.block_out(d, i, r, h, b) += st.prob(i, kb, r, h, b) * value;

    // Online merge over key blocks: (numerator, denominator, running max).
    // The running state of query tile t, row i of the tile (query row t·query_tile + i). A key
    // block past the tile's lookahead limit (the causal one) has no visible key for any of its
    // rows, so the merge skips it. (Blocks before a window or past a key length are masked, not skipped: a predicate
    // that bounds the block from below, or on a loaded value, leaves the p·v register tile at a
    // data-dependent offset, which keeps it out of registers and halves the speed.)
    Var t("t");
    Expr row = t * query_tile + i, rb = st.blocks;
    Expr last_position = t * query_tile + query_tile - 1 + (Lk - Lq);
    st.blocks.where(rb * key_block - last_position <= lookahead);
    st.state(d, i, t, h, b) = Tuple(0.0f, 0.0f, lowest);
    Expr m_old = st.state(d, i, t, h, b)[2];
    Expr m_blk = st.block_max(row, rb, h, b);
    Expr m_new = max(m_old, m_blk);
    Expr keep = softmax_exp(m_old - m_new), take = softmax_exp(m_blk - m_new);
    st.state(d, i, t, h, b) = Tuple(st.state(d, i, t, h, b)[0] * keep + st.block_out(d, row, rb, h, b) * take,
                                    st.state(d, i, t, h, b)[1] * keep + st.block_sum(row, rb, h, b) * take,
                                    m_new);
    Expr in_tile = i % query_tile, tile = i / query_tile;
    Expr den = st.state(d, in_tile, tile, h, b)[1];
    st.out(d, i, h, b) = select(den > 0.0f, st.state(d, in_tile, tile, h, b)[0] / den, 0.0f);
    return st;
}

}  // namespace posattn
