// Schedules of the FLOATER step generator, per target family.
#pragma once

#include "arm/floater.h"
#include "params.h"
#include "target_family.h"
#include "x86/floater.h"

namespace posattn {

// The floater schedule's parameters for a target: its family's defaults, overridden by `text`.
inline cpu::FloaterParams floater_params(const Halide::Target &target, const std::string &text) {
    switch (target_family(target)) {
    case TargetFamily::x86: return parse_schedule_params(text, x86::floater_defaults());
    case TargetFamily::arm: return parse_schedule_params(text, arm::floater_defaults());
    }
    return {};
}

inline void schedule_floater_step(const Halide::Target &target, const std::string &params, Halide::Func y_next,
                                  const std::vector<FloaterStage> &stages) {
    cpu::schedule_floater_step(y_next, stages, floater_params(target, params));
}

}  // namespace posattn
