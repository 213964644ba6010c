// FIRE (Li et al., 2024): the bias f(ψ(i − j) / ψ(max(L, i))) of a query at position i and key
// j ≤ i (causal), ψ(x) = log(c·x + 1), f a learned MLP from R to one output per head:
// f(x)_h = b2_h + Σ_r w2[h, r]·relu(w1_r·x + b1_r). c > 0 and the threshold L are learned scalars.
#include "attention_generator.h"

using namespace Halide;

class Fire : public posattn::AttentionGenerator<Fire> {
public:
    GeneratorParam<int> hidden{"hidden", 32};  // the MLP's width, unrolled into the logit
    Input<Buffer<float, 1>> w1{"w1"}, b1{"b1"};  // [hidden]
    Input<Buffer<float, 2>> w2{"w2"};            // [Hq, hidden], torch's Linear(hidden, Hq).weight
    Input<Buffer<float, 1>> b2{"b2"};            // [Hq]
    Input<float> c{"c"}, threshold{"threshold"};

    posattn::AttentionDeclaration declaration() {
        w1.set_estimates({{0, int(hidden)}});
        b1.set_estimates({{0, int(hidden)}});
        w2.set_estimates({{0, int(hidden)}, {0, 8}});
        b2.set_estimates({{0, 8}});
        c.set_estimate(1.0f);
        threshold.set_estimate(512.0f);
        posattn::AttentionDeclaration decl;
        decl.logit_biases.push_back([this](const posattn::ScoreSite &s) {
            auto psi = [&](Expr x) { return fast_log(c * x + 1.0f); };
            Expr i = cast<float>(s.query_position), distance = cast<float>(max(s.query_position - s.key, 0));
            Expr x = psi(distance) / psi(max(threshold, i));
            Expr f = b2(s.head);
            for (int r = 0; r < hidden; r++) f += w2(r, s.head) * max(w1(r) * x + b1(r), 0.0f);
            return f;
        });
        return decl;
    }
};

HALIDE_REGISTER_GENERATOR(Fire, fire_attention)
