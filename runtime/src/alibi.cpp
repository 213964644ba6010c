// ALiBi: head slopes in float64 (contract §7) and the bias kernel.
#include <cmath>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

std::vector<double> alibi_slopes(int64_t heads) {
    Checker check("alibi_slopes");
    if (heads < 1 || heads > (int64_t(1) << 24))
        check.fail("argument 'heads' is " + std::to_string(heads) + "; expected 1 <= heads <= 2^24");
    // Power of two n: m_h = (2^(−8/n))^(h+1). Otherwise, c = 2^⌊log2 n⌋: slopes(c), then every other
    // slope of slopes(2c) (the odd powers of 2^(−4/c)) until n.
    auto powers = [](int64_t n, int64_t count, int64_t step) {
        std::vector<double> s;
        for (int64_t k = 1; int64_t(s.size()) < count; k += step) s.push_back(std::exp2(-8.0 * double(k) / double(n)));
        return s;
    };
    int64_t c = 1;
    while (c * 2 <= heads) c *= 2;
    std::vector<double> slopes = powers(c, c, 1), extra = powers(2 * c, heads - c, 2);
    slopes.insert(slopes.end(), extra.begin(), extra.end());
    return slopes;
}

void alibi_bias(const Tensor &slopes, const Tensor &out, AlibiForm form, const CallOptions &call) {
    Checker check("alibi_bias");
    check.tensor(slopes, "slopes", slopes.dtype == DType::float32 ? DType::float32 : DType::float64, {1});
    check.host_or_device(out, "out", DType::float32, {3}, call);
    check.dim(out, "out", 0, slopes.shape[0], "H, the number of slopes");
    check.output(out, "out");
    check.disjoint(out, "out", slopes, "slopes");
    std::vector<double> m = check.real_vector(slopes, "slopes", slopes.shape[0], "H");
    if (detail::nothing_to_compute(out, "posattn_alibi_bias_f32", call)) return;
    HalideView slope_view(Tensor{m.data(), DType::float64, {int64_t(m.size())}, {}}, false), out_view(out, true);
    KernelCall kernel("posattn_alibi_bias_f32", call);
    kernel.arg("slopes", slope_view).arg("form", int32_t(form)).arg("out", out_view);
    kernel.run();
    out_view.finish();
}

}  // namespace posattn
