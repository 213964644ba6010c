// Schedules of the linear generator, per target family.
#pragma once

#include "arm/linear.h"
#include "params.h"
#include "target_family.h"
#include "x86/linear.h"

namespace posattn {

// The linear schedule's parameters for a target: its family's defaults, overridden by `text`.
inline cpu::LinearParams linear_params(const Halide::Target &target, const std::string &text) {
    switch (target_family(target)) {
    case TargetFamily::x86: return parse_schedule_params(text, x86::linear_defaults());
    case TargetFamily::arm: return parse_schedule_params(text, arm::linear_defaults());
    }
    return {};
}

inline void schedule_linear(const Halide::Target &target, const std::string &params, LinearStages &stages,
                            Halide::Func out) {
    cpu::schedule_linear(stages, out, linear_params(target, params));
}

}  // namespace posattn
