// Specializations shared by the target families' schedules.
#pragma once

#include <vector>

#include "Halide.h"

namespace posattn {

// A loop nest for each layout (conditions under which strides are constants), and each of those
// and the generic nest split on paths[0], its specialized nest on paths[1], and so on (an
// encoding's ways of reading its values: trig.h PositionSplit::paths). Halide simplifies a select
// on a path away in each nest, so no nest computes another's values (nor, on Vulkan, passes the
// comparison to a kernel as a bool, which Halide 21's SPIR-V cannot).
inline void specialize_nested(Halide::Stage nest, const std::vector<Halide::Expr> &paths, size_t first = 0) {
    if (first < paths.size()) specialize_nested(nest.specialize(paths[first]), paths, first + 1);
}

inline void specialize_cases(Halide::Stage out, const std::vector<Halide::Expr> &layouts, const std::vector<Halide::Expr> &paths) {
    for (const Halide::Expr &layout : layouts) specialize_nested(out.specialize(layout), paths);
    specialize_nested(out, paths);
}

}  // namespace posattn
