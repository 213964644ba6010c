// Schedules of the encoding generators, per target family.
#pragma once

#include "params.h"
#include "target_family.h"
#include "x86/encodings.h"

namespace posattn {

// pairs(i, s, b): (sine, cosine) of pair i; interleaved_pairs: when true, channels (2i, 2i+1) are pair i.
inline void schedule_encoding(const Halide::Target &target, const std::string &params, Halide::Func out,
                              const std::vector<Halide::Func> &column_tables = {},
                              Halide::Func pairs = Halide::Func(), Halide::Expr interleaved_pairs = Halide::Expr()) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        x86::schedule_encoding(out, column_tables, pairs, interleaved_pairs,
                               parse_schedule_params<x86::EncodingParams>(params));
        break;
    }
}

}  // namespace posattn
