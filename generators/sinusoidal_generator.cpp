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
        // Pair i = 0 … pairs−1 has frequency ω_i; "pair" `pairs` is the zero column of an odd d.
        Expr pairs = out.dim(0).extent() / 2;
        Expr position = cast<double>(positions(s, b));
        pair_omega(i) = select(i < pairs, pow(base, -cast<double>(i) * exponent_step), Expr(0.0));
        // The sine and cosine of one angle share its reduction and polynomials.
        pair_sin_cos(i, s, b) = Tuple(sin_quarter_turns(position * pair_omega(i), 0),
                                      sin_quarter_turns(position * pair_omega(i), 1));
        Expr interleaved = select(c % 2 == 0, pair_sin_cos(c / 2, s, b)[0], pair_sin_cos(c / 2, s, b)[1]);
        half_layout_omega(c) = pair_omega(select(c < pairs, c, c - pairs));
        Expr half = sin_quarter_turns(position * half_layout_omega(c), select(c >= pairs && c < 2 * pairs, 1, 0));
        Expr pe = select(half_layout, half, interleaved);
        out(c, s, b) = fused ? (*x)(c, s, b) + pe : pe;

        positions.set_estimates({{0, 4096}, {0, 8}});
        base.set_estimate(10000.0);
        exponent_step.set_estimate(2.0 / 1024);
        half_layout.set_estimate(false);
        if (fused) x->set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
        // The runtime passes every buffer with zero mins; that lets channel index math simplify.
        for (int dim = 0; dim < 3; dim++) out.dim(dim).set_min(0);
        out.set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        schedule_encoding(get_target(), schedule_params, out, {pair_omega, half_layout_omega}, pair_sin_cos,
                          !half_layout);
    }

private:
    Var c{"c"}, s{"s"}, b{"b"}, i{"i"};
    Func pair_omega{"pair_omega"}, half_layout_omega{"half_layout_omega"}, pair_sin_cos{"pair_sin_cos"};
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::Sinusoidal, sinusoidal)
