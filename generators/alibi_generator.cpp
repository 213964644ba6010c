// ALiBi's bias (contract §7): out[h, r, j] for query row r at absolute position i = r + Lk − Lq and
// key j, head slope m_h:
//   form 0 'relative'      −m·(i − j)
//   form 1 'key_position'  +m·j      (fairseq / BLOOM; the softmax equals 'relative')
//   form 2 'symmetric'     −m·|i − j| (bidirectional)
// The product is formed in float64 and rounded once.
#include "Halide.h"
#include "alibi.h"
#include "schedules/encodings.h"
#include "schedules/gpu/vulkan_modes.h"

namespace posattn {

using namespace Halide;

class AlibiBias : public Generator<AlibiBias> {
public:
    GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h

    Input<Buffer<double, 1>> slopes{"slopes"};  // [H]
    Input<int32_t> form{"form"};
    Output<Buffer<float, 3>> out{"out"};        // [H, Lq, Lk]

    void generate() {
        Expr Lk = out.dim(0).extent(), Lq = out.dim(1).extent();
        out(j, r, h) = cast<float>(slopes(h) * cast<double>(alibi_offset(form, r + (Lk - Lq), j)));

        slopes.set_estimates({{0, 32}});
        form.set_estimate(0);
        for (int dim = 0; dim < 3; dim++) out.dim(dim).set_min(0);
        out.set_estimates({{0, 2048}, {0, 2048}, {0, 32}});
    }

    void schedule() {
        if (using_autoscheduler()) return;
        schedule_encoding(get_target(), schedule_params, out);
        gpu::specialize_modes_for_vulkan(get_target(), {out}, {form == 0, form == 1});
    }

private:
    Var j{"j"}, r{"r"}, h{"h"};
};

}  // namespace posattn

HALIDE_REGISTER_GENERATOR(posattn::AlibiBias, alibi_bias)
