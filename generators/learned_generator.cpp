// Learned absolute encoding (contract §2): out[b, s, :] = table[positions[b, s] + offset, :], or fused
// with an input: out = x + table[positions + offset]. The runtime rejects any index outside the
// table before the kernel runs; the clamp below only tells bounds inference the table's extent.
#include "Halide.h"
#include "schedules/encodings.h"

namespace posattn {

using namespace Halide;

class Learned : public Generator<Learned> {
public:
    GeneratorParam<bool> fused{"fused", false};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h

    Input<Buffer<float, 2>> table{"table"};            // [V, D]
    Input<Buffer<int32_t, 2>> positions{"positions"};  // [B, S]
    Input<int32_t> offset{"offset"};
    Input<Buffer<float, 3>> *x = nullptr;  // [B, S, D], fused form only
    Output<Buffer<float, 3>> out{"out"};  // [B, S, D]

    void configure() {
        if (fused) x = add_input<Buffer<float, 3>>("x");
    }

    void generate() {
        Expr row = clamp(positions(s, b) + offset, 0, table.dim(1).extent() - 1);
        Expr pe = table(c, row);
        out(c, s, b) = fused ? (*x)(c, s, b) + pe : pe;

        table.set_estimates({{0, 1024}, {0, 8192}});
        positions.set_estimates({{0, 4096}, {0, 8}});
        offset.set_estimate(0);
        if (fused) x->set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
        // The runtime passes every buffer with zero mins; that lets channel index math simplify.
        for (int dim = 0; dim < 3; dim++) out.dim(dim).set_min(0);
        out.set_estimates({{0, 1024}, {0, 4096}, {0, 8}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        schedule_encoding(get_target(), schedule_params, out);
    }

private:
    Var c{"c"}, s{"s"}, b{"b"};
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::Learned, learned)
