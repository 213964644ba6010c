// Schedules of the encoding generators, per target family.
#pragma once

#include "arm/encodings.h"
#include "params.h"
#include "target_family.h"
#include "x86/encodings.h"

namespace posattn {

// The encoding schedule's parameters for a target: its family's defaults, overridden by `text`.
inline cpu::EncodingParams encoding_params(const Halide::Target &target, const std::string &text) {
    switch (target_family(target)) {
    case TargetFamily::x86: return parse_schedule_params(text, x86::encoding_defaults());
    case TargetFamily::arm: return parse_schedule_params(text, arm::encoding_defaults());
    }
    return {};
}

// out(c, s, b): an elementwise encoding over channels c, reading the per-channel tables
// column_tables(c).
inline void schedule_encoding(const Halide::Target &target, const std::string &params, Halide::Func out,
                              const std::vector<Halide::Func> &column_tables = {}) {
    cpu::schedule_encoding(out, column_tables, encoding_params(target, params));
}

// out(i, m, s, b): an encoding over a pair view of the channels (pair i, member m), whose
// members come from pairs(i, s, b), built from the per-pair table column(i). `layouts`: conditions
// under which the view's strides are constants (one per channel layout).
inline void schedule_pair_encoding(const Halide::Target &target, const std::string &params, Halide::Func out,
                                   Halide::Func column, Halide::Func pairs, const std::vector<Halide::Expr> &layouts) {
    cpu::schedule_pair_encoding(out, column, pairs, layouts, encoding_params(target, params));
}

}  // namespace posattn
