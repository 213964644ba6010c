// Schedules of the attention generator, per target family.
#pragma once

#include "arm/attention.h"
#include "params.h"
#include "target_family.h"
#include "x86/attention.h"

namespace posattn {

// The attention schedule's parameters for a target: its family's defaults, overridden by `text`.
inline cpu::AttentionParams attention_params(const Halide::Target &target, const std::string &text) {
    switch (target_family(target)) {
    case TargetFamily::x86: return parse_schedule_params(text, x86::attention_defaults());
    case TargetFamily::arm: return parse_schedule_params(text, arm::attention_defaults());
    }
    return {};
}

// The query tile and key block are part of the algorithm's decomposition, so they are asked
// before generate().
struct AttentionTiling {
    int query_tile, key_block;
};
inline AttentionTiling attention_tiling(const Halide::Target &target, const std::string &params) {
    auto p = attention_params(target, params);
    return {p.query_tile, p.key_block};
}

inline void schedule_attention(const Halide::Target &target, const std::string &params,
                               AttentionStages &stages, Halide::Func out) {
    cpu::schedule_attention(stages, out, attention_params(target, params));
}

}  // namespace posattn
