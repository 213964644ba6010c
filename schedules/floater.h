// Schedules of the FLOATER step generator, per target family.
#pragma once

#include "arm/floater.h"
#include "gpu/floater.h"
#include "params.h"
#include "target_family.h"
#include "x86/floater.h"

namespace posattn {

inline void schedule_floater_step(const Halide::Target &target, const std::string &params, Halide::Func y_next,
                                  const std::vector<FloaterStage> &stages) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        cpu::schedule_floater_step(y_next, stages, parse_schedule_params(target, params, x86::floater_defaults()));
        break;
    case TargetFamily::arm:
        cpu::schedule_floater_step(y_next, stages, parse_schedule_params(target, params, arm::floater_defaults()));
        break;
    case TargetFamily::gpu:
        gpu::schedule_floater_step(y_next, stages, parse_schedule_params(target, params, gpu::floater_defaults()),
                                   target.has_feature(Halide::Target::Vulkan));
        break;
    }
}

}  // namespace posattn
