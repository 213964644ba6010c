// Schedules of the attention generator, per target family.
#pragma once

#include "arm/attention.h"
#include "gpu/attention.h"
#include "params.h"
#include "target_family.h"
#include "x86/attention.h"

namespace posattn {

// The tiles are part of the algorithm's decomposition (generators/attention.h), so they are asked
// before generate(). A key group is a q·k register tile's keys on CPUs; GPUs read relative terms per logit.
inline AttentionTiles attention_tiles(const Halide::Target &target, const std::string &params) {
    switch (target_family(target)) {
    case TargetFamily::x86: {
        auto p = parse_schedule_params(params, x86::attention_defaults());
        return {p.query_tile, p.key_block, p.score_keys, p.relative_rows};
    }
    case TargetFamily::arm: {
        auto p = parse_schedule_params(params, arm::attention_defaults());
        return {p.query_tile, p.key_block, p.score_keys, p.relative_rows};
    }
    case TargetFamily::gpu: {
        auto p = parse_schedule_params(params, gpu::attention_defaults(target.has_feature(Halide::Target::Vulkan)));
        return {p.query_tile, p.key_block, p.key_block, 1, /*relative_per_logit=*/true};
    }
    }
    return {};
}

inline void schedule_attention(const Halide::Target &target, const std::string &params,
                               AttentionStages &stages, Halide::Func out) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        cpu::schedule_attention(stages, out, parse_schedule_params(params, x86::attention_defaults()));
        break;
    case TargetFamily::arm:
        cpu::schedule_attention(stages, out, parse_schedule_params(params, arm::attention_defaults()));
        break;
    case TargetFamily::gpu: {
        const bool vulkan = target.has_feature(Halide::Target::Vulkan);
        gpu::schedule_attention(stages, out, parse_schedule_params(params, gpu::attention_defaults(vulkan)), vulkan);
        break;
    }
    }
}

}  // namespace posattn
