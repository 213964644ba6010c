// The one place that decides which target family's schedule applies to a Halide target.
// Each family has a folder schedules/<family>/ with the same file names.
#pragma once

#include "Halide.h"

namespace posattn {

enum class TargetFamily { x86, arm, gpu };

inline TargetFamily target_family(const Halide::Target &target) {
    using Halide::Target;
    if (target.has_feature(Target::CUDA) || target.has_feature(Target::OpenCL) || target.has_feature(Target::Vulkan))
        return TargetFamily::gpu;
    if (!target.has_gpu_feature()) {
        if (target.arch == Target::X86) return TargetFamily::x86;
        // 32-bit ARM (Android's armeabi-v7a) takes AArch64's schedules: the same 4-lane NEON
        // vectors, with 16 registers where AArch64 has 32 (its larger tiles spill; untuned).
        if (target.arch == Target::ARM) return TargetFamily::arm;
    }
    throw Halide::CompileError(std::string("posattn: no schedule for target ") + target.to_string() +
                               " (schedules exist for: x86, arm, and cuda / opencl / vulkan)");
}

}  // namespace posattn
