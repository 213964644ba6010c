// ARM (AArch64 NEON: 4 float32 lanes, 32 vector registers) defaults of the CPU fused attention schedule
// (schedules/cpu/attention.h), sized so each register tile fits the 32 registers. Not measured on
// ARM hardware yet: this project's machine runs ARM only under qemu, whose timings mean nothing.
// arm_dot_prod and arm_fp16 add no float32 instruction, so these float32 kernels don't use them.
#pragma once

#include "schedules/cpu/attention.h"

namespace posattn::arm {

inline cpu::AttentionParams attention_defaults() {
    cpu::AttentionParams p;
    p.vector_width = 4;
    p.query_tile = 16;
    p.key_block = 256;
    p.score_keys = 4;
    p.value_rows = 4;
    p.value_vectors = 4;
    p.value_width = 4;
    p.score_lanes = 1;
    p.relative_rows = 4;
    p.relative_keys = 4;
    p.value_pass_keys = 512;
    p.key_streams = 1;
    return p;
}

// Shape class "decode" (kernels.json, schedules/x86/attention.h): one 4-row tile. Not timed on an
// ARM machine (none here; qemu's timings are not a CPU's).
inline cpu::AttentionParams attention_decode_defaults() {
    cpu::AttentionParams p = attention_defaults();
    p.query_tile = 4;
    p.value_rows = 4;
    return p;
}

// Shape class "decode8": one 8-row tile. Not timed on ARM either.
inline cpu::AttentionParams attention_decode8_defaults() {
    cpu::AttentionParams p = attention_decode_defaults();
    p.query_tile = 8;
    return p;
}

// Shape class "window" (schedules/x86/attention.h): 128-key blocks. Not timed on ARM either.
inline cpu::AttentionParams attention_window_defaults() {
    cpu::AttentionParams p = attention_defaults();
    p.key_block = 128;
    return p;
}

}  // namespace posattn::arm
