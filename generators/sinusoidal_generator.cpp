// Sinusoidal absolute encoding (SPEC §1), as a table PE[b, s, :] = PE(positions[b, s]) or fused
// with an input: out = x + PE(positions).
//   ω_i = base^(−i·exponent_step), i = 0 … d/2−1, where the caller passes
//   exponent_step = 2/d' ('vaswani') or 1/max(d'/2−1, 1) ('t2t'), d' = d rounded down to even.
//   interleaved: PE[2i] = sin(pω_i), PE[2i+1] = cos(pω_i);  half: PE[i] = sin, PE[d'/2+i] = cos.
//   Odd d: the last column is zero (its ω is 0, and sin(0) = 0 exactly).
#include "Halide.h"
#include "schedules/encodings.h"
#include "trig.h"

namespace posattn {

using namespace Halide;

class Sinusoidal : public Generator<Sinusoidal> {
public:
    GeneratorParam<bool> fused{"fused", false};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h

    Input<Buffer<int32_t, 2>> positions{"positions"};  // [B, S]
    Input<double> base{"base"};
    Input<double> exponent_step{"exponent_step"};
    Input<bool> half_layout{"half_layout"};
    Input<Buffer<float, 3>> *x = nullptr;  // [B, S, D], fused form only
    Output<Buffer<float, 3>> out{"out"};  // [B, S, D]

    void configure() {
        if (fused) x = add_input<Buffer<float, 3>>("x");
    }

    void generate() {
        Expr pairs = out.dim(0).extent() / 2;
        Expr in_pairs = c < 2 * pairs;
        Expr pair = select(half_layout, select(c < pairs, c, c - pairs), c / 2);
        Expr is_cos = select(half_layout, c >= pairs, c % 2 == 1);
        column_omega(c) = select(in_pairs, pow(base, -cast<double>(pair) * exponent_step), Expr(0.0));
        column_quarter_turns(c) = select(in_pairs && is_cos, 1, 0);

        Expr pe = sin_quarter_turns(cast<double>(positions(s, b)) * column_omega(c), column_quarter_turns(c));
        out(c, s, b) = fused ? (*x)(c, s, b) + pe : pe;

        positions.set_estimates({{0, 4096}, {0, 8}});
        base.set_estimate(10000.0);
        exponent_step.set_estimate(2.0 / 1024);
        half_layout.set_estimate(false);
        if (fused) x->set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
        out.set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        schedule_encoding(get_target(), schedule_params, out, {column_omega, column_quarter_turns});
    }

private:
    Var c{"c"}, s{"s"}, b{"b"};
    Func column_omega{"column_omega"}, column_quarter_turns{"column_quarter_turns"};
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::Sinusoidal, sinusoidal)
