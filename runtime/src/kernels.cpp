// Typed entry points: validate → select → call. Nothing is written before validation passes.
#include <cmath>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

namespace {

// Positions as the kernels take them: [B, S]. A 1-D [N] table request becomes [1, N]; a 1-D
// [S] positions tensor of a fused call is broadcast over the batch with a zero stride.
Tensor positions_2d(const Tensor &positions, int64_t batch) {
    Tensor p = positions;
    if (p.shape.size() == 1) {
        p.strides = {0, positions.stride(0)};
        p.shape = {batch, positions.shape[0]};
    }
    return p;
}

Tensor with_leading_batch(const Tensor &t) {
    Tensor r = t;
    if (r.shape.size() == 2) {
        r.strides = {0, t.stride(0), t.stride(1)};
        r.shape.insert(r.shape.begin(), 1);
    }
    return r;
}

// The view of t's last channel (innermost axis) alone.
Tensor last_channel(const Tensor &t) {
    Tensor c = t;
    size_t axis = t.shape.size() - 1;
    c.strides = {};
    for (size_t d = 0; d < t.shape.size(); d++) c.strides.push_back(t.stride(d));
    c.data = static_cast<float *>(t.data) + (t.shape[axis] - 1) * t.stride(axis);
    c.shape[axis] = 1;
    return c;
}

bool empty(const Tensor &t) { return t.numel() == 0; }

// Shapes shared by the encodings: positions [B, S] or [S]/[N]; out [..., D].
void check_encoding(const Checker &check, const Tensor *x, const Tensor &positions, const Tensor &out) {
    check.tensor(positions, "positions", DType::int32, {1, 2});
    if (x) {
        check.tensor(*x, "x", DType::float32, {3});
        check.tensor(out, "out", DType::float32, {3});
        for (size_t a = 0; a < 3; a++) check.dim(out, "out", a, x->shape[a], "x's shape " + shape_string(x->shape));
        size_t r = positions.shape.size();
        check.dim(positions, "positions", r - 1, x->shape[1], "S, x's dimension 1");
        if (r == 2) check.dim(positions, "positions", 0, x->shape[0], "B, x's dimension 0");
    } else {
        check.tensor(out, "out", DType::float32, {positions.shape.size() + 1});
        for (size_t a = 0; a < positions.shape.size(); a++)
            check.dim(out, "out", a, positions.shape[a], "positions' shape " + shape_string(positions.shape));
    }
    check.output(out, "out");
}

void run_sinusoidal(const char *api, const Tensor *x, const Tensor &positions, const Tensor &out,
                    const SinusoidalOptions &o, const CallOptions &call) {
    Checker check(api);
    check_encoding(check, x, positions, out);
    check.finite(o.base, "base");
    if (o.base <= 0) check.fail("argument 'base' is " + std::to_string(o.base) + "; expected base > 0");
    if (empty(out)) return;

    int64_t D = out.shape.back(), pairs = D / 2;
    double exponent_step = o.convention == Convention::vaswani ? (pairs ? 1.0 / double(pairs) : 0.0)
                                                               : 1.0 / double(std::max<int64_t>(pairs - 1, 1));
    Tensor out3 = with_leading_batch(out);
    if (pairs) {
        HalideView pos_view(positions_2d(positions, out3.shape[0]), false), out_view(out3, true, o.layout);
        KernelCall kernel(x ? "posattn_sinusoidal_add_f32" : "posattn_sinusoidal_f32", call);
        kernel.arg("positions", pos_view).arg("base", o.base).arg("exponent_step", exponent_step).arg("out", out_view);
        std::optional<HalideView> x_view;
        if (x) kernel.arg("x", x_view.emplace(*x, false, o.layout));
        kernel.run();
        out_view.finish();
    }
    if (D % 2) {  // the last channel of an odd d is zero (SPEC §1): out = x there, or 0
        Tensor last = last_channel(out3);
        if (x) return detail::copy_strided(last_channel(*x), last);
        detail::for_each_offset<1>(last.shape, {&last}, [&](const std::array<int64_t, 1> &o) {
            static_cast<float *>(last.data)[o[0]] = 0.0f;
        });
    }
}

void run_learned(const char *api, const Tensor *x, const Tensor &table, const Tensor &positions, const Tensor &out,
                 int64_t offset, const CallOptions &call) {
    Checker check(api);
    check_encoding(check, x, positions, out);
    check.tensor(table, "table", DType::float32, {2});
    check.dim(out, "out", out.shape.size() - 1, table.shape[1], "D, table's dimension 1");
    int64_t V = table.shape[0];
    if (offset < INT32_MIN || offset > INT32_MAX) check.fail("argument 'offset' is " + std::to_string(offset) + "; expected a 32-bit value");
    // Every row index positions + offset must lie in the table: checked before any work.
    const int32_t *p = static_cast<const int32_t *>(positions.data);
    detail::for_each_offset<1>(positions.shape, {&positions}, [&](const std::array<int64_t, 1> &o) {
        int64_t row = int64_t(p[o[0]]) + offset;
        if (row < 0 || row >= V)
            check.fail("argument 'positions' holds " + std::to_string(p[o[0]]) + ", and with offset " +
                       std::to_string(offset) + " that is row " + std::to_string(row) + " of a table with " +
                       std::to_string(V) + " rows; expected 0 <= position + offset < " + std::to_string(V));
    });
    if (empty(out)) return;

    Tensor out3 = with_leading_batch(out);
    HalideView table_view(table, false), pos_view(positions_2d(positions, out3.shape[0]), false), out_view(out3, true);
    KernelCall kernel(x ? "posattn_learned_add_f32" : "posattn_learned_f32", call);
    kernel.arg("table", table_view).arg("positions", pos_view).arg("offset", int32_t(offset)).arg("out", out_view);
    std::optional<HalideView> x_view;
    if (x) kernel.arg("x", x_view.emplace(*x, false));
    kernel.run();
    out_view.finish();
}

// Rejects NaN and ±Inf. Rows are scanned by a branch-free loop on the exponent bits (which the
// compiler vectorizes), so the check costs a fraction of one pass over memory.
void check_finite_values(const Checker &check, const Tensor &t, const char *name) {
    if (t.numel() == 0) return;
    Tensor rows = t;  // every dim but the innermost
    rows.shape.pop_back();
    rows.strides = {};
    for (size_t d = 0; d + 1 < t.shape.size(); d++) rows.strides.push_back(t.stride(d));
    const int64_t n = t.shape.back(), step = t.stride(t.shape.size() - 1);
    const uint32_t *bits = static_cast<const uint32_t *>(t.data);
    detail::for_each_offset<1>(rows.shape, {&rows}, [&](const std::array<int64_t, 1> &o) {
        uint32_t non_finite = 0;
        for (int64_t e = 0; e < n; e++) non_finite |= (bits[o[0] + e * step] & 0x7f800000u) == 0x7f800000u;
        if (non_finite)
            check.fail(std::string("argument '") + name + "' contains NaN or Inf; expected finite values");
    });
}

}  // namespace

void sinusoidal(const Tensor &positions, const Tensor &out, const SinusoidalOptions &options, const CallOptions &call) {
    run_sinusoidal("sinusoidal", nullptr, positions, out, options, call);
}

void sinusoidal_add(const Tensor &x, const Tensor &positions, const Tensor &out, const SinusoidalOptions &options,
                    const CallOptions &call) {
    run_sinusoidal("sinusoidal_add", &x, positions, out, options, call);
}

void learned(const Tensor &table, const Tensor &positions, const Tensor &out, int64_t offset, const CallOptions &call) {
    run_learned("learned", nullptr, table, positions, out, offset, call);
}

void learned_add(const Tensor &x, const Tensor &table, const Tensor &positions, const Tensor &out, int64_t offset,
                 const CallOptions &call) {
    run_learned("learned_add", &x, table, positions, out, offset, call);
}

void attention(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &out, const AttentionOptions &o,
               const CallOptions &call) {
    Checker check("attention");
    check.tensor(q, "q", DType::float32, {4});
    check.tensor(k, "k", DType::float32, {4});
    check.tensor(v, "v", DType::float32, {4});
    check.tensor(out, "out", DType::float32, {4});
    int64_t B = q.shape[0], Hq = q.shape[1], Lq = q.shape[2], D = q.shape[3];
    int64_t Hkv = k.shape[1], Lk = k.shape[2], Dv = v.shape[3];
    check.dim(k, "k", 0, B, "B, q's dimension 0");
    check.dim(k, "k", 3, D, "D, q's dimension 3");
    check.dim(v, "v", 0, B, "B, q's dimension 0");
    check.dim(v, "v", 1, Hkv, "Hkv, k's dimension 1");
    check.dim(v, "v", 2, Lk, "Lk, k's dimension 2");
    if (Hkv == 0 ? Hq != 0 : Hq % Hkv != 0)
        check.fail("q has " + std::to_string(Hq) + " heads and k has " + std::to_string(Hkv) +
                   "; expected q's heads (dimension 1) to be a multiple of k's (GQA/MQA)");
    for (auto [axis, extent, what] : {std::tuple{0, B, "B"}, {1, Hq, "Hq"}, {2, Lq, "Lq"}, {3, Dv, "Dv, v's dimension 3"}})
        check.dim(out, "out", size_t(axis), extent, what);
    check.output(out, "out");
    if (D == 0) check.fail("argument 'q' has shape " + shape_string(q.shape) + "; expected D >= 1");
    double scale = o.scale.value_or(1.0 / std::sqrt(double(D)));
    check.finite(scale, "scale");
    // Key lengths as the kernel takes them: contiguous, Lk where not given.
    std::vector<int32_t> lengths(static_cast<size_t>(B), static_cast<int32_t>(Lk));
    if (o.key_lengths) {
        const Tensor &given = *o.key_lengths;
        check.tensor(given, "key_lengths", DType::int32, {1});
        check.dim(given, "key_lengths", 0, B, "B, q's dimension 0");
        for (int64_t b = 0; b < B; b++) {
            int32_t n = static_cast<const int32_t *>(given.data)[b * given.stride(0)];
            if (n < 0 || n > Lk)
                check.fail("argument 'key_lengths' holds " + std::to_string(n) + " at batch " + std::to_string(b) +
                           "; expected 0 <= key_lengths[b] <= Lk = " + std::to_string(Lk));
            lengths[size_t(b)] = n;
        }
    }
    check_finite_values(check, q, "q");
    check_finite_values(check, k, "k");
    check_finite_values(check, v, "v");
    if (empty(out)) return;

    if (Lk == 0) {  // no key at all: every row is fully masked, so exactly zero (SPEC §0)
        float *data = static_cast<float *>(out.data);
        detail::for_each_offset<1>(out.shape, {&out}, [&](const std::array<int64_t, 1> &o) { data[o[0]] = 0.0f; });
        return;
    }
    HalideView q_view(q, false), k_view(k, false), v_view(v, false), out_view(out, true);
    HalideView len_view(Tensor{lengths.data(), DType::int32, {B}, {}}, false);
    KernelCall kernel("posattn_attn_plain_f32", call);
    kernel.arg("q", q_view).arg("k", k_view).arg("v", v_view).arg("key_lengths", len_view)
        .arg("scale", float(scale)).arg("causal", o.causal).arg("out", out_view);
    kernel.run();
    out_view.finish();
}

}  // namespace posattn
