// Fused scaled-dot-product attention: one generator for every declared variant
// (generators/attention.h). q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] with any
// strides of the outer dimensions; Hq a multiple of Hkv (GQA/MQA); per-row key ranges, an optional
// boolean mask and float bias.
#include "Halide.h"
#include "alibi.h"
#include "attention.h"
#include "rope.h"
#include "schedules/attention.h"
#include "schedules/gpu/vulkan_modes.h"

namespace posattn {

using namespace Halide;

class Attention : public Generator<Attention> {
public:
    GeneratorParam<std::string> variant{"variant", "plain"};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h
    GeneratorParam<std::string> shape_class{"shape_class", ""};  // "", "decode1", "decode", "decode8" or "window": schedules/attention.h

    Input<Buffer<float, 4>> q{"q"};
    Input<Buffer<float, 4>> k{"k"};
    Input<Buffer<float, 4>> v{"v"};
    // [B, Lq]: query row i of batch b sees keys [key_first, key_end) at most (generators/attention.h
    // KeyMasks); the runtime makes them from key lengths and starts, segments and query lengths.
    Input<Buffer<int32_t, 2>> key_first{"key_first"}, key_end{"key_end"};
    Input<Buffer<int32_t, 2>> keys_from{"keys_from"}, keys_until{"keys_until"};  // [B, Lq]: KeyMasks' from, until
    // [B, Hq, Lq, Lk], any strides (0 where broadcast): read only where masked != 0.
    Input<Buffer<uint8_t, 4>> mask{"mask"};
    Input<Buffer<float, 4>> bias{"bias"};
    Input<int32_t> masked{"masked"};
    Input<float> scale{"scale"};
    // A query at position p sees keys j with j ≤ p + lookahead (0: causal) and p − j < window. Ints
    // rather than a bool flag: Halide 21's SPIR-V cannot pass a hoisted bool to a kernel.
    Input<int32_t> lookahead{"lookahead"};
    Input<int32_t> window{"window"};
    Output<Buffer<float, 4>> out{"out"};  // [B, Hq, Lq, Dv]
    // The inputs of the variant's declaration, added by configure():
    Input<Buffer<float, 1>> *slopes = nullptr;  // alibi: [Hq]
    Input<int32_t> *alibi_form = nullptr;       // alibi: generators/alibi.h
    // t5: the bias of each query − key offset and head, bias_by_offset(i − j + Lq − 1, h), computed
    // by the runtime from the bucket table (contract §9), so the buckets are exactly float32 torch's.
    // The runtime pads it on both sides (a negative min) for the rows and keys that tiles compute
    // past Lq and Lk and never use; unclamped, a vector of query rows reads it as one dense run.
    Input<Buffer<float, 2>> *bias_by_offset = nullptr;
    // rope: q and k rotated (contract §6) at their positions; inv_freq of rotary_dim/2 pairs, in turns.
    Input<Buffer<int32_t, 2>> *q_positions = nullptr, *k_positions = nullptr;  // [B, Lq], [B, Lk]
    Input<Buffer<int32_t, 2>> *turns = nullptr;  // [2, rotary_dim/2]: rope.h rope_cos_sin
    Input<double> *attention_factor = nullptr;
    Input<int32_t> *rope_layout = nullptr;  // 0 neox, 1 gptj
    // Relative tables (d, row, head) and their row index per query − key offset, index(i − j + Lk − 1),
    // computed by the runtime (clip for Shaw, distance for Transformer-XL, log buckets for
    // DeBERTa) and padded like bias_by_offset.
    Input<Buffer<float, 3>> *rel_k = nullptr, *rel_v = nullptr;  // shaw: a^K, a^V
    Input<Buffer<int32_t, 1>> *rel_index = nullptr;              // shaw, xl
    Input<Buffer<float, 3>> *r = nullptr;                        // xl: r by distance
    Input<Buffer<float, 2>> *u = nullptr, *v_bias = nullptr;     // xl: (d, h)
    Input<Buffer<float, 3>> *c2p_table = nullptr, *p2c_table = nullptr;  // deberta: K_r, Q_r
    Input<Buffer<int32_t, 1>> *c2p_index = nullptr, *p2c_index = nullptr;

    void configure() {
        if (variant == "alibi") {
            slopes = add_input<Buffer<float, 1>>("slopes");
            alibi_form = add_input<int32_t>("alibi_form");
        } else if (variant == "t5") {
            bias_by_offset = add_input<Buffer<float, 2>>("bias_by_offset");
        } else if (variant == "rope") {
            q_positions = add_input<Buffer<int32_t, 2>>("q_positions");
            k_positions = add_input<Buffer<int32_t, 2>>("k_positions");
            turns = add_input<Buffer<int32_t, 2>>("turns");
            attention_factor = add_input<double>("attention_factor");
            rope_layout = add_input<int32_t>("rope_layout");
        } else if (variant == "shaw") {
            rel_k = add_input<Buffer<float, 3>>("rel_k");
            rel_v = add_input<Buffer<float, 3>>("rel_v");
            rel_index = add_input<Buffer<int32_t, 1>>("rel_index");
        } else if (variant == "xl") {
            r = add_input<Buffer<float, 3>>("r");
            u = add_input<Buffer<float, 2>>("u");
            v_bias = add_input<Buffer<float, 2>>("v_bias");
            rel_index = add_input<Buffer<int32_t, 1>>("rel_index");
        } else if (variant == "deberta") {
            c2p_table = add_input<Buffer<float, 3>>("c2p_table");
            p2c_table = add_input<Buffer<float, 3>>("p2c_table");
            c2p_index = add_input<Buffer<int32_t, 1>>("c2p_index");
            p2c_index = add_input<Buffer<int32_t, 1>>("p2c_index");
        } else if (variant != "plain") {
            throw CompileError("posattn: unknown attention variant '" + std::string(variant) +
                               "' (known: plain, alibi, t5, rope, shaw, xl, deberta)");
        }
    }

    // What each variant adds to the generic algorithm (generators/attention.h).
    AttentionDeclaration declaration() {
        AttentionDeclaration decl;
        if (variant == "alibi") {
            decl.logit_biases.push_back([this](const ScoreSite &s) {
                return (*slopes)(s.head) * cast<float>(alibi_offset(*alibi_form, s.query_position, s.key));
            });
            slopes->set_estimates({{0, 8}});
            alibi_form->set_estimate(0);
        }
        if (variant == "t5") {
            decl.logit_biases.push_back([this](const ScoreSite &s) {
                return (*bias_by_offset)(s.query_position - s.key + q.dim(1).extent() - 1, s.head);
            });
            bias_by_offset->set_estimates({{0, 4095}, {0, 8}});
        }
        if (variant == "rope") {
            Expr rotary = 2 * turns->dim(0).extent(), D = q.dim(0).extent();
            decl.transform_q = [=](Func x) {
                return rope_channels(x, D, *q_positions, *turns, rotary, *rope_layout, *attention_factor, "q_rotated");
            };
            decl.transform_k = [=](Func x) {
                return rope_channels(x, D, *k_positions, *turns, rotary, *rope_layout, *attention_factor, "k_rotated");
            };
            q_positions->set_estimates({{0, 2048}, {0, 1}});
            k_positions->set_estimates({{0, 2048}, {0, 1}});
            turns->set_estimates({{0, 32}, {0, 2}});
            attention_factor->set_estimate(1.0);
            rope_layout->set_estimate(0);
        }
        // The row of a relative table for the query − key offset of a site.
        Expr Lk = k.dim(1).extent();
        auto by_offset = [Lk](Input<Buffer<int32_t, 1>> *index) {
            return [index, Lk](const ScoreSite &s) { return (*index)(s.query - s.key + Lk - 1); };
        };
        auto table = [](Input<Buffer<float, 3>> *t) {
            t->set_estimates({{0, 64}, {0, 512}, {0, 8}});
            return Func(*t);
        };
        if (variant == "shaw") {
            decl.relative_scores.push_back({false, {}, table(rel_k), rel_k->dim(1).extent(), by_offset(rel_index)});
            decl.relative_values.push_back({table(rel_v), rel_v->dim(1).extent(), by_offset(rel_index)});
        }
        if (variant == "xl") {  // (q + u)·k + (q + v)·r_dist
            decl.transform_q = [this](Func x) { return add_per_head(x, *u, "q_plus_u"); };
            decl.relative_scores.push_back({false, [this](Func x) { return add_per_head(x, *v_bias, "q_plus_v"); },
                                            table(r), r->dim(1).extent(), by_offset(rel_index)});
            u->set_estimates({{0, 64}, {0, 8}});
            v_bias->set_estimates({{0, 64}, {0, 8}});
        }
        if (variant == "deberta") {  // c2p q_i·K_r[idx], p2c k_j·Q_r[idx]
            decl.relative_scores.push_back({false, {}, table(c2p_table), c2p_table->dim(1).extent(), by_offset(c2p_index)});
            decl.relative_scores.push_back({true, {}, table(p2c_table), p2c_table->dim(1).extent(), by_offset(p2c_index)});
        }
        for (auto *index : {rel_index, c2p_index, p2c_index})
            if (index) index->set_estimates({{0, 4095}});
        return decl;
    }

    // x(d, row, h, b) + bias(d, h).
    static Func add_per_head(Func x, Func bias, const std::string &name) {
        Var d("d"), row("row"), h("h"), b("b");
        Func sum(name);
        sum(d, row, h, b) = x(d, row, h, b) + bias(d, h);
        return sum;
    }

    void generate() {
        Expr D = q.dim(0).extent(), Dv = v.dim(0).extent(), Lq = q.dim(1).extent(), Lk = k.dim(1).extent();
        Expr group = q.dim(2).extent() / k.dim(2).extent();
        stages = define_attention(declaration(), attention_tiles(get_target(), schedule_params, shape_class), q, k, v, D, Dv, Lq, Lk, group,
                                  KeyMasks{key_first, key_end, keys_from, keys_until, mask, bias, masked}, scale, lookahead, window);
        out(stages.d, stages.i, stages.h, stages.b) = stages.out(stages.d, stages.i, stages.h, stages.b);

        // The runtime passes every buffer with zero mins; tiles then start on tile boundaries.
        for (int dim = 0; dim < 4; dim++) out.dim(dim).set_min(0);

        // The calls of the shape class, for the autoschedulers: a 2048-token prompt (window: with a
        // 256-key sliding window), or (decode) one query of a 4-head GQA group against 4096 cached
        // keys, as the runtime folds it (decode1: one query per KV head; decode8: a group of 8).
        const std::string cls = shape_class;
        const int rows = cls == "decode1" ? 1 : cls == "decode" ? 4 : cls == "decode8" ? 8 : 2048,
                  keys = cls.rfind("decode", 0) == 0 ? 4096 : 2048;
        q.set_estimates({{0, 64}, {0, rows}, {0, 8}, {0, 1}});
        k.set_estimates({{0, 64}, {0, keys}, {0, 8}, {0, 1}});
        v.set_estimates({{0, 64}, {0, keys}, {0, 8}, {0, 1}});
        for (auto *range : {&key_first, &key_end, &keys_from, &keys_until}) range->set_estimates({{0, rows}, {0, 1}});
        mask.set_estimates({{0, keys}, {0, rows}, {0, 8}, {0, 1}});
        bias.set_estimates({{0, keys}, {0, rows}, {0, 8}, {0, 1}});
        masked.set_estimate(0);
        scale.set_estimate(0.125f);
        lookahead.set_estimate(std::numeric_limits<int32_t>::max());
        window.set_estimate(std::string(shape_class) == "window" ? 256 : std::numeric_limits<int32_t>::max());
        out.set_estimates({{0, 64}, {0, rows}, {0, 8}, {0, 1}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        schedule_attention(get_target(), schedule_params, shape_class, stages, out);
        Stage with_mask = out.specialize(masked != 0);  // a call without a mask or bias reads neither (KeyMasks)
        if (Input<int32_t> *mode = alibi_form ? alibi_form : rope_layout) {
            std::vector<Stage> nests{with_mask, out};
            for (Func x : {stages.q_transformed, stages.k_transformed})  // their own loop nests on GPUs
                if (x.defined()) nests.push_back(x);
            gpu::specialize_modes_for_vulkan(get_target(), nests, {*mode == 0, *mode == 1});
        }
    }

private:
    AttentionStages stages;
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::Attention, attention)
