// The simple absolute encodings of SPEC §3, one `kind` per compiled instance, as a table
// PE[b, s, c] or fused with an input: out = x + PE(positions).
//   integer:    PE = p on every channel.
//   normalized: PE = p · inv_length[b], where the runtime passes 1/(L−1) ('minus_one', 0 for
//               L = 1) or 1/L ('length') per sequence.
//   binary:     PE = bit c of p (bit d−1−c with msb_first), as {0, 1} or, signed, {−1, +1}.
//               The runtime checks 0 ≤ p < 2^d first.
//   sin_only:   PE = sin(p · base^(−c/d)): d distinct frequencies, no cosine partner.
#include "Halide.h"
#include "schedules/encodings.h"
#include "trig.h"

namespace posattn {

using namespace Halide;

class SimpleEncoding : public Generator<SimpleEncoding> {
public:
    GeneratorParam<std::string> kind{"kind", "integer"};  // integer | normalized | binary | sin_only
    GeneratorParam<bool> fused{"fused", false};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h

    Input<Buffer<int32_t, 2>> positions{"positions"};  // [B, S]
    // Added by configure() for the kinds and forms that take them:
    Input<Buffer<double, 1>> *inv_length = nullptr;    // normalized: [B]
    Input<bool> *signed_bits = nullptr, *msb_first = nullptr;  // binary
    Input<double> *base = nullptr;                     // sin_only
    Input<Buffer<float, 3>> *x = nullptr;              // [B, S, D], fused form only
    Output<Buffer<float, 3>> out{"out"};               // [B, S, D]

    void configure() {
        if (kind == "normalized") {
            inv_length = add_input<Buffer<double, 1>>("inv_length");
        } else if (kind == "binary") {
            signed_bits = add_input<bool>("signed_bits");
            msb_first = add_input<bool>("msb_first");
        } else if (kind == "sin_only") {
            base = add_input<double>("base");
        } else if (kind != "integer") {
            throw CompileError("simple_encoding: unknown kind '" + std::string(kind) +
                               "'; expected integer, normalized, binary or sin_only");
        }
        if (fused) x = add_input<Buffer<float, 3>>("x");
    }

    void generate() {
        Expr p = positions(s, b), d = out.dim(0).extent();
        Expr pe;
        if (kind == "integer") {
            pe = cast<float>(p);
        } else if (kind == "normalized") {
            pe = cast<float>(cast<double>(p) * (*inv_length)(b));
            inv_length->set_estimates({{0, 8}});
        } else if (kind == "binary") {
            // p < 2^31, so bits 31 and up are 0 (and shifting by them would be undefined).
            Expr bit = select(*msb_first, d - 1 - c, c);
            Expr value = select(bit < 31, (p >> clamp(bit, 0, 30)) & 1, 0);
            pe = select(*signed_bits, cast<float>(2 * value - 1), cast<float>(value));
            signed_bits->set_estimate(false);
            msb_first->set_estimate(false);
        } else {
            column_omega(c) = pow(*base, -cast<double>(c) / cast<double>(d));
            pe = sin_quarter_turns(cast<double>(p) * column_omega(c), 0);
            base->set_estimate(10000.0);
        }
        out(c, s, b) = fused ? (*x)(c, s, b) + pe : pe;

        positions.set_estimates({{0, 4096}, {0, 8}});
        if (fused) x->set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
        // The runtime passes every buffer with zero mins; that lets channel index math simplify.
        for (int dim = 0; dim < 3; dim++) out.dim(dim).set_min(0);
        out.set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        std::vector<Func> column_tables;
        if (column_omega.defined()) column_tables.push_back(column_omega);
        schedule_encoding(get_target(), schedule_params, out, column_tables);
    }

private:
    Var c{"c"}, s{"s"}, b{"b"};
    Func column_omega{"column_omega"};
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::SimpleEncoding, simple_encoding)
