// Learned absolute encoding (contract §2): out[b, s, :] = table[positions[b, s] + offset, :], or fused
// with an input: out = x + table[positions + offset]. The runtime rejects any index outside the
// table before the kernel runs; the clamp below only tells bounds inference the table's extent.
#include "Halide.h"
#include "schedules/encodings.h"
#include "storage.h"

namespace posattn {

using namespace Halide;

class Learned : public Generator<Learned> {
public:
    GeneratorParam<bool> fused{"fused", false};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h
    GeneratorParam<Type> dtype{"dtype", Float(32)};  // of table, x and out (storage.h)

    Input<Buffer<void, 2>> table{"table"};             // [V, D]
    Input<Buffer<int32_t, 2>> positions{"positions"};  // [B, S]
    Input<int32_t> offset{"offset"};
    Input<Buffer<>> *x = nullptr;         // [B, S, D], fused form only
    Output<Buffer<void, 3>> out{"out"};  // [B, S, D]

    void configure() {
        const Type stored = storage_type(dtype);
        table.set_type(stored);
        out.set_type(stored);
        if (fused) x = add_input<Buffer<>>("x", stored, 3);
    }

    void generate() {
        Expr row = clamp(positions(s, b) + offset, 0, table.dim(1).extent() - 1);
        Expr pe = table(c, row);
        // (A gather copies the stored value; x + table[·] is one float32 add, rounded on store.)
        out(c, s, b) = fused ? cast(dtype, widened((*x)(c, s, b)) + widened(pe)) : pe;

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
