// Fused attention: validate → select → call. Nothing is written before validation passes.
#include <algorithm>
#include <cmath>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

int64_t t5_bucket(int64_t rel, bool bidirectional, int64_t num_buckets, int64_t max_distance) {
    int64_t max_exact = (bidirectional ? num_buckets / 2 : num_buckets) / 2;
    if (max_exact < 1 || max_distance <= max_exact || rel == INT64_MIN)
        Checker("t5_bucket").fail("arguments num_buckets = " + std::to_string(num_buckets) + ", max_distance = " +
                                  std::to_string(max_distance) + ", rel = " + std::to_string(rel) +
                                  "; expected at least 4 buckets (2 one-directional), max_distance > num_buckets/4 "
                                  "(/2 one-directional) and rel > INT64_MIN");
    int64_t bucket = 0, n = rel < 0 ? -rel : 0;
    if (bidirectional) {
        num_buckets /= 2;
        bucket = rel > 0 ? num_buckets : 0;
        n = rel < 0 ? -rel : rel;
    }
    if (n < max_exact) return bucket + n;
    // float32 throughout, as torch: log(n / max_exact) / log(max_distance / max_exact)·(nb − max_exact).
    float ratio = float(n) / float(max_exact);
    float scaled = std::log(ratio) / float(std::log(double(max_distance) / double(max_exact))) * float(num_buckets - max_exact);
    return bucket + std::min(max_exact + int64_t(scaled), num_buckets - 1);
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
    for (auto [input, name] : {std::pair{&q, "q"}, {&k, "k"}, {&v, "v"}}) check.disjoint(out, "out", *input, name);
    if (D == 0) check.fail("argument 'q' has shape " + shape_string(q.shape) + "; expected D >= 1");
    double scale = o.scale.value_or(o.t5 ? 1.0 : 1.0 / std::sqrt(double(D)));
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
    // ALiBi slopes, as the kernel takes them: float32 [Hq], finite.
    std::vector<float> slopes;
    if (o.alibi)
        for (double m : check.real_vector(o.alibi->slopes, "alibi_slopes", Hq, "Hq, q's dimension 1")) slopes.push_back(float(m));
    if (int(bool(o.alibi)) + int(bool(o.t5)) + int(bool(o.rope)) > 1)
        check.fail("arguments 'alibi', 't5' and 'rope': more than one given; expected at most one position encoding");
    // RoPE: positions as [B, L] views (defaults: keys 0 … Lk−1, queries the last Lq of them) and
    // the frequencies of the rotated channels.
    std::vector<int32_t> default_positions;
    Tensor q_positions, k_positions;
    RopeFrequencies rope;
    if (o.rope) {
        for (int64_t j = 0; j < Lk; j++) default_positions.push_back(int32_t(j));
        auto positions = [&](const std::optional<Tensor> &given, const char *name, int64_t L, int64_t first,
                             const char *L_what) {
            return given ? check.positions(*given, name, B, L, L_what, "B, q's dimension 0")
                         : Tensor{default_positions.data() + first, DType::int32, {B, L}, {0, 1}};
        };
        if (Lk > INT32_MAX) check.fail("argument 'k' has Lk = " + std::to_string(Lk) + "; expected Lk <= 2^31-1 for default positions");
        q_positions = positions(o.rope->q_positions, "q_positions", Lq, std::max<int64_t>(Lk - Lq, 0), "Lq, q's dimension 2");
        k_positions = positions(o.rope->k_positions, "k_positions", Lk, 0, "Lk, k's dimension 2");
        if (!o.rope->q_positions && Lq > Lk)
            check.fail("argument 'q' has Lq = " + std::to_string(Lq) + " > Lk = " + std::to_string(Lk) +
                       "; expected explicit q_positions then (the default puts queries at the last Lq key positions)");
        int64_t seq_len = o.rope->seq_len ? o.rope->seq_len : detail::max_position_plus_one(k_positions);
        int64_t r = o.rope->rotary_dim ? o.rope->rotary_dim : D;
        if (r > D) check.fail("argument 'rotary_dim' is " + std::to_string(r) + "; expected rotary_dim <= D = " + std::to_string(D));
        rope = rope_frequencies(r, o.rope->base, o.rope->scaling, seq_len);
    }
    // T5: the bias of every key − query offset rel ∈ [−(Lk−1), Lq−1] per head, at index Lq − 1 − rel
    // (so that consecutive query rows read consecutive entries), padded by `pad` on both sides for
    // the rows and keys a tile computes past Lq and Lk.
    const int64_t pad = 4096;
    std::vector<float> t5_bias;
    int64_t t5_span = Lq + Lk - 1 + 2 * pad;
    if (o.t5) {
        const Tensor &table = o.t5->table;
        check.tensor(table, "t5_table", DType::float32, {2});
        check.dim(table, "t5_table", 1, Hq, "Hq, q's dimension 1");
        int64_t buckets = table.shape[0], max_exact = (o.t5->bidirectional ? buckets / 2 : buckets) / 2;
        if (max_exact < 1)
            check.fail("argument 't5_table' has " + std::to_string(buckets) + " buckets; expected at least " +
                       (o.t5->bidirectional ? "4 (bidirectional)" : "2"));
        if (o.t5->max_distance <= max_exact)
            check.fail("argument 't5_max_distance' is " + std::to_string(o.t5->max_distance) + "; expected more than " +
                       std::to_string(max_exact) + " (half the buckets of one direction)");
        check.finite_values(table, "t5_table");
        const float *values = static_cast<const float *>(table.data);
        t5_bias.assign(size_t(t5_span * Hq), 0.0f);
        for (int64_t rel = -(Lk - 1); rel <= Lq - 1; rel++) {
            int64_t bucket = t5_bucket(rel, o.t5->bidirectional, buckets, o.t5->max_distance);
            for (int64_t h = 0; h < Hq; h++)
                t5_bias[size_t(h * t5_span + pad + Lq - 1 - rel)] = values[bucket * table.stride(0) + h * table.stride(1)];
        }
    }
    for (auto [input, name] : {std::pair{&q, "q"}, {&k, "k"}, {&v, "v"}}) check.finite_values(*input, name);
    if (out.numel() == 0) return;

    if (Lk == 0) {  // no key at all: every row is fully masked, so exactly zero (SPEC §0)
        float *data = static_cast<float *>(out.data);
        detail::for_each_offset<1>(out.shape, {&out}, [&](const std::array<int64_t, 1> &o) { data[o[0]] = 0.0f; });
        return;
    }
    HalideView q_view(q, false), k_view(k, false), v_view(v, false), out_view(out, true);
    HalideView len_view(Tensor{lengths.data(), DType::int32, {B}, {}}, false);
    KernelCall kernel(o.alibi ? "posattn_attn_alibi_f32" : o.t5 ? "posattn_attn_t5_f32" : o.rope ? "posattn_attn_rope_f32" : "posattn_attn_plain_f32", call);
    kernel.arg("q", q_view).arg("k", k_view).arg("v", v_view).arg("key_lengths", len_view)
        .arg("scale", float(scale)).arg("causal", o.causal).arg("out", out_view);
    std::optional<HalideView> slope_view;
    if (o.alibi)
        kernel.arg("slopes", slope_view.emplace(Tensor{slopes.data(), DType::float32, {Hq}, {}}, false))
            .arg("alibi_form", int32_t(o.alibi->form));
    std::optional<HalideView> t5_view;
    if (o.t5) {
        t5_view.emplace(Tensor{t5_bias.data(), DType::float32, {Hq, t5_span}, {}}, false);
        t5_view->buffer()->dim[0].min = int32_t(-pad);  // indices Lq − 1 − rel, from −pad
        kernel.arg("bias_by_offset", *t5_view);
    }
    std::optional<HalideView> qp_view, kp_view, inv_view;
    if (o.rope)
        kernel.arg("q_positions", qp_view.emplace(q_positions, false)).arg("k_positions", kp_view.emplace(k_positions, false))
            .arg("inv_freq", inv_view.emplace(Tensor{rope.inv_freq.data(), DType::float64, {int64_t(rope.inv_freq.size())}, {}}, false))
            .arg("attention_factor", rope.attention_factor).arg("rope_layout", int32_t(o.rope->layout));
    kernel.run();
    out_view.finish();
}

}  // namespace posattn
