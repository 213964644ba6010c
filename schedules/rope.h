// Schedules of the RoPE generator, per target family.
#pragma once

#include "arm/rope.h"
#include "params.h"
#include "target_family.h"
#include "x86/rope.h"

namespace posattn {

// The rope schedule's parameters for a target: its family's defaults, overridden by `text`.
inline cpu::RopeParams rope_params(const Halide::Target &target, const std::string &text) {
    switch (target_family(target)) {
    case TargetFamily::x86: return parse_schedule_params(text, x86::rope_defaults());
    case TargetFamily::arm: return parse_schedule_params(text, arm::rope_defaults());
    }
    return {};
}

// out(i, m, l, h, b): rotated pairs, members from rotated(i, l, h, b), which uses the per-position
// cos_sin(i, l, b); out_pass(c, l, h, b): the channels that pass through (undefined if none). `layouts`: conditions
// under which the pair view's strides are constants (one per channel layout).
inline void schedule_rope(const Halide::Target &target, const std::string &params, Halide::Func out,
                          Halide::Func out_pass, Halide::Func rotated, Halide::Func cos_sin,
                          const std::vector<Halide::Expr> &layouts) {
    cpu::schedule_rope(out, out_pass, rotated, cos_sin, layouts, rope_params(target, params));
}

}  // namespace posattn
