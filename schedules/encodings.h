// Schedules of the encoding generators, per target family.
#pragma once

#include "params.h"
#include "target_family.h"
#include "x86/encodings.h"

namespace posattn {

inline void schedule_encoding(const Halide::Target &target, const std::string &params, Halide::Func out,
                              const std::vector<Halide::Func> &column_tables = {}) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        x86::schedule_encoding(out, column_tables, parse_schedule_params<x86::EncodingParams>(params));
        break;
    }
}

}  // namespace posattn
