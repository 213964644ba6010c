// A linear layer as torch's nn.Linear computes it: out[n, o] = Σ_e x[n, e]·weight[o, e] + bias[o].
// DeBERTa projects its relative embeddings with it (contract §11), once per call; Transformer-XL's
// r = W_r·R is the same product without a bias.
#include "Halide.h"
#include "linear.h"
#include "schedules/linear.h"
#include "storage.h"

namespace posattn {

using namespace Halide;

class Linear : public Generator<Linear> {
public:
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h
    GeneratorParam<Type> dtype{"dtype", Float(32)};  // of every input and out (storage.h)

    Input<Buffer<void, 2>> x{"x"};            // [N, E]
    Input<Buffer<void, 2>> weight{"weight"};  // [O, E]
    Input<Buffer<void, 1>> bias{"bias"};      // [O]
    Output<Buffer<void, 2>> out{"out"};       // [N, O]

    void configure() {
        const Type stored = storage_type(dtype);
        for (auto *input : {&x, &weight}) input->set_type(stored);
        bias.set_type(stored);
        out.set_type(stored);
    }

    void generate() {
        Expr E = x.dim(0).extent(), O = weight.dim(1).extent(), N = x.dim(1).extent();
        RDom e(0, E, "e");
        // Register tiles cover whole tiles also at the edges: the reads past N and O are clamped
        // and those results are never stored.
        // P outputs per panel of the transposed weight. The autoschedulers get it as one panel of
        // every output, so that their baselines lay it out themselves.
        const int P = using_autoscheduler() ? 0 : linear_panel_width(get_target(), schedule_params);
        Expr weight_row = clamp(P ? panel * P + o : Expr(o), 0, O - 1), row = clamp(n, 0, N - 1);
        stages.product(o, n) = widened(bias(clamp(o, 0, O - 1)));
        stages.bfloat16_pairs = P && dtype.value() == BFloat(16) && has_bfloat16_dot_products(get_target());
        if (stages.bfloat16_pairs) {
            // Pairs as stored, which one vdpbf16ps multiplies and adds per output lane.
            Var c2("c2");
            stages.weight_panels(c2, o, c, panel) = weight(min(2 * c + c2, E - 1), weight_row);
            Func w = stages.weight_panels;
            RDom pairs(0, 2, 0, E / 2, "input_pair");
            stages.product(o, n) += cast<float>(w(pairs.x, o % P, pairs.y, o / P)) * cast<float>(x(2 * pairs.y + pairs.x, row));
            stages.last_input = RDom(E - 1, E % 2, "last_input");  // (a clamped input would make every pair a gather)
            stages.product(o, n) += cast<float>(w(0, o % P, E / 2, o / P)) * cast<float>(x(stages.last_input, row));
            stages.reduction = pairs;
        } else {
            // Panels in float32: laid out once per call, then read by every row.
            stages.weight_panels(o, c, panel) = widened(weight(c, weight_row));
            Func w = stages.weight_panels;
            stages.product(o, n) += (P ? w(o % P, e, o / P) : w(o, e, 0)) * widened(x(e, row));
            stages.reduction = e;
        }
        out(o, n) = cast(dtype, stages.product(o, n));

        x.set_estimates({{0, 768}, {0, 512}});
        weight.set_estimates({{0, 768}, {0, 768}});
        bias.set_estimates({{0, 768}});
        for (int dim = 0; dim < 2; dim++) out.dim(dim).set_min(0);
        out.set_estimates({{0, 768}, {0, 512}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        schedule_linear(get_target(), schedule_params, stages, out);
    }

private:
    Var o{"o"}, n{"n"}, c{"c"}, panel{"panel"};
    LinearStages stages;
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::Linear, linear)
