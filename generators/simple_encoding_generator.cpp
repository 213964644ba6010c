// The simple absolute encodings of contract §3, one `kind` per compiled instance, as a table
// PE[b, s, c] or fused with an input: out = x + PE(positions).
//   integer:    PE = p on every channel.
//   normalized: PE = p · inv_length[b], where the runtime passes 1/(L−1) ('minus_one', 0 for
//               L = 1) or 1/L ('length') per sequence.
//   binary:     PE = bit c of p (bit d−1−c with msb_first), as {0, 1} or, signed, {−1, +1}.
//               The runtime checks 0 ≤ p < 2^d first.
//   sin_only:   PE = sin(p · base^(−c/d)): d distinct frequencies, no cosine partner. The
//               runtime passes each channel's turns per position, frac(base^(−c/d) / 2π), as a
//               0.64 fixed-point fraction (trig.h fixed_point_turn).
//               Where the runtime splits the positions (trig.h PositionSplit), the sine is the
//               angle sum of a row of each of two tables of (sin, cos), evaluated that way, and
//               the rows run in the runtime's order, each with its position's parts (trig.h
//               OrderedRows): sin_only reads those instead of the positions.
#include <optional>

#include "Halide.h"
#include "storage.h"
#include "schedules/encodings.h"
#include "schedules/gpu/vulkan_modes.h"
#include "trig.h"

namespace posattn {

using namespace Halide;

class SimpleEncoding : public Generator<SimpleEncoding> {
public:
    GeneratorParam<std::string> kind{"kind", "integer"};  // integer | normalized | binary | sin_only
    GeneratorParam<bool> fused{"fused", false};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h
    GeneratorParam<bool> row_tiles{"row_tiles", false};  // schedules/encodings.h (sin_only's x + PE form)
    GeneratorParam<Type> dtype{"dtype", Float(32)};  // of x and out (storage.h)

    // Added by configure() for the kinds and forms that take them:
    Input<Buffer<int32_t, 2>> *positions = nullptr;    // [B, S], all but sin_only
    Input<Buffer<double, 1>> *inv_length = nullptr;    // normalized: [B]
    Input<bool> *signed_bits = nullptr, *msb_first = nullptr;  // binary
    Input<Buffer<int32_t, 2>> *turns = nullptr;        // sin_only: [2, d]
    Input<int32_t> *low_bits = nullptr, *high_first = nullptr, *high_rows = nullptr, *fine_bits = nullptr;  // sin_only: PositionSplit
    Input<Buffer<int32_t, 2>> *rows = nullptr;         // sin_only: (s, b, high, low) per row, trig.h OrderedRows
    Input<Buffer<>> *x = nullptr;                      // [B, S, D], fused form only
    Output<Buffer<void, 3>> out{"out"};                // [B, S, D]

    void configure() {
        out.set_type(storage_type(dtype));
        if (kind == "normalized") {
            inv_length = add_input<Buffer<double, 1>>("inv_length");
        } else if (kind == "binary") {
            signed_bits = add_input<bool>("signed_bits");
            msb_first = add_input<bool>("msb_first");
        } else if (kind == "sin_only") {
            turns = add_input<Buffer<int32_t, 2>>("turns");
            rows = add_input<Buffer<int32_t, 2>>("rows");
            low_bits = add_input<int32_t>("low_bits");
            high_first = add_input<int32_t>("high_first");
            high_rows = add_input<int32_t>("high_rows");
            fine_bits = add_input<int32_t>("fine_bits");
        } else if (kind != "integer") {
            throw CompileError("simple_encoding: unknown kind '" + std::string(kind) +
                               "'; expected integer, normalized, binary or sin_only");
        }
        if (kind != "sin_only") positions = add_input<Buffer<int32_t, 2>>("positions");
        if (fused) x = add_input<Buffer<>>("x", dtype, 3);
    }

    void generate() {
        // The row written, (s, b): out's own, or for sin_only the n-th of the runtime's order of
        // rows (trig.h OrderedRows), so that rows reading the same table rows run in turn.
        std::optional<OrderedRows> ordered;
        if (kind == "sin_only") ordered.emplace(*rows, out.dim(1).extent(), out.dim(2).extent());
        Expr d = out.dim(0).extent();
        auto value_of_row = [&](Expr n) {
            Expr row_s = ordered ? ordered->s_of(n) : s, row_b = ordered ? ordered->b_of(n) : b;
            Expr p = ordered ? split().position(ordered->high_of(n), ordered->low_of(n)) : (*positions)(row_s, row_b);
            Expr pe;
            if (kind == "integer") {
                pe = cast<float>(p);
            } else if (kind == "normalized") {
                pe = cast<float>(cast<double>(p) * (*inv_length)(row_b));
            } else if (kind == "binary") {
                // p < 2^31, so bits 31 and up are 0 (and shifting by them would be undefined).
                Expr bit = select(*msb_first, d - 1 - c, c);
                Expr value = select(bit < 31, (p >> clamp(bit, 0, 30)) & 1, 0);
                pe = select(*signed_bits, cast<float>(2 * value - 1), cast<float>(value));
            } else {
                auto turn = [&](Expr position) { return fixed_point_turn(position, (*turns)(c, 0), (*turns)(c, 1)); };
                auto sin_cos = [&](Expr position) { return sin_cos_of_turns(turn(position)); };
                Expr from_tables = split().from_tables(tables, c, row, ordered->high_of(n), ordered->low_of(n), sin_cos)[0];
                pe = select(split().uses_tables(), from_tables, sin_of_turns(turn(p)));
            }
            return cast(dtype, fused ? widened((*x)(c, row_s, row_b)) + pe : pe);
        };
        if (ordered) {
            ordered->write(out, {c}, value_of_row, get_target().has_gpu_feature());
            OrderedRows::constrain(*rows);
            low_bits->set_estimate(6);
            high_first->set_estimate(0);
            high_rows->set_estimate(64);
            fine_bits->set_estimate(0);
            turns->set_estimates({{0, 1024}, {0, 2}});
        } else {
            out(c, s, b) = value_of_row(Expr());
            positions->set_estimates({{0, 4096}, {0, 8}});
        }
        if (kind == "normalized") inv_length->set_estimates({{0, 8}});
        if (kind == "binary") {
            signed_bits->set_estimate(false);
            msb_first->set_estimate(false);
        }

        if (fused) x->set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
        // The runtime passes every buffer with zero mins; that lets channel index math simplify.
        for (int dim = 0; dim < 3; dim++) out.dim(dim).set_min(0);
        out.set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        if (kind == "sin_only") schedule_encoding(get_target(), schedule_params, out, tables.all(), split().paths(), row_tiles);
        else schedule_encoding(get_target(), schedule_params, out, {}, {}, row_tiles);
        if (kind == "binary") {
            std::vector<Expr> flag_pairs;
            for (bool msb : {true, false})
                for (bool sign : {true, false}) flag_pairs.push_back(*msb_first == msb && *signed_bits == sign);
            gpu::specialize_modes_for_vulkan(get_target(), {out}, flag_pairs, /*exhaustive=*/true);
        }
    }

private:
    PositionSplit split() const { return {*low_bits, *high_first, *high_rows, *fine_bits}; }  // sin_only

    Var c{"c"}, s{"s"}, b{"b"}, row{"row"};
    PositionSplit::Tables tables;  // sin_only
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::SimpleEncoding, simple_encoding)
