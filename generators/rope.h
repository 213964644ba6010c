// RoPE's rotation (contract §6), shared by the standalone kernel and attention's q/k transform.
#pragma once

#include "Halide.h"
#include "trig.h"

namespace posattn {

// (cos θ, sin θ)·attention_factor for θ = position·inv_freq, from the pair's frequency in turns
// (q_high, q_low: inv_freq/2π in fixed point, trig.h fixed_point_turn), so that θ is reduced
// in 32-bit lanes, without float64, its error not growing beyond float64's own.
inline Halide::Tuple rope_cos_sin(const Halide::Expr &position, const Halide::Expr &q_high, const Halide::Expr &q_low,
                                  const Halide::Expr &attention_factor) {
    using namespace Halide;
    Tuple sin_cos = sin_cos_of_turns(fixed_point_turn(position, q_high, q_low));
    Expr factor = cast<float>(attention_factor);
    return Tuple(factor * sin_cos[1], factor * sin_cos[0]);
}

// The pair (a, b) multiplied by e^{iθ}: member 0 is a·cos θ − b·sin θ, member 1 b·cos θ + a·sin θ.
inline Halide::Tuple rope_rotate(Halide::Expr a, Halide::Expr b, const Halide::Tuple &cos_sin) {
    return Halide::Tuple(a * cos_sin[0] - b * cos_sin[1], b * cos_sin[0] + a * cos_sin[1]);
}

// x(d, row, h, b) with its first `rotary` channels rotated (channel form, for attention's q/k):
// layout 0 'neox' pairs (c, r/2 + c), 1 'gptj' (2c, 2c + 1); positions(row, b); turns(c, word), each
// pair's frequency as rope_cos_sin takes it.
inline Halide::Func rope_channels(Halide::Func x, Halide::Expr channels, Halide::Func positions,
                                  Halide::Func turns, Halide::Expr rotary, Halide::Expr layout,
                                  Halide::Expr attention_factor, const std::string &name) {
    using namespace Halide;
    Var d("d"), row("row"), h("h"), b("b");
    Expr half = rotary / 2, gptj = layout == 1;
    Expr first = select(gptj, d % 2 == 0, d < half);  // the pair's a (else its b)
    Expr pair = clamp(select(gptj, d / 2, select(d < half, d, d - half)), 0, half - 1);
    Expr partner = clamp(select(gptj, select(first, d + 1, d - 1), select(first, d + half, d - half)), 0, channels - 1);
    Tuple cos_sin = rope_cos_sin(positions(row, b), turns(pair, 0), turns(pair, 1), attention_factor);
    Expr a = select(first, x(d, row, h, b), x(partner, row, h, b));
    Expr bb = select(first, x(partner, row, h, b), x(d, row, h, b));
    Tuple rotated = rope_rotate(a, bb, cos_sin);
    Func out(name);
    out(d, row, h, b) = select(d < rotary, select(first, rotated[0], rotated[1]), x(d, row, h, b));
    return out;
}

}  // namespace posattn
