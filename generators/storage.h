// Storage types. A kernel's tensors are float32, float16 or bfloat16 in memory (its generator
// param `dtype`), and its arithmetic is float32 whatever they are (contract §0 "Storage types"): a
// 16-bit kernel computes the float32 math of its rounded inputs and rounds once, on store.
#pragma once

#include <sstream>
#include <vector>

#include "Halide.h"

namespace posattn {

// A kernel's generator param `dtype` (GeneratorParam<Type>, default float32), checked: float32,
// float16 or bfloat16.
inline Halide::Type storage_type(const Halide::Type &t) {
    if (t != Halide::Float(32) && t != Halide::Float(16) && t != Halide::BFloat(16)) {
        std::ostringstream name;
        name << t;
        throw Halide::CompileError("posattn: dtype " + name.str() + "; expected float32, float16 or bfloat16");
    }
    return t;
}

// A param naming a storage type, e.g. attention's out_dtype.
inline Halide::Type storage_type(const std::string &name) {
    const auto &types = Halide::Internal::get_halide_type_enum_map();
    auto found = types.find(name);
    if (found == types.end()) throw Halide::CompileError("posattn: dtype '" + name + "'; expected float32, float16 or bfloat16");
    return storage_type(found->second);
}

// e in float32 (e itself where it is).
inline Halide::Expr widened(const Halide::Expr &e) { return e.type() == Halide::Float(32) ? e : Halide::cast<float>(e); }

// f's values in float32: f itself where they are, else an (inlined) cast of them.
inline Halide::Func widened(const Halide::Func &f) {
    if (f.type() == Halide::Float(32)) return f;
    Halide::Func wide(f.name() + "_f32");
    std::vector<Halide::Var> args(f.dimensions());  // named, for schedules that take wide's args()
    wide(args) = Halide::cast<float>(f(args));
    return wide;
}

}  // namespace posattn
