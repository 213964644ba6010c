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
};

}  // namespace posattn
