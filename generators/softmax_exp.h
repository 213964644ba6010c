// exp(x) for softmax arguments x = logit − max ≤ 0 (−inf included), vectorizable.
//
// Halide's exp is exact to the last bit but guards the whole float range; here only x ≤ 0
// occurs, so the guards reduce to one clamp: 2^t = 2^n · 2^f with n = round(t), |f| ≤ 1/2,
// 2^f from the Cephes exp2f polynomial (≈ 1 ulp), and 2^n built in the exponent bits.
//
// Any n < −63 gives exactly 0: masked keys (−inf) get exactly zero weight, and no weight is
// subnormal or makes a subnormal product with a value, which Intel cores compute in microcode:
// ALiBi's distant keys (weights e^−60 … e^−87) made its attention 1.2x slower on the Intel Xeon.
// A weight below 2^−63 beside the block maximum's 1 changes no float32 result (ε = 2^−23) by more
// than Lk · 2^−63 relative. The flush is on the exponent's bits: as a float select on t, which
// is −inf at masked keys, it zeroed every row whose last key block was fully masked.
#pragma once

#include "Halide.h"

namespace posattn {

inline Halide::Expr softmax_exp(Halide::Expr x) {
    using namespace Halide;
    Expr t = max(x * 1.44269504088896341f, -127.0f);
    Expr n = round(t);
    Expr f = t - n;
    Expr p = 1.0f + f * (6.931472028550421e-1f +
                         f * (2.402264791363012e-1f +
                              f * (5.550332471162809e-2f +
                                   f * (9.618437357674640e-3f + f * (1.339887440266574e-3f + f * 1.535336188319500e-4f)))));
    Expr biased = cast<int32_t>(n) + 127;  // the exponent bits of 2^n, 0 … 127
    Expr two_to_n = reinterpret<float>(select(biased >= 127 - 63, biased << 23, 0));
    return p * two_to_n;
}

}  // namespace posattn
