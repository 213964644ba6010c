// One integration step of FLOATER's ODE (contract §5), dp/dt = h(t, p), for a batch of states:
//   h(t, p) = W2·[ReLU(W1·[p; t] + b1); t] + b2,   W1: [hidden, d+1], W2: [d, hidden+1].
// The method is a Butcher tableau (explicit Runge–Kutta), one compiled instance per method. The
// runtime calls it `substeps` times per position, sequentially in time; a step is parallel over
// the hidden units and state channels, and vectorized over them.
// The runtime passes the weights transposed (w1t = W1ᵀ, w2t = W2ᵀ) so that both products run
// along contiguous rows.
#include "Halide.h"
#include "schedules/floater.h"

namespace posattn {

using namespace Halide;

struct ButcherTableau {
    std::vector<std::vector<double>> a;  // stage s uses y + h·Σ_j a[s][j]·k_j, j < s
    std::vector<double> b, c;            // y' = y + h·Σ_s b[s]·k_s; stage s at t + c[s]·h
};

inline ButcherTableau tableau(const std::string &method) {
    if (method == "euler") return {{{}}, {1}, {0}};
    if (method == "midpoint") return {{{}, {0.5}}, {0, 1}, {0, 0.5}};
    if (method == "rk4") return {{{}, {0.5}, {0, 0.5}, {0, 0, 1}}, {1 / 6., 1 / 3., 1 / 3., 1 / 6.}, {0, 0.5, 0.5, 1}};
    // torchdiffeq's "rk4" (rk4_alt_step_func): Kutta's 3/8 rule.
    if (method == "rk4_38") return {{{}, {1 / 3.}, {-1 / 3., 1}, {1, -1, 1}}, {1 / 8., 3 / 8., 3 / 8., 1 / 8.}, {0, 1 / 3., 2 / 3., 1}};
    throw CompileError("floater_step: unknown method '" + method + "'; expected euler, midpoint, rk4 or rk4_38");
}

class FloaterStep : public Generator<FloaterStep> {
public:
    GeneratorParam<std::string> method{"method", "rk4_38"};
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h

    Input<Buffer<float, 2>> y{"y"};      // (c, n): channel c of state n
    Input<Buffer<float, 2>> w1t{"w1t"};  // (k, j): W1ᵀ, j = 0 … d (j = d multiplies t)
    Input<Buffer<float, 1>> b1{"b1"};    // [hidden]
    Input<Buffer<float, 2>> w2t{"w2t"};  // (c, k): W2ᵀ, k = 0 … hidden (k = hidden multiplies t)
    Input<Buffer<float, 1>> b2{"b2"};    // [d]
    Input<double> t{"t"};
    Input<double> step{"step"};
    Output<Buffer<float, 2>> y_next{"y_next"};

    void generate() {
        ButcherTableau tab = tableau(method);
        Expr d = y.dim(0).extent(), hidden = b1.dim(0).extent();
        Expr h = cast<float>(step);
        std::vector<Func> k;
        for (size_t s = 0; s < tab.b.size(); s++) {
            // Reads are clamped: register tiles of the schedule may run past the last state or row.
        Expr stage_state = y(c, clamp(n, 0, y.dim(1).extent() - 1));
            for (size_t j = 0; j < s; j++)
                if (tab.a[s][j] != 0) stage_state += h * float(tab.a[s][j]) * k[j](c, n);
            Func state("state_" + std::to_string(s));
            state(c, n) = stage_state;
            k.push_back(field(state, cast<float>(t + Expr(tab.c[s]) * step), d, hidden, std::to_string(s)));
        }
        Expr sum = 0.0f;
        for (size_t s = 0; s < k.size(); s++) sum += float(tab.b[s]) * k[s](c, n);
        y_next(c, n) = y(c, n) + h * sum;

        y.set_estimates({{0, 512}, {0, 6}});
        w1t.set_estimates({{0, 512}, {0, 513}});
        b1.set_estimates({{0, 512}});
        w2t.set_estimates({{0, 512}, {0, 513}});
        b2.set_estimates({{0, 512}});
        t.set_estimate(0.0);
        step.set_estimate(0.002);
        y_next.set_estimates({{0, 512}, {0, 6}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        schedule_floater_step(get_target(), schedule_params, y_next, stages);
    }

private:
    // k(c, n) = h(time, state(·, n))_c, as its two products (recorded for the schedule).
    Func field(Func state, Expr time, Expr d, Expr hidden, const std::string &tag) {
        Func pre("hidden_" + tag), k("k_" + tag);
        RDom j(0, d, "j"), kk(0, hidden, "kk");
        Expr unit = clamp(u, 0, hidden - 1), channel = clamp(c, 0, d - 1);
        pre(u, n) = w1t(unit, d) * time + b1(unit);
        pre(u, n) += w1t(unit, j) * state(j, n);
        k(c, n) = w2t(channel, hidden) * time + b2(channel);
        k(c, n) += w2t(channel, kk) * max(pre(kk, n), 0.0f);
        stages.push_back({state, pre, k});
        return k;
    }

    Var c{"c"}, u{"u"}, n{"n"};
    std::vector<FloaterStage> stages;
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::FloaterStep, floater_step)
