// ARM (AArch64 NEON: 4 float32 lanes, 32 vector registers) defaults of the CPU RoPE schedule
// (schedules/cpu/rope.h), sized so each register tile fits the 32 registers. Not measured on
// ARM hardware yet: this project's machine runs ARM only under qemu, whose timings mean nothing.
// arm_dot_prod and arm_fp16 add no float32 instruction, so these float32 kernels don't use them.
#pragma once

#include "schedules/cpu/rope.h"

namespace posattn::arm {

inline cpu::RopeParams rope_defaults() {
    cpu::RopeParams p;
    p.vector_width = 4;
    p.positions_per_task = 128;
    return p;
}

}  // namespace posattn::arm
