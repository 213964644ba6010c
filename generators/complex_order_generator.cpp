// Complex-order embeddings (contract §4): f(w, p)_c = r_{w,c}·exp(i(ω_{w,c}·p + θ_{w,c})), returned as
// the pair (real, imag) = r·(cos, sin) of the angle, each [B, S, d]. Amplitude, frequency and the
// optional phase are word tables [V, d]; the public code has no phase (θ = 0, `with_phase=false`).
// Tokens run in the runtime's order, each with its word and position (trig.h OrderedRows): on CPUs
// sorted by word where the tables are large, which reads them in address order
// (runtime/src/complex_order.cpp).
// The runtime checks every token id before the kernel runs; the clamp only tells bounds
// inference the tables' extent.
#include "Halide.h"
#include "schedules/encodings.h"
#include "trig.h"

namespace posattn {

using namespace Halide;

class ComplexOrder : public Generator<ComplexOrder> {
public:
    GeneratorParam<bool> with_phase{"with_phase", false};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h

    Input<Buffer<int32_t, 2>> rows{"rows"};            // (s, b, word, position) of each token: trig.h OrderedRows
    Input<Buffer<float, 2>> amplitude{"amplitude"};    // [V, d]
    Input<Buffer<float, 2>> frequency{"frequency"};    // [V, d]
    Input<Buffer<float, 2>> *phase_table = nullptr;    // [V, d], with_phase only
    Output<Buffer<>> out{"out", {Float(32), Float(32)}, 3};  // (real, imag) [B, S, d]

    void configure() {
        if (with_phase) phase_table = add_input<Buffer<float, 2>>("phase");
    }

    void generate() {
        OutputImageParam real = Func(out).output_buffers()[0];  // (imag shares its mins and extents)
        OrderedRows tokens(rows, real.dim(1).extent(), real.dim(2).extent());
        auto value_of_row = [&](Expr n) {
            Expr word = clamp(tokens.value_of(0, n), 0, amplitude.dim(1).extent() - 1);
            Expr angle = cast<double>(frequency(c, word)) * cast<double>(tokens.value_of(1, n));
            if (with_phase) angle += cast<double>((*phase_table)(c, word));
            Expr r = amplitude(c, word);
            return Tuple(r * sin_quarter_turns(angle, 1, get_target()), r * sin_quarter_turns(angle, 0, get_target()));
        };
        tokens.write(out, {c}, value_of_row, get_target().has_gpu_feature());

        OrderedRows::constrain(rows);
        for (Input<Buffer<float, 2>> *table : {&amplitude, &frequency, phase_table})
            if (table) table->set_estimates({{0, 256}, {0, 30000}});
        for (int dim = 0; dim < 3; dim++) real.dim(dim).set_min(0);
        out.set_estimates({{0, 256}, {0, 512}, {0, 8}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        schedule_encoding(get_target(), schedule_params, out);
    }

private:
    Var c{"c"};
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::ComplexOrder, complex_order)
