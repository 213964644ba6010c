// Specializations shared by the target families' schedules.
#pragma once

#include <vector>

#include "Halide.h"

namespace posattn {

// A loop nest for each layout (conditions under which strides are constants), and, if `path` is
// defined, each of those and the generic nest split again on it. Halide simplifies a select on
// `path` away on both sides of that split, so neither nest computes the other's values (nor, on
// Vulkan, passes the comparison to a kernel as a bool, which Halide 21's SPIR-V cannot).
inline void specialize_cases(Halide::Stage out, const std::vector<Halide::Expr> &layouts, const Halide::Expr &path) {
    for (const Halide::Expr &layout : layouts) {
        Halide::Stage nest = out.specialize(layout);
        if (path.defined()) nest.specialize(path);
    }
    if (path.defined()) out.specialize(path);
}

}  // namespace posattn
