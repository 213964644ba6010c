// Schedules of the encoding generators, per target family.
#pragma once

#include "arm/encodings.h"
#include "gpu/encodings.h"
#include "params.h"
#include "target_family.h"
#include "x86/encodings.h"

namespace posattn {

// Calls schedule(params) with `text` parsed over the CPU family's defaults: the tiled ones where
// the kernel is compiled with row_tiles (schedules/cpu/encodings.h TiledEncodingParams).
template <typename Schedule>
void with_cpu_encoding_params(const Halide::Target &target, const std::string &text, bool row_tiles, Schedule &&schedule) {
    const bool arm = target_family(target) == TargetFamily::arm, avx512 = isa_level(target) == "avx512";
    if (row_tiles) schedule(parse_schedule_params(target, text, arm ? arm::tiled_encoding_defaults() : x86::tiled_encoding_defaults(avx512)));
    else schedule(parse_schedule_params(target, text, arm ? arm::encoding_defaults() : x86::encoding_defaults()));
}

// out(c, s, b): an elementwise encoding over channels c, reading the per-channel tables
// column_tables(c) or (c, row); each of `paths`, the conditions under which it reads the
// two-dimensional ones in one way or another (trig.h PositionSplit::paths), gets a loop nest of its own.
// `row_tiles` (a generator param the manifest sets): on CPUs, each task's rows in tiles of rows ×
// channels (schedules/cpu/encodings.h parallel_rows), for the x + PE forms of the trig encodings,
// whose rows read the (c, row) tables at random (runtime/src/encodings.cpp sorts only the table
// forms' rows).
inline void schedule_encoding(const Halide::Target &target, const std::string &params, Halide::Func out,
                              const std::vector<Halide::Func> &column_tables = {},
                              const std::vector<Halide::Expr> &paths = {}, bool row_tiles = false) {
    const TargetFamily family = target_family(target);
    if (family == TargetFamily::gpu) {
        gpu::schedule_encoding(out, column_tables, paths, parse_schedule_params(target, params, gpu::encoding_defaults()));
        return;
    }
    with_cpu_encoding_params(target, params, row_tiles,
                             [&](const auto &p) { cpu::schedule_encoding(out, column_tables, paths, p); });
}

// out(i, m, s, b): an encoding over a pair view of the channels (pair i, member m), whose
// members come from pairs(i, n) (n: the row's place in the order the rows run), built from the
// tables column_tables, as schedule_encoding.
// `layouts`: conditions under which the view's strides are constants (one per channel layout).
inline void schedule_pair_encoding(const Halide::Target &target, const std::string &params, Halide::Func out,
                                   const std::vector<Halide::Func> &column_tables, Halide::Func pairs,
                                   const std::vector<Halide::Expr> &layouts, const std::vector<Halide::Expr> &paths,
                                   bool row_tiles) {
    const TargetFamily family = target_family(target);
    if (family == TargetFamily::gpu) {
        gpu::schedule_pair_encoding(out, column_tables, pairs, layouts, paths, parse_schedule_params(target, params, gpu::encoding_defaults()));
        return;
    }
    with_cpu_encoding_params(target, params, row_tiles, [&](const auto &p) {
        cpu::schedule_pair_encoding(out, column_tables, pairs, layouts, paths, p);
    });
}

}  // namespace posattn
