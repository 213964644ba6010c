// torch's Linear: out = x·weightᵀ + bias (DeBERTa's projection of its relative embeddings).
#include <cstring>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

void linear(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias, const Tensor &out,
            const CallOptions &call) {
    Checker check("linear");
    const DType dtype = check.storage(x, "x");
    check.host_or_device(x, "x", dtype, {2}, call);
    check.host_or_device(weight, "weight", dtype, {2}, call);
    check.host_or_device(out, "out", dtype, {2}, call);
    int64_t N = x.shape[0], E = x.shape[1], O = weight.shape[0];
    check.dim(weight, "weight", 1, E, "E, x's dimension 1");
    check.dim(out, "out", 0, N, "N, x's dimension 0");
    check.dim(out, "out", 1, O, "O, weight's dimension 0");
    const size_t size = dtype_size(dtype);
    std::vector<uint8_t> zeros;  // (0.0 is all zero bits in every storage type)
    Tensor b = bias ? *bias : Tensor{nullptr, dtype, {O}, {}};
    if (bias) {
        check.host_or_device(*bias, "bias", dtype, {1}, call);
        check.dim(*bias, "bias", 0, O, "O, weight's dimension 0");
    } else {
        zeros.assign(size_t(O) * size, 0);
        b.data = zeros.data();
    }
    check.output(out, "out");
    for (auto [input, name] : {std::pair{&x, "x"}, {&weight, "weight"}, {&b, "bias"}}) {
        check.disjoint(out, "out", *input, name);
        check.finite_values(*input, name, call);
    }
    const std::string function = detail::typed("posattn_linear_f32", dtype);
    if (detail::nothing_to_compute(out, function, call)) return;
    if (E == 0) {  // an empty sum: the bias alone
        detail::HostImage bias_image(b, call, true), out_image(out, call, false);
        const Tensor &bias_values = bias_image.tensor();  // each row of out: the bias (a zero stride over rows)
        detail::copy_strided(Tensor{bias_values.data, dtype, {N, O}, {0, bias_values.stride(0)}}, out_image.tensor());
        return out_image.commit();
    }
    HalideView x_view(x, false), w_view(weight, false), b_view(b, false), out_view(out, true);
    KernelCall kernel(function, call);
    kernel.arg("x", x_view).arg("weight", w_view).arg("bias", b_view).arg("out", out_view);
    kernel.run();
    out_view.finish();
}

}  // namespace posattn
