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
        // Panels in float32: laid out once per call, then read by every row.
        stages.weight_panels(o, c, panel) = widened(weight(c, clamp(P ? panel * P + o : Expr(o), 0, O - 1)));
        Func w = stages.weight_panels;
        stages.product(o, n) = widened(bias(clamp(o, 0, O - 1)));
        stages.product(o, n) += (P ? w(o % P, e, o / P) : w(o, e, 0)) * widened(x(e, clamp(n, 0, N - 1)));
        out(o, n) = cast(dtype, stages.product(o, n));
        stages.reduction = e;

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
