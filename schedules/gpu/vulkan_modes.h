// Halide 21's SPIR-V cannot pass a bool to a kernel, yet Halide hoists a comparison of an integer
// mode argument (`form == 0`) into one. On Vulkan, the given loop nests (a Func's, or one of its
// specializations') therefore get one specialization per case, so that inside each the
// comparisons are constants; with `exhaustive`, any other value is a run-time error instead of a
// generic nest.
#pragma once

#include <vector>

#include "Halide.h"

namespace posattn::gpu {

inline void specialize_modes_for_vulkan(const Halide::Target &target, const std::vector<Halide::Stage> &nests,
                                        const std::vector<Halide::Expr> &cases, bool exhaustive = false) {
    if (!target.has_feature(Halide::Target::Vulkan)) return;
    for (Halide::Stage f : nests) {
        for (const Halide::Expr &c : cases) f.specialize(c);
        if (exhaustive) f.specialize_fail("unreachable: every mode value is specialized");
    }
}

}  // namespace posattn::gpu
