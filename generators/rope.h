// RoPE's rotation (SPEC §6), shared by the standalone kernel and attention's q/k transform.
#pragma once

#include "Halide.h"
#include "trig.h"

namespace posattn {

// (cos θ, sin θ)·attention_factor for θ = position·inv_freq, θ reduced in float64 (trig.h).
inline Halide::Tuple rope_cos_sin(Halide::Expr position, Halide::Expr inv_freq, Halide::Expr attention_factor,
                                  const Halide::Target &target) {
    using namespace Halide;
    Expr angle = cast<double>(position) * inv_freq, factor = cast<float>(attention_factor);
    return Tuple(factor * sin_quarter_turns(angle, 1, target), factor * sin_quarter_turns(angle, 0, target));
}

// The pair (a, b) multiplied by e^{iθ}: member 0 is a·cos θ − b·sin θ, member 1 b·cos θ + a·sin θ.
inline Halide::Tuple rope_rotate(Halide::Expr a, Halide::Expr b, const Halide::Tuple &cos_sin) {
    return Halide::Tuple(a * cos_sin[0] - b * cos_sin[1], b * cos_sin[0] + a * cos_sin[1]);
}

// x(d, row, h, b) with its first `rotary` channels rotated (channel form, for attention's q/k):
// layout 0 'neox' pairs (c, r/2 + c), 1 'gptj' (2c, 2c + 1); positions(row, b); inv_freq(c).
inline Halide::Func rope_channels(Halide::Func x, Halide::Expr channels, Halide::Func positions,
                                  Halide::Func inv_freq, Halide::Expr rotary, Halide::Expr layout,
                                  Halide::Expr attention_factor, const Halide::Target &target,
                                  const std::string &name) {
    using namespace Halide;
    Var d("d"), row("row"), h("h"), b("b");
    Expr half = rotary / 2, gptj = layout == 1;
    Expr first = select(gptj, d % 2 == 0, d < half);  // the pair's a (else its b)
    Expr pair = clamp(select(gptj, d / 2, select(d < half, d, d - half)), 0, half - 1);
    Expr partner = clamp(select(gptj, select(first, d + 1, d - 1), select(first, d + half, d - half)), 0, channels - 1);
    Tuple cos_sin = rope_cos_sin(positions(row, b), inv_freq(pair), attention_factor, target);
    Expr a = select(first, x(d, row, h, b), x(partner, row, h, b));
    Expr bb = select(first, x(partner, row, h, b), x(d, row, h, b));
    Tuple rotated = rope_rotate(a, bb, cos_sin);
    Func out(name);
    out(d, row, h, b) = select(d < rotary, select(first, rotated[0], rotated[1]), x(d, row, h, b));
    return out;
}

}  // namespace posattn
