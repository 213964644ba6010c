// posattn's attention variants (contract §6-§11), each one entry of kVariants: the inputs it adds
// to the generator (generators/attention_generator.h) and what it adds to the algorithm
// (generators/attention.h). The runtime computes the tables these read (runtime/src/attention.cpp).
#include <map>

#include "Halide.h"
#include "alibi.h"
#include "attention_generator.h"
#include "rope.h"

namespace posattn {

using namespace Halide;

class Attention;
template <typename T>
using In = GeneratorInput<T>;

// A variant as the generator holds it once its inputs are added (in configure()): its declaration
// and its Vulkan mode conditions, both made in generate(), when the inputs have values.
struct Declared {
    std::function<AttentionDeclaration()> declaration;
    std::function<std::vector<Expr>()> vulkan_modes = [] { return std::vector<Expr>{}; };
};
using Variant = Declared (*)(Attention &g);

class Attention : public AttentionGenerator<Attention> {
public:
    GeneratorParam<std::string> variant{"variant", "plain"};

    void configure();
    AttentionDeclaration declaration() { return declared_.declaration(); }
    std::vector<Expr> vulkan_modes() { return declared_.vulkan_modes(); }

private:
    Declared declared_;
};

namespace {

// x(d, row, h, b) + bias(d, h).
Func add_per_head(Func x, Func bias, const std::string &name) {
    Var d("d"), row("row"), h("h"), b("b");
    Func sum(name);
    sum(d, row, h, b) = x(d, row, h, b) + bias(d, h);
    return sum;
}

// A relative table (d, row, head) and the index of its row for a site, index(i − j + Lk − 1),
// computed by the runtime (clip for Shaw, distance for Transformer-XL, log buckets for DeBERTa)
// and padded like T5's bias_by_offset.
In<Buffer<float, 3>> *relative_table(Attention &g, const char *name) { return g.add_input<Buffer<float, 3>>(name); }
Func table_of(In<Buffer<float, 3>> *t) {
    t->set_estimates({{0, 64}, {0, 512}, {0, 8}});
    return *t;
}
IndexFunction by_offset(Attention &g, In<Buffer<int32_t, 1>> *index) {
    index->set_estimates({{0, 4095}});
    Expr Lk = g.k.dim(1).extent();
    return [index, Lk](const ScoreSite &s) { return (*index)(s.query - s.key + Lk - 1); };
}

Declared plain(Attention &) { return {[] { return AttentionDeclaration{}; }}; }

// slope_h · offset(form) (generators/alibi.h).
Declared alibi(Attention &g) {
    auto *slopes = g.add_input<Buffer<float, 1>>("slopes");  // [Hq]
    auto *form = g.add_input<int32_t>("alibi_form");
    return {[=] {
                slopes->set_estimates({{0, 8}});
                form->set_estimate(0);
                AttentionDeclaration decl;
                decl.logit_biases.push_back([=](const ScoreSite &s) {
                    return (*slopes)(s.head) * cast<float>(alibi_offset(*form, s.query_position, s.key));
                });
                return decl;
            },
            [=] { return std::vector<Expr>{*form == 0, *form == 1}; }};
}

// The bias of each query − key offset and head, bias_by_offset(i − j + Lq − 1, h), computed by the
// runtime from the bucket table, so the buckets are exactly float32 torch's. The runtime pads it on
// both sides (a negative min) for the rows and keys that tiles compute past Lq and Lk and never
// use; unclamped, a vector of query rows reads it as one dense run.
Declared t5(Attention &g) {
    auto *bias_by_offset = g.add_input<Buffer<float, 2>>("bias_by_offset");
    return {[&g, bias_by_offset] {
        bias_by_offset->set_estimates({{0, 4095}, {0, 8}});
        Expr Lq = g.q.dim(1).extent();
        AttentionDeclaration decl;
        decl.logit_biases.push_back([=](const ScoreSite &s) { return (*bias_by_offset)(s.query_position - s.key + Lq - 1, s.head); });
        return decl;
    }};
}

// q and k rotated at their positions (q_positions [B, Lq], k_positions [B, Lk]); turns [2, r/2]:
// inv_freq of the rotary pairs in turns (rope.h rope_cos_sin); rope_layout 0 neox, 1 gptj.
Declared rope(Attention &g) {
    auto *q_positions = g.add_input<Buffer<int32_t, 2>>("q_positions");
    auto *k_positions = g.add_input<Buffer<int32_t, 2>>("k_positions");
    auto *turns = g.add_input<Buffer<int32_t, 2>>("turns");
    auto *attention_factor = g.add_input<double>("attention_factor");
    auto *layout = g.add_input<int32_t>("rope_layout");
    return {[=, &g] {
                q_positions->set_estimates({{0, 2048}, {0, 1}});
                k_positions->set_estimates({{0, 2048}, {0, 1}});
                turns->set_estimates({{0, 32}, {0, 2}});
                attention_factor->set_estimate(1.0);
                layout->set_estimate(0);
                Expr rotary = 2 * turns->dim(0).extent(), D = g.q.dim(0).extent();
                auto rotate = [=](In<Buffer<int32_t, 2>> *positions, const char *name) {
                    return [=](Func x) { return rope_channels(x, D, *positions, *turns, rotary, *layout, *attention_factor, name); };
                };
                AttentionDeclaration decl;
                decl.transform_q = rotate(q_positions, "q_rotated");
                decl.transform_k = rotate(k_positions, "k_rotated");
                return decl;
            },
            [=] { return std::vector<Expr>{*layout == 0, *layout == 1}; }};
}

// Shaw et al.: q·a^K[idx] in the score, a^V[idx] added to the values.
Declared shaw(Attention &g) {
    auto *rel_k = relative_table(g, "rel_k"), *rel_v = relative_table(g, "rel_v");
    auto *index = g.add_input<Buffer<int32_t, 1>>("rel_index");
    return {[=, &g] {
        AttentionDeclaration decl;
        decl.relative_scores.push_back({false, {}, table_of(rel_k), rel_k->dim(1).extent(), by_offset(g, index)});
        decl.relative_values.push_back({table_of(rel_v), rel_v->dim(1).extent(), by_offset(g, index)});
        return decl;
    }};
}

// Transformer-XL: (q + u)·k + (q + v)·r_dist; u, v_bias (d, h).
Declared xl(Attention &g) {
    auto *r = relative_table(g, "r");
    auto *u = g.add_input<Buffer<float, 2>>("u"), *v_bias = g.add_input<Buffer<float, 2>>("v_bias");
    auto *index = g.add_input<Buffer<int32_t, 1>>("rel_index");
    return {[=, &g] {
        u->set_estimates({{0, 64}, {0, 8}});
        v_bias->set_estimates({{0, 64}, {0, 8}});
        AttentionDeclaration decl;
        decl.transform_q = [=](Func x) { return add_per_head(x, *u, "q_plus_u"); };
        decl.relative_scores.push_back({false, [=](Func x) { return add_per_head(x, *v_bias, "q_plus_v"); }, table_of(r),
                                        r->dim(1).extent(), by_offset(g, index)});
        return decl;
    }};
}

// DeBERTa: c2p q_i·K_r[idx], p2c k_j·Q_r[idx].
Declared deberta(Attention &g) {
    auto *c2p = relative_table(g, "c2p_table"), *p2c = relative_table(g, "p2c_table");
    auto *c2p_index = g.add_input<Buffer<int32_t, 1>>("c2p_index"), *p2c_index = g.add_input<Buffer<int32_t, 1>>("p2c_index");
    return {[=, &g] {
        AttentionDeclaration decl;
        decl.relative_scores.push_back({false, {}, table_of(c2p), c2p->dim(1).extent(), by_offset(g, c2p_index)});
        decl.relative_scores.push_back({true, {}, table_of(p2c), p2c->dim(1).extent(), by_offset(g, p2c_index)});
        return decl;
    }};
}

const std::map<std::string, Variant> kVariants{{"plain", plain}, {"alibi", alibi}, {"t5", t5},         {"rope", rope},
                                               {"shaw", shaw},   {"xl", xl},       {"deberta", deberta}};

}  // namespace

void Attention::configure() {
    AttentionGenerator<Attention>::configure();
    auto found = kVariants.find(variant);
    if (found == kVariants.end()) {
        std::string known;
        for (const auto &[name, _] : kVariants) known += (known.empty() ? "" : ", ") + name;
        throw CompileError("posattn: unknown attention variant '" + std::string(variant) + "' (known: " + known + ")");
    }
    declared_ = found->second(*this);
}

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::Attention, attention)
