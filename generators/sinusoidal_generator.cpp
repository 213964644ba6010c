// Sinusoidal absolute encoding (contract §1), as a table PE[b, s, :] = PE(positions[b, s]) or fused
// with an input: out = x + PE(positions).
//   ω_i = base^(−i·exponent_step), i = 0 … d/2−1, exponent_step = 2/d' ('vaswani') or
//   1/max(d'/2−1, 1) ('t2t'), d' = d rounded down to even, computed by the runtime in float64.
//   Pair i is (sin(pω_i), cos(pω_i)), from the turn p·ω_i/2π reduced in 32-bit lanes
//   (the turns input, ω_i/2π as a 0.64 fixed-point fraction: trig.h fixed_point_turn): no
//   float64 in the kernel, which many mobile GPUs lack.
// The channel axis arrives as a pair view out(i, m, s, b): pair i, member m (0 sine, 1 cosine).
// The layout is only strides: interleaved puts pair i at channels (2i, 2i+1) (i stride 2, m
// stride 1), half at (i, d'/2+i) (i stride 1, m stride d'/2). So both layouts compute one sine
// and cosine per pair. The zero last column of an odd d is the runtime's (contract §1).
// Where the runtime splits the positions (trig.h PositionSplit), a pair is the angle sum of a row
// of each of two tables, themselves evaluated as above. Rows run in the runtime's order, each
// with its position's parts (trig.h OrderedRows); the positions themselves are the runtime's.
#include "Halide.h"
#include "storage.h"
#include "schedules/encodings.h"
#include "trig.h"

namespace posattn {

using namespace Halide;

class Sinusoidal : public Generator<Sinusoidal> {
public:
    GeneratorParam<bool> fused{"fused", false};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h
    GeneratorParam<bool> row_tiles{"row_tiles", false};  // schedules/encodings.h (the x + PE form)
    GeneratorParam<Type> dtype{"dtype", Float(32)};  // of x and out (storage.h)

    Input<Buffer<int32_t, 2>> rows{"rows"};  // (s, b, high, low) of each row, in the order to compute them: trig.h OrderedRows
    Input<Buffer<int32_t, 2>> turns{"turns"};  // ω_i/2π, [2, d'/2]: trig.h fixed_point_turn
    Input<int32_t> low_bits{"low_bits"}, high_first{"high_first"}, high_rows{"high_rows"}, fine_bits{"fine_bits"};  // PositionSplit
    Input<Buffer<>> *x = nullptr;         // pair view of [B, S, D] (rank 4), fused form only
    Output<Buffer<void, 4>> out{"out"};   // pair view of [B, S, D]

    void configure() {
        out.set_type(storage_type(dtype));
        if (fused) x = add_input<Buffer<>>("x", dtype, 4);
    }

    void generate() {
        // Clamped: the pairs are computed in whole vectors, past the last one.
        Expr last = turns.dim(0).max();
        pair_turns(i) = Tuple(turns(clamp(i, 0, last), 0), turns(clamp(i, 0, last), 1));
        auto sin_cos = [&](Expr position) { return sin_cos_of_turns(fixed_point_turn(position, pair_turns(i)[0], pair_turns(i)[1])); };
        // Row n of the order in which rows are computed, and its position's parts.
        OrderedRows ordered(rows, out.dim(2).extent(), out.dim(3).extent());
        Expr high = ordered.high_of(n), low = ordered.low_of(n);
        pair_sin_cos(i, n) = select(split().uses_tables(), split().from_tables(tables, i, h, high, low, sin_cos),
                                    sin_cos(split().position(high, low)));
        auto value_of_row = [&](Expr row) {
            Expr pe = select(m == 0, pair_sin_cos(i, row)[0], pair_sin_cos(i, row)[1]);
            return cast(dtype, fused ? widened((*x)(i, m, ordered.s_of(row), ordered.b_of(row))) + pe : pe);
        };
        ordered.write(out, {i, m}, value_of_row, get_target().has_gpu_feature());

        OrderedRows::constrain(rows);
        turns.set_estimates({{0, 512}, {0, 2}});
        low_bits.set_estimate(6);
        high_first.set_estimate(0);
        high_rows.set_estimate(64);
        fine_bits.set_estimate(0);
        for (OutputImageParam view : pair_views()) {
            view.dim(0).set_stride(Expr());  // 1 (half) or 2 (interleaved)
            view.dim(1).set_bounds(0, 2);
            // The runtime passes every buffer with zero mins; that lets index math simplify.
            for (int dim = 0; dim < 4; dim++) view.dim(dim).set_min(0);
            view.set_estimates({{0, 512}, {0, 2}, {0, 4096}, {0, 8}});
        }
    }

    void schedule() {
        if (using_autoscheduler()) return;
        // The two layouts the runtime makes, as conditions under which every stride is constant.
        Expr interleaved, half;
        for (OutputImageParam view : pair_views()) {
            Expr view_interleaved = view.dim(0).stride() == 2 && view.dim(1).stride() == 1;
            Expr view_half = view.dim(0).stride() == 1;
            interleaved = interleaved.defined() ? interleaved && view_interleaved : view_interleaved;
            half = half.defined() ? half && view_half : view_half;
        }
        std::vector<Func> column_tables = tables.all();
        column_tables.push_back(pair_turns);
        schedule_pair_encoding(get_target(), schedule_params, out, column_tables, pair_sin_cos, {interleaved, half}, split().paths(),
                               row_tiles);
    }

private:
    std::vector<OutputImageParam> pair_views() {
        std::vector<OutputImageParam> views{out};
        if (fused) views.push_back(*x);
        return views;
    }

    Var i{"i"}, m{"m"}, h{"h"}, n{"n"};
    Func pair_turns{"pair_turns"}, pair_sin_cos{"pair_sin_cos"};
    PositionSplit::Tables tables;

    PositionSplit split() const { return {low_bits, high_first, high_rows, fine_bits}; }
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::Sinusoidal, sinusoidal)
