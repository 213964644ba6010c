// Schedules of the linear generator, per target family.
#pragma once

#include "params.h"
#include "target_family.h"
#include "x86/linear.h"

namespace posattn {

inline void schedule_linear(const Halide::Target &target, const std::string &params, LinearStages &stages,
                            Halide::Func out) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        x86::schedule_linear(stages, out, parse_schedule_params<x86::LinearParams>(params));
        break;
    }
}

}  // namespace posattn
