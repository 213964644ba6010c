// A sum's loop unrolled by 8 (split at `term`), for GPU schedules: lavapipe (llvmpipe's gallivm)
// ends a shader invocation after 65,535 loop iterations in all (LP_MAX_TGSI_LOOP_ITERATIONS),
// silently, so long sums must not each cost one iteration per term there. On Vulkan the tail is
// not partitioned: partitioned, its guards (`n % 8 >= 3`, ...) become bool kernel arguments,
// which Halide 21's SPIR-V cannot take; unpartitioned, each depends on the outer loop and stays
// in the kernel.
#pragma once

#include "Halide.h"

namespace posattn::gpu {

inline void unroll_sum(Halide::Stage sum, Halide::RVar term, bool vulkan) {
    Halide::RVar outer(term.name() + "_o"), inner(term.name() + "_i");
    sum.split(term, outer, inner, 8, Halide::TailStrategy::GuardWithIf).unroll(inner);
    if (vulkan) sum.never_partition(outer);
}

}  // namespace posattn::gpu
