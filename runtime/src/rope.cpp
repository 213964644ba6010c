// RoPE: the scalings (contract §6, following HF's ROPE_INIT_FUNCTIONS) turned into inv_freq and an
// attention factor in float64, then validate → select → call.
#include <algorithm>
#include <cmath>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

namespace {

// The most channels RoPE rotates: its frequencies, one per pair, are allocated before any tensor
// bounds them (rope_frequencies).
constexpr int64_t kMaxRotaryDim = int64_t(1) << 24;

void check_scaling(const Checker &check, const RopeScaling &s, int64_t r) {
    using T = RopeScalingType;
    if (s.type == T::none) return;
    bool longrope_from_lengths = s.type == T::longrope && s.factor == 0;
    if (!longrope_from_lengths) check.positive_normal(s.factor, "scaling.factor");
    if (s.type != T::linear && s.type != T::ntk && s.original_max_position_embeddings < 1)
        check.fail("argument 'scaling.original_max_position_embeddings' is " +
                   std::to_string(s.original_max_position_embeddings) + "; expected L0 >= 1 for this scaling");
    if ((s.type == T::ntk || s.type == T::dynamic) && r <= 2)
        check.fail("argument 'rotary_dim' is " + std::to_string(r) + "; expected rotary_dim > 2 for ntk/dynamic scaling (exponent r/(r-2))");
    if (s.type == T::yarn) {
        for (auto [value, name] : {std::pair{s.beta_fast, "scaling.beta_fast"}, {s.beta_slow, "scaling.beta_slow"}})
            if (!(std::isfinite(value) && value > 0)) check.fail(std::string("argument '") + name + "' must be finite and > 0");
        for (auto [value, name] : {std::pair{s.mscale, "scaling.mscale"}, {s.mscale_all_dim, "scaling.mscale_all_dim"}})
            check.finite(value, name);
    }
    if (s.attention_factor) check.positive_normal(*s.attention_factor, "scaling.attention_factor");
    if (s.type == T::llama3) {
        check.finite(s.low_freq_factor, "scaling.low_freq_factor");
        check.finite(s.high_freq_factor, "scaling.high_freq_factor");
        if (!(s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor))
            check.fail("arguments 'scaling.low_freq_factor' and 'scaling.high_freq_factor' are " +
                       std::to_string(s.low_freq_factor) + " and " + std::to_string(s.high_freq_factor) +
                       "; expected 0 < low_freq_factor < high_freq_factor");
    }
    if (s.type == T::longrope) {
        if (longrope_from_lengths && s.max_position_embeddings < 1)
            check.fail("argument 'scaling.factor' is 0 and 'scaling.max_position_embeddings' is " +
                       std::to_string(s.max_position_embeddings) + "; expected one of them for longrope");
        for (auto [list, name] : {std::pair{&s.short_factor, "scaling.short_factor"}, {&s.long_factor, "scaling.long_factor"}}) {
            if (int64_t(list->size()) != r / 2)
                check.fail(std::string("argument '") + name + "' has " + std::to_string(list->size()) +
                           " entries; expected rotary_dim/2 = " + std::to_string(r / 2));
            for (double f : *list)
                if (!(std::isfinite(f) && f > 0)) check.fail(std::string("argument '") + name + "' holds " + std::to_string(f) + "; expected finite factors > 0");
        }
    }
}

// b^(−2c/r) for every pair c < r/2 (their pows were a third of a RoPE call's own time at decoding
// sizes, where calls repeat (r, b)).
std::vector<double> inverse_frequencies(int64_t r, double b) {
    return detail::kept_per_thread(std::pair(r, b), [&] {
        std::vector<double> inv(size_t(r / 2));
        for (int64_t c = 0; c < r / 2; c++) inv[size_t(c)] = std::pow(b, -double(2 * c) / double(r));
        return inv;
    });
}

RopeFrequencies frequencies(const Checker &check, int64_t r, double base, const RopeScaling &s, int64_t seq_len) {
    using T = RopeScalingType;
    if (r <= 0 || r % 2 || r > kMaxRotaryDim)
        check.fail("argument 'rotary_dim' is " + std::to_string(r) + "; expected an even rotary_dim, 0 < rotary_dim <= 2^24");
    if (seq_len < 0) check.fail("argument 'seq_len' is " + std::to_string(seq_len) + "; expected >= 0 (0: from the positions)");
    check.positive_normal(base, "base");
    check_scaling(check, s, r);
    int64_t pairs = r / 2;
    double L0 = double(s.original_max_position_embeddings);
    RopeFrequencies f{inverse_frequencies(r, base), 1.0};
    switch (s.type) {
    case T::none: break;
    case T::linear:
        for (double &v : f.inv_freq) v /= s.factor;
        break;
    case T::ntk:
    case T::dynamic: {
        double factor = s.factor;
        if (s.type == T::dynamic) {  // the current length L, at least L0
            double L = seq_len > s.original_max_position_embeddings ? double(seq_len) : L0;
            factor = s.factor * L / L0 - (s.factor - 1);
        }
        double scaled = base * std::pow(factor, double(r) / double(r - 2));
        if (!(std::isnormal(scaled) && scaled > 0))
            check.fail("arguments 'base' and 'scaling.factor' give an NTK base of " + std::to_string(scaled) +
                       "; expected a finite base > 0");
        f.inv_freq = inverse_frequencies(r, scaled);
        break;
    }
    case T::yarn: {
        auto mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
        f.attention_factor = s.attention_factor.value_or(
            s.mscale != 0 && s.mscale_all_dim != 0 ? mscale(s.factor, s.mscale) / mscale(s.factor, s.mscale_all_dim)
                                                   : mscale(s.factor, 1.0));
        auto correction = [&](double rotations) {  // the pair index whose wavelength fits `rotations` in L0
            return double(r) * std::log(L0 / (2 * M_PI * rotations)) / (2 * std::log(base));
        };
        double low = correction(s.beta_fast), high = correction(s.beta_slow);
        if (s.truncate) low = std::floor(low), high = std::ceil(high);
        low = std::max(low, 0.0), high = std::min(high, double(r - 1));
        if (low == high) high += 0.001;
        for (int64_t c = 0; c < pairs; c++) {
            double ramp = std::clamp((double(c) - low) / (high - low), 0.0, 1.0);
            f.inv_freq[c] = ramp * f.inv_freq[c] / s.factor + (1 - ramp) * f.inv_freq[c];
        }
        break;
    }
    case T::llama3:
        for (double &v : f.inv_freq) {
            double wavelength = 2 * M_PI / v;
            double smooth = (L0 / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
            if (wavelength > L0 / s.low_freq_factor) v /= s.factor;
            else if (wavelength >= L0 / s.high_freq_factor) v = (1 - smooth) * v / s.factor + smooth * v;
        }
        break;
    case T::longrope: {
        double factor = s.factor != 0 ? s.factor : double(s.max_position_embeddings) / L0;
        const std::vector<double> &ext = seq_len > s.original_max_position_embeddings ? s.long_factor : s.short_factor;
        for (int64_t c = 0; c < pairs; c++) f.inv_freq[c] /= ext[c];
        f.attention_factor = s.attention_factor.value_or(factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(L0)));
        break;
    }
    }
    check.finite(f.attention_factor, "scaling's attention factor");
    for (double v : f.inv_freq)
        if (!std::isfinite(v))
            check.fail("arguments 'base' and 'scaling' give a frequency of " + std::to_string(v) +
                       "; expected finite frequencies (a base or factor too close to 0 or too large)");
    return f;
}

}  // namespace

RopeFrequencies rope_frequencies(int64_t rotary_dim, double base, const RopeScaling &scaling, int64_t seq_len) {
    return frequencies(Checker("rope_frequencies"), rotary_dim, base, scaling, seq_len);
}

void rope(const Tensor &x, const Tensor &out, const RopeOptions &o, const CallOptions &call) {
    Checker check("rope");
    const DType dtype = check.storage(x, "x");
    check.host_or_device(x, "x", dtype, {4}, call);
    check.host_or_device(out, "out", dtype, {4}, call);
    check.leading_dims(out, "out", x, "x");
    check.output(out, "out");
    const bool in_place = check.same_or_disjoint(out, "out", x, "x");
    int64_t B = x.shape[0], L = x.shape[2], D = x.shape[3], r = o.rotary_dim ? o.rotary_dim : D;
    if (r > D) check.fail("argument 'rotary_dim' is " + std::to_string(r) + "; expected rotary_dim <= D = " + std::to_string(D));

    // Positions as the kernel takes them, [B, L]: the caller's (a 1-D [L] shared by every batch) or 0 … L−1.
    std::vector<int32_t> default_positions;
    Tensor positions;
    if (o.positions) {
        positions = check.positions(*o.positions, "positions", B, L, "L, x's dimension 2", "B, x's dimension 0");
        check.disjoint(out, "out", *o.positions, "positions");
    } else {
        if (L > INT32_MAX) check.fail("argument 'x' has L = " + std::to_string(L) + "; expected L <= 2^31-1 for default positions");
        for (int64_t l = 0; l < L; l++) default_positions.push_back(int32_t(l));
        positions = Tensor{default_positions.data(), DType::int32, {B, L}, {0, 1}};
    }
    int64_t seq_len = o.seq_len ? o.seq_len : detail::max_position_plus_one(positions);
    RopeFrequencies f = frequencies(check, r, o.base, o.scaling, seq_len);
    // Channels r … D−1 are copied through by the kernel (in place, onto themselves: a copy of equal
    // values); with device buffers, which cannot express a view r channels into each row, by the
    // runtime (nothing in place): all of x copied to out on the device before the kernel rotates
    // channels 0 … r−1 (an H200 took 297 ms for [2, 32, 4096, 128] through host images), or, one
    // of them host memory, through host images after it.
    const bool on_device = x.memory == Memory::device || out.memory == Memory::device, pass_in_kernel = r < D && !on_device;
    const bool both_on_device = x.memory == Memory::device && out.memory == Memory::device;
    const std::string function = detail::typed(pass_in_kernel ? "posattn_rope_partial_f32" : "posattn_rope_f32", dtype);
    if (detail::nothing_to_compute(out, function, call)) return;

    Layout pairs = o.layout == RopeLayout::gptj ? Layout::interleaved : Layout::half;
    HalideView x_view(detail::channels(x, 0, r), false, pairs), out_view(detail::channels(out, 0, r), true, pairs);
    HalideView pos_view(positions, false);
    std::vector<int32_t> turns = detail::fixed_point_turns(f.inv_freq);
    HalideView turns_view(Tensor{turns.data(), DType::int32, {2, r / 2}, {}}, false);
    KernelCall kernel(function, call);
    kernel.arg("x", x_view).arg("positions", pos_view).arg("turns", turns_view)
        .arg("attention_factor", f.attention_factor).arg("out", out_view);
    std::optional<HalideView> x_pass, out_pass;
    if (pass_in_kernel)
        kernel.arg("x_pass", x_pass.emplace(detail::channels(x, r, D), false))
            .arg("out_pass", out_pass.emplace(detail::channels(out, r, D), true));
    if (r < D && both_on_device && !in_place) detail::device_copy(x, out, call);  // (last: nothing left to refuse)
    kernel.run();
    out_view.finish();
    if (out_pass) out_pass->finish();
    if (r < D && on_device && !both_on_device && !in_place) {
        detail::HostImage from(x, call, true), to(out, call, true);
        detail::copy_strided(detail::channels(from.tensor(), r, D), detail::channels(to.tensor(), r, D));
        to.commit();
    }
}

}  // namespace posattn
