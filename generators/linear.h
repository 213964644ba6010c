// The stages of the linear generator (linear_generator.cpp) that a schedule needs.
#pragma once

#include "Halide.h"

namespace posattn {

struct LinearStages {
    // weight_panels(o, e, panel) = weight[panel·P + o, e]: the weight transposed into panels of P
    // outputs (a schedule's register tile or thread block), each panel contiguous, so that a tile's
    // outputs are dense vectors P floats apart from one input to the next.
    Halide::Func weight_panels{"weight_panels"};
    Halide::Func product{"product"};  // product(o, n) = bias[o] + Σ_e …
    Halide::RDom reduction;           // over e
    // Where the CPU multiplies bfloat16 pairs (has_bfloat16_dot_products, bfloat16 storage): the
    // panels hold bfloat16 pairs of inputs, weight_panels(c, o, pair, panel) = weight[panel·P + o,
    // 2·pair + c], and the product sums over reduction = (c, pair), then an odd E's last input.
    bool bfloat16_pairs = false;
    Halide::RDom last_input;
};

}  // namespace posattn
