// x86 defaults (AVX-512: 16 float32 lanes, 32 vector registers) of the CPU RoPE schedule
// (schedules/cpu/rope.h).
// Measured 2026-11-30 (AMD EPYC, AVX-512, 2 threads), q [2, 32, 4096, 128] float32, direct stores:
// 94% of the ordinary-store copy stream with 128 positions per task (83% with 32). On the Intel
// Xeon (105 MiB L3, 2026-12-01) its non-temporal twin (cmake/nontemporal_outputs.py): 96% of the
// non-temporal copy, 12.8 ms, 1.43x the store stage it replaced (65%, 18.2 ms), alternated.
// Partial RoPE (r = D/2), pass-through copied in the rotated loop: 101% (two passes: 53%).
#pragma once

#include "schedules/cpu/rope.h"

namespace posattn::x86 {

inline cpu::RopeParams rope_defaults() {
    cpu::RopeParams p;
    p.vector_width = 16;
    p.positions_per_task = 128;
    return p;
}

}  // namespace posattn::x86
