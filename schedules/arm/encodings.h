// ARM (AArch64 NEON: 4 float32 lanes, 32 vector registers) defaults of the CPU elementwise encoding schedule
// (schedules/cpu/encodings.h), sized so each register tile fits the 32 registers. Not measured on
// ARM hardware yet: this project's machine runs ARM only under qemu, whose timings mean nothing.
// arm_dot_prod and arm_fp16 add no float32 instruction, so these float32 kernels don't use them.
#pragma once

#include "schedules/cpu/encodings.h"

namespace posattn::arm {

inline cpu::EncodingParams encoding_defaults() {
    cpu::EncodingParams p;
    p.vector_width = 4;
    p.rows_per_task = 64;
    return p;
}

// The trig x + PE forms (kernels.json row_tiles): tiles of 16 rows × 64 channels.
inline cpu::TiledEncodingParams tiled_encoding_defaults() {
    cpu::TiledEncodingParams p;
    static_cast<cpu::EncodingParams &>(p) = encoding_defaults();
    p.tile_rows = 16;
    p.tile_vectors = 16;  // unmeasured on ARM hardware: x86's 64 channels
    return p;
}

}  // namespace posattn::arm
