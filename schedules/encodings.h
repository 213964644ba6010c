// Schedules of the encoding generators, per target family.
#pragma once

#include "arm/encodings.h"
#include "gpu/encodings.h"
#include "params.h"
#include "target_family.h"
#include "x86/encodings.h"

namespace posattn {

// out(c, s, b): an elementwise encoding over channels c, reading the per-channel tables
// column_tables(c) or (c, row); each of `paths`, the conditions under which it reads the
// two-dimensional ones in one way or another (trig.h PositionSplit::paths), gets a loop nest of its own.
// `rows_in_own_order`: out's rows (trig.h OrderedRows) are not sorted by position where the call
// runs on a CPU (the x + PE forms; runtime/src/encodings.cpp), so they read the (c, row) tables at random.
inline void schedule_encoding(const Halide::Target &target, const std::string &params, Halide::Func out,
                              const std::vector<Halide::Func> &column_tables = {},
                              const std::vector<Halide::Expr> &paths = {}, bool rows_in_own_order = false) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        cpu::schedule_encoding(out, column_tables, paths, rows_in_own_order, parse_schedule_params(params, x86::encoding_defaults()));
        break;
    case TargetFamily::arm:
        cpu::schedule_encoding(out, column_tables, paths, rows_in_own_order, parse_schedule_params(params, arm::encoding_defaults()));
        break;
    case TargetFamily::gpu:
        gpu::schedule_encoding(out, column_tables, paths, parse_schedule_params(params, gpu::encoding_defaults()));
        break;
    }
}

// out(i, m, s, b): an encoding over a pair view of the channels (pair i, member m), whose
// members come from pairs(i, n) (n: the row's place in the order the rows run), built from the
// tables column_tables, as schedule_encoding.
// `layouts`: conditions under which the view's strides are constants (one per channel layout).
inline void schedule_pair_encoding(const Halide::Target &target, const std::string &params, Halide::Func out,
                                   const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const std::vector<Halide::Expr> &paths,
                                   bool rows_in_own_order) {
    switch (target_family(target)) {
    case TargetFamily::x86:
        cpu::schedule_pair_encoding(out, column_tables, pairs, layouts, paths, rows_in_own_order, parse_schedule_params(params, x86::encoding_defaults()));
        break;
    case TargetFamily::arm:
        cpu::schedule_pair_encoding(out, column_tables, pairs, layouts, paths, rows_in_own_order, parse_schedule_params(params, arm::encoding_defaults()));
        break;
    case TargetFamily::gpu:
        gpu::schedule_pair_encoding(out, column_tables, pairs, layouts, paths, parse_schedule_params(params, gpu::encoding_defaults()));
        break;
    }
}

}  // namespace posattn
