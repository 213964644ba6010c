// The stages of the linear generator (linear_generator.cpp) that a schedule needs.
#pragma once

#include "Halide.h"

namespace posattn {

struct LinearStages {
    Halide::Func weight_by_output{"weight_by_output"};  // weight_by_output(o, e) = weight[o, e]
    Halide::Func product{"product"};                    // product(o, n) = bias[o] + Σ_e …
    Halide::RDom reduction;                             // over e
};

}  // namespace posattn
