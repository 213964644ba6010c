// Schedules of the RoPE generator, per target family.
#pragma once

#include "arm/rope.h"
#include "gpu/rope.h"
#include "params.h"
#include "target_family.h"
#include "x86/rope.h"

namespace posattn {

// out(i, m, l, h, b): rotated pairs, members from rotated(i, l, h, b), which uses the per-position
// cos_sin(i, l, b); out_pass(c, l, h, b): the channels that pass through (undefined if none).
// `layouts`: conditions under which the pair view's strides are constants (one per channel layout).
inline void schedule_rope(const Halide::Target &target, const std::string &params, Halide::Func out,
                          Halide::Func out_pass, Halide::Func rotated, Halide::Func cos_sin,
                          const std::vector<Halide::Expr> &layouts) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        cpu::schedule_rope(out, out_pass, rotated, cos_sin, layouts, parse_schedule_params(target, params, x86::rope_defaults()));
        break;
    case TargetFamily::arm:
        cpu::schedule_rope(out, out_pass, rotated, cos_sin, layouts, parse_schedule_params(target, params, arm::rope_defaults()));
        break;
    case TargetFamily::gpu:
        gpu::schedule_rope(out, out_pass, rotated, cos_sin, layouts, parse_schedule_params(target, params, gpu::rope_defaults()));
        break;
    }
}

}  // namespace posattn
