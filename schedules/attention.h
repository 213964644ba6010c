// Schedules of the attention generator, per target family.
#pragma once

#include "arm/attention.h"
#include "gpu/attention.h"
#include "params.h"
#include "target_family.h"
#include "x86/attention.h"

namespace posattn {

// A kernel is compiled once per shape class it declares (kernels.json), each with its own defaults
// and tuned records: "" for any shape; "decode1", "decode" and "decode8" for tiles of 1, 4 and 8
// query rows (decoding; cpu::one_row), "window" for a
// sliding window narrower than the keys, which the runtime picks for such calls
// (runtime/src/attention.cpp). GPUs keep one set of defaults, their plain tiles (on an H200 the
// decode shape's 8 blocks were slower than the host CPU: docs/benchmarks.md).
inline void check_shape_class(const std::string &shape_class) {
    for (const char *known : {"", "decode1", "decode", "decode8", "window"})
        if (shape_class == known) return;
    throw Halide::CompileError("posattn: attention shape_class '" + shape_class +
                               "'; expected '', 'decode1', 'decode', 'decode8' or 'window'");
}

// A decode shape class ("decode1", "decode", "decode8"): few query rows against a long cache.
inline bool decode_class(const std::string &shape_class) { return shape_class.rfind("decode", 0) == 0; }

inline cpu::AttentionParams cpu_attention_defaults(const Halide::Target &target, const std::string &shape_class) {
    const bool arm = target_family(target) == TargetFamily::arm, avx512 = isa_level(target) == "avx512";
    if (shape_class == "decode") return arm ? arm::attention_decode_defaults() : x86::attention_decode_defaults(avx512);
    if (shape_class == "decode1") return cpu::one_row(cpu_attention_defaults(target, "decode"));
    if (shape_class == "decode8") return arm ? arm::attention_decode8_defaults() : x86::attention_decode8_defaults(avx512);
    if (shape_class == "window") return arm ? arm::attention_window_defaults() : x86::attention_window_defaults(avx512);
    return arm ? arm::attention_defaults() : x86::attention_defaults(avx512);
}

// The tiles are part of the algorithm's decomposition (generators/attention.h), so they are asked
// before generate(). A key group is a q·k register tile's keys on CPUs; GPUs read relative terms per logit.
inline AttentionTiles attention_tiles(const Halide::Target &target, const std::string &params, const std::string &shape_class) {
    check_shape_class(shape_class);
    TargetFamily family = target_family(target);
    if (family == TargetFamily::gpu) {
        auto p = parse_schedule_params(target, params, gpu::attention_defaults(target.has_feature(Halide::Target::Vulkan)));
        return {p.query_tile, p.key_block, p.key_block, 1, /*relative_per_logit=*/true, /*values_in_range=*/false,
                /*masks_per_tile=*/false, /*short_blocks=*/false};
    }
    auto p = parse_schedule_params(target, params, cpu_attention_defaults(target, shape_class));
    AttentionTiles tiles{p.query_tile, p.key_block, p.score_keys, p.relative_rows};
    tiles.infinite_scores_as_nan = decode_class(shape_class);
    tiles.key_streams = p.key_streams;
    // (Prefill: decoding streams its keys once, memory-bound.)
    tiles.bfloat16_pairs = !decode_class(shape_class) && has_bfloat16_dot_products(target);
    return tiles;
}

inline void schedule_attention(const Halide::Target &target, const std::string &params, const std::string &shape_class,
                               AttentionStages &stages, Halide::Func out) {
    TargetFamily family = target_family(target);
    if (family == TargetFamily::gpu) {
        const bool vulkan = target.has_feature(Halide::Target::Vulkan);
        gpu::schedule_attention(stages, out, parse_schedule_params(target, params, gpu::attention_defaults(vulkan)), vulkan);
        return;
    }
    cpu::schedule_attention(stages, out, parse_schedule_params(target, params, cpu_attention_defaults(target, shape_class)));
}

}  // namespace posattn
