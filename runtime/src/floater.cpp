// FLOATER (contract §5): the position encodings p_n = p(n·dt) of dp/dt = h(t, p), p(0) = p0, integrated
// with `substeps` explicit Runge–Kutta steps per position. Each step is one kernel call over the
// whole batch of initial values; the steps run in order.

#include <tuple>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

namespace {

// A row-major float32 matrix [rows, cols] holding the transpose of m [cols, rows].
std::vector<float> transposed(const Tensor &m) {
    int64_t rows = m.shape[1], cols = m.shape[0];
    std::vector<float> t(size_t(rows * cols));
    const float *data = static_cast<const float *>(m.data);
    for (int64_t i = 0; i < cols; i++)
        for (int64_t j = 0; j < rows; j++) t[size_t(j * cols + i)] = data[i * m.stride(0) + j * m.stride(1)];
    return t;
}

const char *step_kernel(FloaterMethod method) {
    switch (method) {
    case FloaterMethod::rk4_38: return "posattn_floater_step_rk4_38_f32";
    case FloaterMethod::rk4: return "posattn_floater_step_rk4_f32";
    case FloaterMethod::midpoint: return "posattn_floater_step_midpoint_f32";
    case FloaterMethod::euler: return "posattn_floater_step_euler_f32";
    }
    return "";
}

}  // namespace

void floater(const Tensor &p0, const Tensor &W1, const Tensor &b1, const Tensor &W2, const Tensor &b2, const Tensor &out,
             const FloaterOptions &o, const CallOptions &call) {
    Checker check("floater");
    check.host_or_device(p0, "p0", DType::float32, {1, 2}, call);
    bool batched = p0.shape.size() == 2;
    int64_t batch = batched ? p0.shape[0] : 1, d = p0.shape.back();
    check.host_or_device(W1, "W1", DType::float32, {2}, call);
    int64_t hidden = W1.shape[0];
    if (hidden < 1) check.fail("argument 'W1' has shape " + shape_string(W1.shape) + "; expected at least one hidden unit");
    check.dim(W1, "W1", 1, d + 1, "d + 1: the state and the time");
    check.host_or_device(b1, "b1", DType::float32, {1}, call);
    check.dim(b1, "b1", 0, hidden, "hidden, W1's dimension 0");
    check.host_or_device(W2, "W2", DType::float32, {2}, call);
    check.dim(W2, "W2", 0, d, "d, p0's last dimension");
    check.dim(W2, "W2", 1, hidden + 1, "hidden + 1: the hidden units and the time");
    check.host_or_device(b2, "b2", DType::float32, {1}, call);
    check.dim(b2, "b2", 0, d, "d, p0's last dimension");
    check.host_or_device(out, "out", DType::float32, {p0.shape.size() + 1}, call);
    if (batched) check.dim(out, "out", 0, batch, "the batch of initial values, p0's dimension 0");
    check.dim(out, "out", out.shape.size() - 1, d, "d, p0's last dimension");
    check.output(out, "out");
    check.finite(o.dt, "dt");
    if (!(o.dt > 0)) check.fail("argument 'dt' is " + std::to_string(o.dt) + "; expected dt > 0");
    // (each substep is a kernel call: a bound keeps a call from running for hours)
    if (o.substeps < 1 || o.substeps > 65536)
        check.fail("argument 'substeps' is " + std::to_string(o.substeps) + "; expected 1 <= substeps <= 65536");
    // The runtime reads p0, W1 and W2 itself (device buffers through host images, read once for
    // the scan and the work) and writes out.
    detail::HostImage p0_image(p0, call, true), w1_image(W1, call, true), w2_image(W2, call, true);
    for (auto [t, scanned, name] : {std::tuple{&p0, &p0_image.tensor(), "p0"}, {&W1, &w1_image.tensor(), "W1"},
                                    {&b1, &b1, "b1"}, {&W2, &w2_image.tensor(), "W2"}, {&b2, &b2, "b2"}}) {
        check.finite_values(*scanned, name, call);
        check.disjoint(out, "out", *t, name);
    }
    int64_t positions = out.shape[out.shape.size() - 2];
    if (detail::nothing_to_compute(out, step_kernel(o.method), call)) return;

    // The rows are made in a scratch [batch, N, d], copied to out once every step has succeeded (a
    // failed call leaves out as it was); the state is a contiguous [batch, d] pair of buffers.
    std::vector<float> rows(size_t(batch * positions * d));
    const Tensor out3{rows.data(), DType::float32, {batch, positions, d}, {}};
    std::vector<float> state(size_t(batch * d)), next(state.size());
    const float *initial = static_cast<const float *>(p0_image.tensor().data);
    for (int64_t n = 0; n < batch; n++)
        for (int64_t c = 0; c < d; c++)
            state[size_t(n * d + c)] = initial[(batched ? n * p0.stride(0) : 0) + c * p0.stride(p0.shape.size() - 1)];
    auto emit = [&](int64_t position) {
        float *data = static_cast<float *>(out3.data);
        for (int64_t n = 0; n < batch; n++)
            for (int64_t c = 0; c < d; c++)
                data[n * out3.stride(0) + position * out3.stride(1) + c * out3.stride(2)] = state[size_t(n * d + c)];
    };
    emit(0);
    std::vector<float> w1t = transposed(w1_image.tensor()), w2t = transposed(w2_image.tensor());
    HalideView w1_view(Tensor{w1t.data(), DType::float32, {d + 1, hidden}, {}}, false);
    HalideView w2_view(Tensor{w2t.data(), DType::float32, {hidden + 1, d}, {}}, false);
    HalideView b1_view(b1, false), b2_view(b2, false);
    double h = o.dt / double(o.substeps);
    for (int64_t position = 1; position < positions; position++) {
        for (int64_t s = 0; s < o.substeps; s++) {
            HalideView y_view(Tensor{state.data(), DType::float32, {batch, d}, {}}, false);
            HalideView next_view(Tensor{next.data(), DType::float32, {batch, d}, {}}, true);
            KernelCall kernel(step_kernel(o.method), call);
            kernel.arg("y", y_view).arg("w1t", w1_view).arg("b1", b1_view).arg("w2t", w2_view).arg("b2", b2_view)
                .arg("t", double((position - 1) * o.substeps + s) * h).arg("step", h).arg("y_next", next_view);
            kernel.run();
            state.swap(next);
        }
        emit(position);
    }
    detail::HostImage out_image(out, call, false);
    detail::copy_strided(Tensor{rows.data(), DType::float32, out.shape, {}}, out_image.tensor());
    out_image.commit();
}

}  // namespace posattn
