// Vectorizable sine with the argument reduction done in float64.
//
// Halide's sin/cos call libm per lane (no vectorization), and fast_sin is only accurate to 1e-5.
// Sinusoidal encodings take angles p·ω up to ~2^31, where a float32 product already has an
// absolute error of hundreds of radians. So the angle arrives as float64, is reduced by
// multiples of π/2 in float64, and only the reduced argument |r| ≤ π/4 goes through float32
// minimax polynomials (Cephes sinf/cosf coefficients, ≤ 1 ulp on that interval).
#pragma once

#include "Halide.h"

namespace posattn {

// sin(angle + quarter_turns·π/2) as float32; angle is Float(64), quarter_turns Int(32).
// quarter_turns = 1 gives the cosine exactly, without rounding π/2 into the angle.
inline Halide::Expr sin_quarter_turns(Halide::Expr angle, Halide::Expr quarter_turns) {
    using namespace Halide;
    // π/2 split so that k·pio2_hi is exact for |k| < 2^31 (pio2_hi has 21 significant bits).
    const Expr pio2_hi(0x1.921fbp+0), pio2_lo(3.139164786504813e-07), two_over_pi(0.63661977236758134308);
    Expr k = round(angle * two_over_pi);
    Expr r = cast<float>((angle - k * pio2_hi) - k * pio2_lo);
    Expr quadrant = (cast<int32_t>(k) + quarter_turns) & 3;  // |k| ≤ 2^31·2/π: fits int32
    Expr r2 = r * r;
    Expr sin_r = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f));
    Expr cos_r = 1.0f - 0.5f * r2 +
                 r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
    // Quadrants 1 and 3 take the cosine; quadrants 2 and 3 flip the sign bit.
    Expr value = select((quadrant & 1) == 1, cos_r, sin_r);
    Expr sign = cast<uint32_t>(quadrant & 2) << 30;
    return reinterpret<float>(reinterpret<uint32_t>(value) ^ sign);
}

}  // namespace posattn
