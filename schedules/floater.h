// Schedules of the FLOATER step generator, per target family.
#pragma once

#include "params.h"
#include "target_family.h"
#include "x86/floater.h"

namespace posattn {

inline void schedule_floater_step(const Halide::Target &target, const std::string &params, Halide::Func y_next,
                                  const std::vector<FloaterStage> &stages) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        x86::schedule_floater_step(y_next, stages, parse_schedule_params<x86::FloaterParams>(params));
        break;
    }
}

}  // namespace posattn
