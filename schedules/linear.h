// Schedules of the linear generator, per target family.
#pragma once

#include "arm/linear.h"
#include "gpu/linear.h"
#include "params.h"
#include "target_family.h"
#include "x86/linear.h"

namespace posattn {

inline cpu::LinearParams cpu_linear_defaults(const Halide::Target &target) {
    return target_family(target) == TargetFamily::arm ? arm::linear_defaults() : x86::linear_defaults(isa_level(target) == "avx512");
}

// Outputs per panel of the transposed weight (generators/linear.h), asked before generate(): a
// register tile's outputs on CPUs, a thread block's on GPUs.
inline int linear_panel_width(const Halide::Target &target, const std::string &params) {
    TargetFamily family = target_family(target);
    if (family == TargetFamily::gpu) return parse_schedule_params(target, params, gpu::linear_defaults()).output_threads;
    return parse_schedule_params(target, params, cpu_linear_defaults(target)).tile_width();
}

inline void schedule_linear(const Halide::Target &target, const std::string &params, LinearStages &stages,
                            Halide::Func out) {
    TargetFamily family = target_family(target);
    if (family == TargetFamily::gpu)
        gpu::schedule_linear(stages, out, parse_schedule_params(target, params, gpu::linear_defaults()));
    else
        cpu::schedule_linear(stages, out, parse_schedule_params(target, params, cpu_linear_defaults(target)));
}

}  // namespace posattn
