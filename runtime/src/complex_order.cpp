// Complex-order embeddings (SPEC §4): frequency initialisations and the (real, imag) kernel.
#include <cmath>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

void complex_order_frequency_init(const Tensor &out, ComplexOrderInit kind) {
    Checker check("complex_order_frequency_init");
    check.tensor(out, "out", DType::float32, {2});
    check.output(out, "out");
    int64_t V = out.shape[0], d = out.shape[1];
    float *data = static_cast<float *>(out.data);
    for (int64_t w = 0; w < V; w++)
        for (int64_t c = 0; c < d; c++) {
            // translation (Models.py): the frozen sinusoid table's 10000^(−2⌊c/2⌋/d), the same for every
            // word; classification (Complex_order.py): w·10000^(−2c/d).
            double omega = kind == ComplexOrderInit::translation ? std::pow(10000.0, -double(2 * (c / 2)) / double(d))
                                                                 : double(w) * std::pow(10000.0, -double(2 * c) / double(d));
            data[w * out.stride(0) + c * out.stride(1)] = float(omega);
        }
}

void complex_order(const Tensor &token_ids, const Tensor &positions, const Tensor &amplitude, const Tensor &frequency,
                   const std::optional<Tensor> &phase, const Tensor &real, const Tensor &imag, const CallOptions &call) {
    Checker check("complex_order");
    check.tensor(token_ids, "token_ids", DType::int32, {1, 2});
    check.tensor(positions, "positions", DType::int32, {token_ids.shape.size()});
    check.leading_dims(positions, "positions", token_ids, "token_ids");
    check.host_or_device(amplitude, "amplitude", DType::float32, {2}, call);
    int64_t V = amplitude.shape[0], d = amplitude.shape[1];
    std::vector<std::pair<const Tensor *, const char *>> tables{{&frequency, "frequency"}};
    if (phase) tables.emplace_back(&*phase, "phase");
    for (auto [table, name] : tables) {
        check.host_or_device(*table, name, DType::float32, {2}, call);
        check.leading_dims(*table, name, amplitude, "amplitude");
    }
    for (auto [out, name] : {std::pair{&real, "real"}, {&imag, "imag"}}) {
        check.host_or_device(*out, name, DType::float32, {token_ids.shape.size() + 1}, call);
        check.leading_dims(*out, name, token_ids, "token_ids");
        check.dim(*out, name, token_ids.shape.size(), d, "d, amplitude's dimension 1");
        check.output(*out, name);
    }
    check.disjoint(imag, "imag", real, "real");
    for (const Tensor *out : {&real, &imag})
        for (auto [table, name] : tables) check.disjoint(*out, out == &real ? "real" : "imag", *table, name);
    for (const Tensor *out : {&real, &imag}) check.disjoint(*out, out == &real ? "real" : "imag", amplitude, "amplitude");
    const int32_t *ids = static_cast<const int32_t *>(token_ids.data);
    detail::for_each_offset<1>(token_ids.shape, {&token_ids}, [&](const std::array<int64_t, 1> &o) {
        if (ids[o[0]] < 0 || ids[o[0]] >= V)
            check.fail("argument 'token_ids' holds " + std::to_string(ids[o[0]]) + "; expected 0 <= token id < V = " +
                       std::to_string(V) + " (amplitude's dimension 0)");
    });
    if (real.numel() == 0) return;

    // [N] tokens as one batch [1, N].
    HalideView id_view(detail::positions_2d(token_ids, 1), false), pos_view(detail::positions_2d(positions, 1), false);
    HalideView amp_view(amplitude, false), freq_view(frequency, false);
    HalideView real_view(detail::with_leading_batch(real), true), imag_view(detail::with_leading_batch(imag), true);
    KernelCall kernel(phase ? "posattn_complex_order_phase_f32" : "posattn_complex_order_f32", call);
    kernel.arg("token_ids", id_view).arg("positions", pos_view).arg("amplitude", amp_view)
        .arg("frequency", freq_view).arg("out.0", real_view).arg("out.1", imag_view);
    std::optional<HalideView> phase_view;
    if (phase) kernel.arg("phase", phase_view.emplace(*phase, false));
    kernel.run();
    real_view.finish();
    imag_view.finish();
}

}  // namespace posattn
