// RoPE applied to q or k (contract §6): x [B, H, L, D] → out, in place or not.
// The rotated channels arrive as a pair view x(i, m, l, h, b) — pair i, member m — whose strides
// say the layout: 'gptj' pairs (2i, 2i+1), 'neox' pairs (i, r/2+i), r the rotary width. A
// `partial` instance (r < D) also copies channels r … D−1 through, x_pass → out_pass (never
// empty: an empty output breaks the autoschedulers' tail handling).
// The runtime turns the scaling (linear, ntk, dynamic, yarn, llama3, longrope) into inv_freq,
// passed in turns (rope.h rope_cos_sin), and attention_factor, which multiplies cos and sin.
#include "Halide.h"
#include "rope.h"
#include "schedules/rope.h"
#include "storage.h"

namespace posattn {

using namespace Halide;

class Rope : public Generator<Rope> {
public:
    GeneratorParam<bool> partial{"partial", false};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h
    GeneratorParam<Type> dtype{"dtype", Float(32)};  // of x and out (storage.h)

    Input<Buffer<void, 5>> x{"x"};                   // pair view of x[..., :r]
    Input<Buffer<int32_t, 2>> positions{"positions"};  // [B, L]
    Input<Buffer<int32_t, 2>> turns{"turns"};        // inv_freq/2π, [2, r/2]: trig.h fixed_point_turn
    Input<double> attention_factor{"attention_factor"};
    Output<Buffer<void, 5>> out{"out"};              // pair view of out[..., :r]
    Input<Buffer<>> *x_pass = nullptr;               // x[..., r:] (rank 4), partial only
    Output<Buffer<>> *out_pass = nullptr;            // out[..., r:] (rank 4), partial only

    void configure() {
        const Type stored = storage_type(dtype);
        x.set_type(stored);
        out.set_type(stored);
        if (!partial) return;
        x_pass = add_input<Buffer<>>("x_pass", stored, 4);
        out_pass = add_output<Buffer<>>("out_pass", stored, 4);
    }

    void generate() {
        cos_sin(i, l, b) = rope_cos_sin(positions(l, b), turns(i, 0), turns(i, 1), attention_factor);
        rotated(i, l, h, b) = rope_rotate(widened(x(i, 0, l, h, b)), widened(x(i, 1, l, h, b)), cos_sin(i, l, b));
        out(i, m, l, h, b) = cast(dtype, select(m == 0, rotated(i, l, h, b)[0], rotated(i, l, h, b)[1]));
        if (partial) (*out_pass)(c, l, h, b) = (*x_pass)(c, l, h, b);

        positions.set_estimates({{0, 2048}, {0, 1}});
        turns.set_estimates({{0, 32}, {0, 2}});
        attention_factor.set_estimate(1.0);
        for (OutputImageParam view : {OutputImageParam(x), OutputImageParam(out)}) {
            view.dim(0).set_stride(Expr());  // 1 (neox) or 2 (gptj)
            view.dim(1).set_bounds(0, 2);
            for (int dim = 0; dim < 5; dim++) view.dim(dim).set_min(0);
            view.set_estimates({{0, 32}, {0, 2}, {0, 2048}, {0, 32}, {0, 1}});
        }
        if (partial) {
            for (OutputImageParam view : {OutputImageParam(*x_pass), OutputImageParam(*out_pass)}) {
                for (int dim = 0; dim < 4; dim++) view.dim(dim).set_min(0);
                view.set_estimates({{0, 96}, {0, 2048}, {0, 32}, {0, 1}});
            }
        }
    }

    void schedule() {
        if (using_autoscheduler()) return;
        Expr gptj = x.dim(0).stride() == 2 && x.dim(1).stride() == 1 && out.dim(0).stride() == 2 &&
                    out.dim(1).stride() == 1;
        Expr neox = x.dim(0).stride() == 1 && out.dim(0).stride() == 1;
        schedule_rope(get_target(), schedule_params, out, partial ? Func(*out_pass) : Func(), rotated, cos_sin,
                      {gptj, neox});
    }

private:
    Var i{"i"}, m{"m"}, c{"c"}, l{"l"}, h{"h"}, b{"b"};
    Func cos_sin{"cos_sin"}, rotated{"rotated"};
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::Rope, rope)
