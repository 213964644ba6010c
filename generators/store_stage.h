// How a kernel's output reaches memory. With the store stage (a kernel's `store_stage` generator
// param, x86 only) the values are computed a tile at a time and each tile is copied out by
// posattn_store_f32 (runtime/src/streaming_store.cpp), which writes outputs of at least a quarter
// of the last-level cache with non-temporal stores: Halide 21 cannot emit them, and without them
// every store first reads its line. A task then computes and stores in turn, so the stage pays
// only where the arithmetic is light (README, "The store stage"). Otherwise, and for the
// autoschedulers, the output is the values themselves.
#pragma once

#include "Halide.h"
#include "schedules/target_family.h"

namespace posattn {

// Defines `out` as `values`. Returns the Func its schedule computes per tile: through the store
// stage (then out.is_extern()), `values` read at coordinates clamped to the output, so that a
// tail tile (which Halide sizes in full for an extern stage) reads no input out of bounds; else
// `values` itself.
template <typename Output>
Halide::Func store_output(Output &out, Halide::Func values, const Halide::Target &target, bool staged) {
    using namespace Halide;
    std::vector<Var> at = values.args();
    if (!staged || target_family(target) != TargetFamily::x86) {
        out(at) = values(at);
        return values;
    }
    OutputImageParam whole = Func(out).output_buffer();
    std::vector<Expr> clamped{at[0]};  // (the innermost dim, vectorized, is never split)
    for (size_t d = 1; d < at.size(); d++)
        clamped.push_back(clamp(at[d], whole.dim(d).min(), whole.dim(d).max()));
    Func tile(values.name() + "_tile");
    tile(at) = values(clamped);
    // The stage takes the output's own name (Func(name) would make it unique): the output's
    // constraints, the algorithm's uses of its extents, and the stage's argument `whole` (the
    // output buffer, uncropped), all by name, then refer to it. This and the proxy below lean on
    // Halide 21's internals (Internal::Function, lookups by name): recheck them on an upgrade.
    std::vector<ExternFuncArgument> args{tile, whole.parameter()};
    Func stage{Internal::Function(Func(out).name())};
    stage.define_extern("posattn_store_f32", args, Float(32), at);
    // What the stage reads, as an expression (as copy_to_host's stage does): bounds inference then
    // sizes a tile per loop iteration, where a bounds query would size one for the whole output.
    stage.function().extern_definition_proxy_expr() = tile(at);
    out = stage;
    return tile;
}

}  // namespace posattn
