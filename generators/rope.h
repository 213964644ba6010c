// RoPE's rotation (SPEC §6), shared by the standalone kernel and attention's q/k transform.
#pragma once

#include "Halide.h"
#include "trig.h"

namespace posattn {

// (cos θ, sin θ)·attention_factor for θ = position·inv_freq, θ reduced in float64 (trig.h).
inline Halide::Tuple rope_cos_sin(Halide::Expr position, Halide::Expr inv_freq, Halide::Expr attention_factor) {
    using namespace Halide;
    Expr angle = cast<double>(position) * inv_freq, factor = cast<float>(attention_factor);
    return Tuple(factor * sin_quarter_turns(angle, 1), factor * sin_quarter_turns(angle, 0));
}

// The pair (a, b) multiplied by e^{iθ}: member 0 is a·cos θ − b·sin θ, member 1 b·cos θ + a·sin θ.
inline Halide::Tuple rope_rotate(Halide::Expr a, Halide::Expr b, const Halide::Tuple &cos_sin) {
    return Halide::Tuple(a * cos_sin[0] - b * cos_sin[1], b * cos_sin[0] + a * cos_sin[1]);
}

}  // namespace posattn
