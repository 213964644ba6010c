// Schedules of the attention generator, per target family.
#pragma once

#include "params.h"
#include "target_family.h"
#include "x86/attention.h"

namespace posattn {

// The key block is part of the algorithm's decomposition, so it is asked before generate().
inline int attention_key_block(const Halide::Target &target, const std::string &params) {
    switch (target_family(target)) {
    case TargetFamily::x86: return parse_schedule_params<x86::AttentionParams>(params).key_block;
    }
    return 0;
}

inline void schedule_attention(const Halide::Target &target, const std::string &params,
                               AttentionStages &stages, Halide::Func out) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        x86::schedule_attention(stages, out, parse_schedule_params<x86::AttentionParams>(params));
        break;
    }
}

}  // namespace posattn
