// The generic fused attention algorithm. A variant is a declaration (AttentionDeclaration), not
// a new kernel: its score terms and q/k transforms are plugged into one algorithm that keeps an
// online softmax over key blocks, so the Lq × Lk score matrix is never stored.
//
//   logit(i, j) = scale · (q'_i · k'_j + Σ relative scores(i, j)) + Σ biases(i, j)
//                 q' = transform_q(q), k' = transform_k(k)
//   visible(i, j) = first(i, b) ≤ j < end(i, b)  ∧  j − p_i ≤ lookahead  ∧  p_i − j < window  (causal: lookahead 0)
//                   ∧ mask(j, i, h, b)  (where masked; the logit then gets bias(j, i, h, b) added)
//                 p_i = i + Lk − Lq, the query's absolute position (contract §0, bottom-right)
//   out_i = Σ_j softmax_j(logit) (v_j + Σ relative values(i, j)) over visible j; a row with no
//           visible key is exactly 0.
//
// A relative term reads a table row chosen by an index function of (i, j), monotone in the offset
// i − j. Its dot products are computed per tile, not per (i, j): a query-side term takes the
// product of the query tile with the table rows the tile can see (a small matmul), a key-side term
// the products of every key of a (head, batch) with every row. Reading them is done per key group
// (a q·k register tile's keys): where the index is one row over the group (Shaw's clipped
// distances, DeBERTa's far buckets: most groups), a dense vector or a broadcast; where it steps by
// one (Transformer-XL's distances, DeBERTa near the diagonal), a run of rows per key: a dense
// vector for a key-side term, a constant stride for a query-side one; elsewhere a gather per
// (query, key).
// Value terms likewise add a uniform group's probability sum times its one row. On GPUs, whose
// per-tile products would outgrow a block's shared memory, a relative term is read per logit
// instead, from its table laid out by offset (AttentionTiles::relative_per_logit).
//
// Keys are processed in blocks of `key_block`. Each block yields its own max m_r, sum of
// exponentials l_r and weighted values o_r; the running state (num, den, m) is merged with them:
//   m' = max(m, m_r),  num' = num·e^(m−m') + o_r·e^(m_r−m'),  den' = den·e^(m−m') + l_r·e^(m_r−m').
// The query tile, the key block and the key group are decisions the algorithm itself must know
// (the state is kept per query tile, so that key blocks no row of a tile sees are skipped; a
// relative term is tested per key group for reading one table row), so the schedule supplies them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "Halide.h"
#include "softmax_exp.h"
#include "storage.h"

namespace posattn {

// The keys each query row may see besides the causal and window limits: [first(row, b), end(row, b))
// (key lengths, left padding, a packed document's keys, none for a padded query), and where
// `masked` is nonzero only those with mask(key, row, h, b) != 0, whose logits get bias(key, row,
// h, b) added. Kernels are specialized on `masked`, so that calls without a mask read neither.
// from(row, b) is the least first key of the rows from `row` on, until(row, b) the greatest end
// of the rows up to `row`: a tile of rows r0 … r1 sees keys in [from(r0), until(r1)) only, which
// bounds the key blocks it visits (input loads, which Halide can solve the block loop for).
struct KeyMasks {
    Halide::Func first, end, from, until, mask, bias;
    Halide::Expr masked;
};

// Where one logit lives: query row i of q, key j, q head h (k/v head h / group), batch b.
struct ScoreSite {
    Halide::Expr query, key, head, batch;
    Halide::Expr query_position;  // absolute position of query i: i + Lk − Lq
};

using IndexFunction = std::function<Halide::Expr(const ScoreSite &)>;
// A term of the query − key offset δ = p_i − j and the q head alone.
using OffsetFunction = std::function<Halide::Expr(const Halide::Expr &offset, const Halide::Expr &head)>;

// A score term added to q'·k' before scaling: vectors · table(·, index(i, j), h), where the
// vectors are the query rows (content-to-position: Shaw's a^K, Transformer-XL's BD, DeBERTa's
// c2p) or the keys k'_j (position-to-content: DeBERTa's p2c).
struct RelativeScore {
    bool by_key = false;
    // Query side: the vectors made from q (Transformer-XL's q + v); q' itself if unset.
    std::function<Halide::Func(Halide::Func)> query_vectors;
    Halide::Func table;  // table(d, row, h), rows [0, rows)
    Halide::Expr rows;
    IndexFunction index;  // a row in [0, rows), monotone in the query − key offset
};

// A value term: v_j + table(·, index(i, j), h) in place of v_j (Shaw's a^V).
struct RelativeValue {
    Halide::Func table;  // table(d, row, h), rows [0, rows)
    Halide::Expr rows;
    IndexFunction index;  // as RelativeScore's
};

// What a variant is. The plain declaration is empty.
struct AttentionDeclaration {
    // Added to the logit after scaling, unscaled (ALiBi, T5 buckets).
    std::vector<IndexFunction> logit_biases;
    // The same for a bias of the offset and head alone (KERPLE's log distance): computed once per
    // call for every offset the tiles see, then read per logit, so that its cost does not grow
    // with Lq·Lk.
    std::vector<OffsetFunction> offset_biases;
    std::vector<RelativeScore> relative_scores;
    std::vector<RelativeValue> relative_values;
    // Applied to q(d, i, h, b) and k(d, j, h, b) before the dot product (RoPE); identity if unset.
    // A transformed k is computed once per call (stages.k_transformed), a transformed q per tile.
    std::function<Halide::Func(Halide::Func)> transform_q, transform_k;
};

// The products of one relative score term: by_row(i, row, tile_row, h, b) for row i of the query
// tile starting at tile_row, or by_row(row, j, h, b) for every key, made from the query rows
// (q_rows, or vectors(i, d, h, b) when the term makes its own) or from table_by_row(row, d, h)
// (key side, the table transposed) as key_products, summed per register tile (a tile of the whole
// table, whose size is known only at run time, stays in memory).
struct RelativeStages {
    bool by_key;
    Halide::Func by_row, vectors, table_by_row, key_products;
    Halide::RDom channels;  // key side; a query-side term's RDom is (channel, row in group, row group)
    Halide::Func largest_step;  // the largest change of the index between offsets
};

// A relative term read per logit: by_offset(o, d, h) = table(d, index at offset o = query − key, h);
// a query-side score term that makes its own vectors has them in vectors(i, d, h, b).
struct PerLogitStages {
    Halide::Func by_offset, vectors;
};

// The decomposition the algorithm itself must know (the schedule chooses it): rows per query
// tile, keys per online-softmax block, keys per group, the unit over which a relative term's row
// is tested for being one row (a divisor of key_block), and table rows per group of a query-side
// term's products, the unit over which they are skipped where the tile sees none of the rows.
// With relative_per_logit, relative terms are not made per tile at all: each (query, key) reads
// its table row from the table laid out by offset (PerLogitStages) and takes its dot product
// there (GPUs, whose per-tile products would outgrow a block's shared memory).
struct AttentionTiles {
    int query_tile, key_block, key_group, row_group;
    bool relative_per_logit = false;
    // A block's masked keys read the value of the batch's nearest key in range (keys past a static
    // KV cache's length may hold NaN). Off on GPUs, whose kernels read the bound wrong (Halide 21,
    // OpenCL and Vulkan: every output off by up to 0.9, 2026-12-06): they read every key below the
    // greatest key length.
    bool values_in_range = true;
    // A mask and bias are read per register tile of logits, as key_terms, on CPUs; on GPUs each
    // thread reads its own row's per logit (there key_terms, inlined, and the likely() bound of its
    // reads each made Halide 21 pass a bool to the Vulkan kernels, which its SPIR-V cannot).
    bool masks_per_tile = true;
    // Blocks shrink to the keys there are (define_attention). Off on GPUs, whose blocks are a few
    // dozen keys, each a thread's.
    bool short_blocks = true;
    // A score of ±inf (an Inf in q or k) becomes NaN, and a NaN score a NaN weight, which reaches
    // the output like a NaN value: the decode shape class, whose output is how the runtime finds
    // non-finite inputs (runtime/src/attention.cpp: q, k and v then read once, by the kernel).
    bool infinite_scores_as_nan = false;
    // A block's keys are visited as this many interleaved runs: its slot s holds key
    // (s mod S)·(block / S) + s / S, so a key group reads S runs of k and v at once, which keeps S
    // streams of memory reads in flight where one run kept one (memory-bound decoding). A divisor of
    // key_group; 1 for declarations with relative terms, whose key groups are consecutive keys.
    int key_streams = 1;
    // q·k by pairs of channels where q and k are stored as bfloat16 and read as they are (x86's
    // AVX512-BF16: vdpbf16ps adds two exact products per float32 lane): see bfloat16_pairs().
    bool bfloat16_pairs = false;
};

// Whether q·k runs by bfloat16 channel pairs: the tiles ask for it, q and k are stored as
// bfloat16, and the declaration neither transforms them (a float32 result) nor reads q's rows for
// a relative score term (whose products take q_rows).
inline bool bfloat16_pairs(const AttentionDeclaration &decl, const AttentionTiles &tiles, const Halide::Type &stored) {
    return tiles.bfloat16_pairs && stored == Halide::BFloat(16) && !decl.transform_q && !decl.transform_k &&
           decl.relative_scores.empty();
}

// The Funcs and Vars a schedule needs. The state is indexed by row i of query tile t; per-block
// stages by key jj of block r (or key k of group g of block r) and (i, tile_row): with relative
// terms, row i of the tile whose first row is tile_row, otherwise the absolute row i and 0.
struct AttentionStages {
    std::vector<RelativeStages> relative;
    std::vector<PerLogitStages> per_logit;
    Halide::Func out, state, block_out, block_sum, block_max, prob, logit, score, q_rows;
    // With bfloat16 pairs (bfloat16_pairs()): q_pairs(c, i, pair, h, b), channel 2·pair + c of
    // row i, which q·k reads over channel_pairs (c, pair), then an odd D's last channel.
    Halide::Func q_pairs;
    Halide::RDom channel_pairs, last_channel;
    // Defined when the declaration has relative score terms: their sum per key group,
    // relative_scores(i, k, g, r, tile_row, h, b); with value terms: relative_values(d, i, r,
    // tile_row, h, b), and group_sum(i, g, r, tile_row, h, b), the probabilities of a key group.
    Halide::Func relative_scores, relative_values, group_sum;
    std::vector<Halide::RDom> relative_score_groups;  // per score term: its gathered keys
    std::vector<Halide::RDom> value_groups;           // per value term: one row, then gathered keys
    Halide::Func q_transformed, k_transformed;  // defined when the declaration transforms q, k
    Halide::Func offset_bias;  // defined with offset biases: their sum, offset_bias(δ, h)
    // What a mask and bias add to a logit, key_terms(i, jj, r, tile_row, h, b): the bias, or −inf
    // where masked; read only where `masked` (the kernels' specialization). Defined with
    // AttentionTiles::masks_per_tile.
    Halide::Func key_terms;
    Halide::Expr masked;
    std::vector<Halide::Func> value_tables;  // per relative value term, padded channels
    Halide::Var d, i, jj, k, g, r, t, tile_row, h, b;
    Halide::RDom blocks, block_keys, channels;
    Halide::Expr value_channels;  // Dv
    AttentionTiles tiles;
};

// q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] as Halide (channel, row, head, batch),
// in their storage types (generators/storage.h): the algorithm reads them in float32.
inline AttentionStages define_attention(const AttentionDeclaration &decl, AttentionTiles tiles,
                                        Halide::Func q_stored, Halide::Func k_stored, Halide::Func v_stored,
                                        Halide::Expr D, Halide::Expr Dv, Halide::Expr Lq, Halide::Expr Lk,
                                        Halide::Expr group, const KeyMasks &keys,
                                        Halide::Expr scale, Halide::Expr lookahead, Halide::Expr window) {
    using namespace Halide;
    AttentionStages st;
    st.tiles = tiles;
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
    Var d = st.d, i = st.i, jj = st.jj, g = st.g, r = st.r, t = st.t, tile_row = st.tile_row, h = st.h, b = st.b;
    const int Tq = tiles.query_tile, G = tiles.key_group, Gr = tiles.row_group;
    // A block is computed whole, its keys past Lk masked, so with fewer keys than key_block (a
    // decode step against 16 keys, a short sequence) it holds as few whole key groups as hold them
    // all: a 512-key block for 16 keys was 32x the work.
    Expr Kb = tiles.short_blocks ? min(tiles.key_block, (Lk + G - 1) / G * G) : Expr(tiles.key_block);
    const int S = tiles.key_streams;
    if (S > 1 && (!decl.relative_scores.empty() || !decl.relative_values.empty()))
        throw CompileError("posattn: key_streams > 1 needs a variant without relative terms (their key groups are consecutive keys)");
    auto slot_key = [&](Expr slot) { return S == 1 ? slot : slot % S * (Kb / S) + slot / S; };  // (Kb: whole groups)
    Func q = widened(q_stored), k = widened(k_stored), v = widened(v_stored);

    Func qt = q;
    if (decl.transform_q) qt = st.q_transformed = decl.transform_q(q);
    Func kt = k;
    if (decl.transform_k) kt = st.k_transformed = decl.transform_k(k);
    // Rows past Lq (in a partial query tile), keys past Lk (in the last key block) and value
    // channels past Dv (in a partial register tile) read a clamped row or column; those results
    // are masked or never stored.
    st.q_rows(i, d, h, b) = qt(d, clamp(i, 0, Lq - 1), h, b);
    auto key_row = [&](Expr j) { return clamp(j, 0, Lk - 1); };
    auto site_of = [&](Expr query, Expr key) { return ScoreSite{query, key, h, b, query + (Lk - Lq)}; };

    const float lowest = std::numeric_limits<float>::lowest();
    st.channels = RDom(0, D, "channel");
    st.block_keys = RDom(0, Kb, "block_key");
    st.blocks = RDom(0, (Lk + Kb - 1) / Kb, "key_block");

    // Scores of a query tile and key block r: score(i, jj, r, tile_row, h, b) for query row
    // tile_row + i and the key in slot jj of block r.
    Expr row = tile_row + i, j = r * Kb + slot_key(jj);
    st.score(i, jj, r, tile_row, h, b) = 0.0f;
    if (bfloat16_pairs(decl, tiles, q_stored.type())) {
        Var c("c");
        Expr channel = 2 * d + c;
        st.q_pairs = Func("q_pairs");
        st.q_pairs(c, i, d, h, b) = q_stored(min(channel, D - 1), clamp(i, 0, Lq - 1), h, b);
        st.channel_pairs = RDom(0, 2, 0, D / 2, "channel_pair");
        Expr in_pair = st.channel_pairs.x, pair = st.channel_pairs.y, key = key_row(j), kv_head = h / group;
        st.score(i, jj, r, tile_row, h, b) += cast<float>(st.q_pairs(in_pair, row, pair, h, b)) * cast<float>(k_stored(2 * pair + in_pair, key, kv_head, b));
        // An odd D's last channel on its own (a clamped channel would make every pair of k a gather).
        st.last_channel = RDom(D - 1, D % 2, "last_channel");
        st.score(i, jj, r, tile_row, h, b) += cast<float>(st.q_pairs(0, row, D / 2, h, b)) * cast<float>(k_stored(st.last_channel, key, kv_head, b));
    } else {
        st.score(i, jj, r, tile_row, h, b) += st.q_rows(row, st.channels, h, b) * kt(st.channels, key_row(j), h / group, b);
    }

    auto row_at = [&](const IndexFunction &index, Expr rows, Expr query, Expr key) {
        return clamp(index(site_of(query, key)), 0, rows - 1);
    };
    // A relative term's query vectors: q' itself, or the rows the term makes from q.
    auto relative_vectors = [&](const RelativeScore &term, Func own) {
        if (!term.query_vectors) return st.q_rows;
        Func made = term.query_vectors(q);
        own(i, d, h, b) = made(d, clamp(i, 0, Lq - 1), h, b);
        return own;
    };
    // Per logit: a relative term's table row of each offset (the index depends on it alone then).
    auto by_offset = [&](Func table, Expr rows, const IndexFunction &index, Expr channels) {
        Var offset("offset");
        PerLogitStages terms{Func("relative_by_offset"), Func("relative_query_rows")};
        terms.by_offset(offset, d, h) = table(min(d, channels - 1), row_at(index, rows, offset, 0), h);
        st.per_logit.push_back(terms);
        return &st.per_logit.back();
    };
    std::vector<RelativeScore> per_tile_scores;
    for (const RelativeScore &term : decl.relative_scores) {
        if (!tiles.relative_per_logit) {
            per_tile_scores.push_back(term);
            continue;
        }
        PerLogitStages *terms = by_offset(term.table, term.rows, term.index, D);
        Expr vector = term.by_key ? kt(st.channels, key_row(j), h / group, b)
                                  : relative_vectors(term, terms->vectors)(row, st.channels, h, b);
        st.score(i, jj, r, tile_row, h, b) += vector * terms->by_offset(row - j, st.channels, h);
    }

    // A relative term's index depends monotonically on the query − key offset, so over key group
    // g of block r and the rows of the tile it lies between its values at two corners; where those
    // are equal (Shaw's clipped distances, DeBERTa's far buckets: most groups), the whole group
    // reads one row, as dense vectors, and only the other groups gather one row per (query, key).
    auto group_rows = [&](const IndexFunction &index, Expr rows, Expr group_index, int G) {
        Expr first_key = r * Kb + group_index * G;
        return std::pair{row_at(index, rows, tile_row, first_key + G - 1), row_at(index, rows, tile_row + Tq - 1, first_key)};
    };
    // The keys the tile can see in the blocks it visits, so the rows a query-side term reads for a
    // visible (query, key): a causal tile sees the distances up to its last row only. (Positions
    // are negative where queries outnumber keys, so the lookahead is capped at Lq + Lk, not Lk:
    // a non-causal tile of such rows sees every key.)
    Expr first_position = tile_row + (Lk - Lq), last_position = first_position + Tq - 1;
    Expr first_key = max(first_position - window + 1, 0), last_key = min(last_position + min(lookahead, Lq + Lk), Lk - 1);
    Expr score = st.score(i, jj, r, tile_row, h, b);
    if (!per_tile_scores.empty()) {
        st.relative_scores = Func("relative_scores");
        Expr group_key = r * Kb + g * G + st.k, uniform_sum = 0.0f;
        std::vector<std::function<void()>> gathers;
        for (const RelativeScore &term : per_tile_scores) {
            RelativeStages rel{term.by_key, Func(term.by_key ? "key_relative" : "query_relative"),
                               Func("relative_query_rows"), Func("relative_table_by_row"), Func("key_products"),
                               RDom(0, D, "relative_channel")};
            Var row_var("row"), key_var("key");
            Expr safe_row = clamp(row_var, 0, term.rows - 1);  // the schedule may round rows up
            Func by_row = rel.by_row;
            if (term.by_key) {
                rel.table_by_row(row_var, d, h) = term.table(d, safe_row, h);
                rel.key_products(row_var, key_var, h, b) = 0.0f;
                rel.key_products(row_var, key_var, h, b) +=
                    rel.table_by_row(row_var, rel.channels, h) * kt(rel.channels, key_row(key_var), h / group, b);
                by_row(row_var, key_var, h, b) = rel.key_products(row_var, key_var, h, b);
            } else {
                Func vectors = relative_vectors(term, rel.vectors);
                // Only the row groups holding rows a visible (query, key) of the tile reads; the
                // others stay 0 and are read by masked ones only.
                Expr seen_a = row_at(term.index, term.rows, tile_row, last_key);
                Expr seen_b = row_at(term.index, term.rows, tile_row + Tq - 1, first_key);
                rel.channels = RDom(0, D, 0, Gr, 0, (term.rows + Gr - 1) / Gr, "relative_product");
                RVar channel = rel.channels.x, in_group = rel.channels.y, row_group = rel.channels.z;
                rel.channels.where(row_group * Gr + Gr - 1 >= min(seen_a, seen_b) && row_group * Gr <= max(seen_a, seen_b));
                Expr table_row = row_group * Gr + in_group;
                by_row(i, row_var, tile_row, h, b) = 0.0f;
                by_row(i, table_row, tile_row, h, b) += vectors(tile_row + i, channel, h, b) * term.table(channel, min(table_row, term.rows - 1), h);
            }
            auto product = [&, by_key = term.by_key, by_row](Expr query, Expr key, Expr table_row) {
                return by_key ? by_row(table_row, key_row(key), h, b) : by_row(query, table_row, tile_row, h, b);
            };
            auto [first, last] = group_rows(term.index, term.rows, g, G);
            uniform_sum += product(i, group_key, first);
            // A group whose index steps by one per offset (a distance) reads, per key, a run of
            // consecutive rows: over the tile's rows, a dense vector for the key side and a
            // constant stride (no index to compute) for the query side. The ends of the group tell
            // which groups those are when no step of the index is larger than one row (DeBERTa's
            // log buckets with a narrow max_relative_positions can jump).
            Expr span = Tq + G - 2;
            RDom queries(-(Lk + Kb), Lq + Lk + Tq + Kb, "offset");
            rel.largest_step = Func("largest_index_step");
            Expr index_step = row_at(term.index, term.rows, queries + 1, 0) - row_at(term.index, term.rows, queries, 0);
            rel.largest_step() = maximum(abs(index_step));
            Expr affine = abs(last - first) == span && rel.largest_step() <= 1;
            auto correct = [&](RDom keys, Expr condition, const std::function<Expr(Expr)> &table_row) {
                keys.where(condition);
                Expr key = r * Kb + g * G + keys;
                Expr exact = product(i, key, table_row(keys));
                gathers.push_back([=, &st] { st.relative_scores(i, keys, g, r, tile_row, h, b) += exact - product(i, key, first); });
                st.relative_score_groups.push_back(keys);
            };
            // A run lies inside the table, so its start is clamped to where one can start: a no-op
            // that keeps bounds inference from widening the products by span rows at each end
            // (DeBERTa's 512 per-call rows were computed and stored as 608).
            for (int step : {1, -1})
                correct(RDom(0, G, "run_key"), affine && last - first == step * span, [&, step](Expr in_group) {
                    Expr start = step > 0 ? clamp(first, 0, term.rows - 1 - span) : clamp(first, span, term.rows - 1);
                    return start + step * (i + G - 1 - in_group);  // start: row 0, the group's last key
                });
            correct(RDom(0, G, "gathered_key"), first != last && !affine, [&](Expr in_group) {
                return row_at(term.index, term.rows, row, r * Kb + g * G + in_group);
            });
            st.relative.push_back(rel);
        }
        st.relative_scores(i, st.k, g, r, tile_row, h, b) = uniform_sum;
        for (auto &gather : gathers) gather();
        score += st.relative_scores(i, jj % G, jj / G, r, tile_row, h, b);
    }
    if (tiles.infinite_scores_as_nan) score = select(is_inf(score), std::numeric_limits<float>::quiet_NaN(), score);
    Expr logit = score * scale;
    ScoreSite site = site_of(row, j);
    for (const auto &bias : decl.logit_biases) logit += bias(site);
    if (!decl.offset_biases.empty()) {
        Var offset("offset");
        Expr sum = 0.0f;
        for (const auto &bias : decl.offset_biases) sum += bias(offset, h);
        st.offset_bias = Func("offset_bias");
        st.offset_bias(offset, h) = sum;
        logit += st.offset_bias(site.query_position - j, h);
    }
    Expr at_row = clamp(row, 0, Lq - 1);
    st.masked = keys.masked != 0;
    Expr visible = j >= keys.first(at_row, b) && j < keys.end(at_row, b) && j - site.query_position <= lookahead &&
                   site.query_position - j < window;
    if (tiles.masks_per_tile) {
        // (Only the last key block reads past Lk: likely() lets Halide run the others' rows as dense vectors.)
        Expr at_key = min(likely(j), Lk - 1);
        st.key_terms = Func("key_terms");
        st.key_terms(i, jj, r, tile_row, h, b) =
            select(keys.mask(at_key, at_row, h, b) != 0, keys.bias(at_key, at_row, h, b), -std::numeric_limits<float>::infinity());
        logit += select(st.masked, st.key_terms(i, jj, r, tile_row, h, b), 0.0f);
    } else {
        logit += select(st.masked, keys.bias(key_row(j), at_row, h, b), 0.0f);
        visible = visible && (!st.masked || keys.mask(key_row(j), at_row, h, b) != 0);
    }
    st.logit(i, jj, r, tile_row, h, b) = select(visible, logit, -std::numeric_limits<float>::infinity());

    // Per-block softmax statistics. The max is floored at the lowest finite float so that a
    // fully masked block gives exp(−inf − lowest) = 0 instead of NaN.
    Expr kb = st.block_keys;
    st.block_max(i, r, tile_row, h, b) = max(maximum(st.logit(i, kb, r, tile_row, h, b)), lowest);
    Expr exp_logit = softmax_exp(st.logit(i, jj, r, tile_row, h, b) - st.block_max(i, r, tile_row, h, b));
    // (softmax_exp clamps its argument, which turns a NaN into a weight: the decode class keeps it.)
    if (tiles.infinite_scores_as_nan) exp_logit = select(is_nan(st.logit(i, jj, r, tile_row, h, b)), st.logit(i, jj, r, tile_row, h, b), exp_logit);
    st.prob(i, jj, r, tile_row, h, b) = exp_logit;
    st.block_sum(i, r, tile_row, h, b) = sum(st.prob(i, kb, r, tile_row, h, b));

    // Value terms: Σ_j p_ij·table(index(i, j)), by key groups as the score terms: a uniform group
    // adds its probabilities' sum times its one row. Per logit, p_ij weighs v_j + its table row.
    // Keys outside every row's range of the batch (past a static KV cache's length, or left
    // padding) may hold anything, NaN too, so a block's masked keys read its nearest key in range.
    Expr values_init = 0.0f, block_key = r * Kb + slot_key(kb), value_key = block_key;
    if (tiles.values_in_range) value_key = clamp(block_key, keys.from(0, b), keys.until(Lq - 1, b) - 1);
    Expr value = v(min(d, Dv - 1), key_row(value_key), h / group, b);
    std::vector<RelativeValue> per_tile_values;
    for (const RelativeValue &term : decl.relative_values) {
        if (tiles.relative_per_logit)
            value += by_offset(term.table, term.rows, term.index, Dv)->by_offset(row - block_key, d, h);
        else
            per_tile_values.push_back(term);
    }
    if (!per_tile_values.empty()) {
        st.relative_values = Func("relative_values");
        st.group_sum = Func("group_sum");
        RDom in_group(0, G, "group_key");
        st.group_sum(i, g, r, tile_row, h, b) = sum(st.prob(i, g * G + in_group, r, tile_row, h, b));
        st.relative_values(d, i, r, tile_row, h, b) = 0.0f;
        for (const RelativeValue &term : per_tile_values) {
            // The table with its channels padded to whole register tiles, so that a row is read as
            // dense vectors (a clamped channel index would make every read a gather).
            Func padded("relative_values_padded");
            Var row_var("row");
            padded(d, row_var, h) = term.table(min(d, Dv - 1), clamp(row_var, 0, term.rows - 1), h);
            st.value_tables.push_back(padded);
            RDom one(0, Kb / G, "uniform_group");
            auto [first, last] = group_rows(term.index, term.rows, one, G);
            one.where(first == last);
            st.relative_values(d, i, r, tile_row, h, b) += st.group_sum(i, one, r, tile_row, h, b) * padded(d, first, h);
            RDom each(0, G, 0, Kb / G, "gathered_value");
            auto [each_first, each_last] = group_rows(term.index, term.rows, each.y, G);
            each.where(each_first != each_last);
            Expr key = r * Kb + each.y * G + each.x;
            st.relative_values(d, i, r, tile_row, h, b) +=
                st.prob(i, each.y * G + each.x, r, tile_row, h, b) * padded(d, row_at(term.index, term.rows, row, key), h);
            st.value_groups.push_back(one);
            st.value_groups.push_back(each);
        }
        values_init = st.relative_values(d, i, r, tile_row, h, b);
    }
    st.block_out(d, i, r, tile_row, h, b) = values_init;
    st.block_out(d, i, r, tile_row, h, b) += st.prob(i, kb, r, tile_row, h, b) * value;

    // Online merge over key blocks: (numerator, denominator, running max) of row i of query tile
    // t. A key block past the tile's lookahead limit (the causal one), wholly before its first
    // row's window or outside every row's [first, end) has no visible key for any of its rows, so
    // the merge skips it: a sliding window costs O(Lq · window), not O(Lq · Lk), and packed
    // documents only their own blocks.
    Expr rb = st.blocks, tile_last_position = t * Tq + Tq - 1 + (Lk - Lq), tile_first_position = t * Tq + (Lk - Lq);
    // Only relative terms need the tile in the block stages (they test key groups over its rows);
    // the other variants give them the absolute row and tile row 0. (A tile argument, narrowed by
    // Halide from the causal predicate, adds conditions to GPU kernels that PoCL's region former
    // rejects, and doubles Adams2019's search.)
    const bool relative = !per_tile_scores.empty() || !per_tile_values.empty();
    Expr block_row = relative ? Expr(i) : t * Tq + i, block_tile = relative ? t * Tq : Expr(0);
    st.blocks.where(rb * Kb - tile_last_position <= lookahead && rb * Kb + Kb > tile_first_position - window &&
                    rb * Kb < keys.until(min(t * Tq + Tq - 1, Lq - 1), b) && rb * Kb + Kb > keys.from(t * Tq, b));
    st.state(d, i, t, h, b) = Tuple(0.0f, 0.0f, lowest);
    Expr m_old = st.state(d, i, t, h, b)[2];
    Expr m_blk = st.block_max(block_row, rb, block_tile, h, b);
    Expr m_new = max(m_old, m_blk);
    Expr keep = softmax_exp(m_old - m_new), take = softmax_exp(m_blk - m_new);
    st.state(d, i, t, h, b) = Tuple(st.state(d, i, t, h, b)[0] * keep + st.block_out(d, block_row, rb, block_tile, h, b) * take,
                                    st.state(d, i, t, h, b)[1] * keep + st.block_sum(block_row, rb, block_tile, h, b) * take,
                                    m_new);
    Expr den = st.state(d, i % Tq, i / Tq, h, b)[1];
    // (den is 0 exactly for a row without a visible key, NaN where a NaN was read: it shows.)
    st.out(d, i, h, b) = select(den == 0.0f, 0.0f, st.state(d, i % Tq, i / Tq, h, b)[0] / den);
    return st;
}

}  // namespace posattn
