// The C ABI: converts views, runs the C++ entry point, and turns exceptions into status codes.
#include <algorithm>
#include <cmath>

#include "internal.h"
#include "posattn/posattn.h"
#include "posattn/posattn.hpp"

namespace {

thread_local std::string last_error;
thread_local posattn::CallOptions thread_call;  // posattn_set_device / posattn_set_schedule

posattn::Tensor view(const posattn_tensor *t, const char *name) {
    if (!t) throw posattn::Error(posattn::Error::Kind::invalid_argument, std::string("posattn: argument '") + name + "' is NULL");
    if (t->rank < 0 || t->rank > 8 || (t->rank > 0 && !t->shape))
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             std::string("posattn: argument '") + name + "' has rank " + std::to_string(t->rank) +
                                 " or no shape; expected 0 <= rank <= 8 with a shape array");
    if (t->dtype < POSATTN_FLOAT32 || t->dtype > POSATTN_BFLOAT16)
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             std::string("posattn: argument '") + name + "' has unknown dtype code " + std::to_string(t->dtype));
    if (t->memory != POSATTN_HOST && t->memory != POSATTN_DEVICE)
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             std::string("posattn: argument '") + name + "' has unknown memory code " + std::to_string(t->memory));
    posattn::Tensor r;
    r.data = t->data;
    r.memory = posattn::Memory(t->memory);
    r.dtype = posattn::DType(t->dtype);
    r.shape.assign(t->shape, t->shape + t->rank);
    if (t->strides) r.strides.assign(t->strides, t->strides + t->rank);
    return r;
}

template <typename Fn>
posattn_status guarded(Fn fn) {
    try {
        fn();
        last_error.clear();
        return POSATTN_OK;
    } catch (const posattn::Error &e) {
        last_error = e.what();
        switch (e.kind()) {
        case posattn::Error::Kind::invalid_argument: return POSATTN_ERROR_INVALID_ARGUMENT;
        case posattn::Error::Kind::unsupported: return POSATTN_ERROR_UNSUPPORTED;
        case posattn::Error::Kind::kernel_failed: return POSATTN_ERROR_KERNEL;
        }
    } catch (const std::exception &e) {
        last_error = std::string("posattn: internal error: ") + e.what();
    } catch (...) {
        last_error = "posattn: internal error";
    }
    return POSATTN_ERROR_INTERNAL;
}

// A C string argument, or an error naming it where it is NULL.
std::string text(const char *value, const char *name) {
    if (!value)
        throw posattn::Error(posattn::Error::Kind::invalid_argument, std::string("posattn: argument '") + name + "' is NULL; expected a string");
    return value;
}

// `count` values and their names, both arrays given where count > 0.
void named_array(int32_t count, const char *const *names, const void *values, const char *what) {
    if (count < 0 || (count > 0 && (!names || !values)))
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             "posattn: argument '" + std::string(what) + "': " + std::to_string(count) +
                                 " given, with a NULL array of them or of their names; expected a count >= 0 and both arrays");
}

posattn::SinusoidalOptions sinusoidal_options(double base, int32_t layout, int32_t convention) {
    if (layout != POSATTN_LAYOUT_INTERLEAVED && layout != POSATTN_LAYOUT_HALF)
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             "posattn: argument 'layout' is " + std::to_string(layout) + "; expected 0 (interleaved) or 1 (half)");
    if (convention != POSATTN_VASWANI && convention != POSATTN_T2T)
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             "posattn: argument 'convention' is " + std::to_string(convention) + "; expected 0 (vaswani) or 1 (t2t)");
    return {base, layout == POSATTN_LAYOUT_HALF ? posattn::Layout::half : posattn::Layout::interleaved,
            convention == POSATTN_T2T ? posattn::Convention::t2t : posattn::Convention::vaswani};
}

posattn::NormalizedOptions normalized_options(int64_t length, int32_t mode) {
    if (mode != POSATTN_NORMALIZED_MINUS_ONE && mode != POSATTN_NORMALIZED_LENGTH)
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             "posattn: argument 'mode' is " + std::to_string(mode) + "; expected 0 (minus_one) or 1 (length)");
    return {length, mode == POSATTN_NORMALIZED_LENGTH ? posattn::NormalizedMode::length : posattn::NormalizedMode::minus_one};
}

posattn::RopeScaling rope_scaling(const posattn_rope_scaling *c) {
    posattn::RopeScaling s;
    if (!c) return s;
    if (c->type < POSATTN_ROPE_UNSCALED || c->type > POSATTN_ROPE_LONGROPE)
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             "posattn: argument 'scaling.type' is " + std::to_string(c->type) + "; expected 0 ... 6");
    if (c->factor_count < 0 || (c->factor_count && (!c->short_factor || !c->long_factor)))
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             "posattn: argument 'scaling' has factor_count " + std::to_string(c->factor_count) +
                                 "; expected >= 0 with both factor lists non-NULL");
    s.type = posattn::RopeScalingType(c->type);
    s.factor = c->factor;
    s.original_max_position_embeddings = c->original_max_position_embeddings;
    s.max_position_embeddings = c->max_position_embeddings;
    s.beta_fast = c->beta_fast, s.beta_slow = c->beta_slow, s.truncate = c->truncate != 0;
    s.mscale = c->mscale, s.mscale_all_dim = c->mscale_all_dim;
    if (!std::isnan(c->attention_factor)) s.attention_factor = c->attention_factor;
    s.low_freq_factor = c->low_freq_factor, s.high_freq_factor = c->high_freq_factor;
    if (c->factor_count) {
        s.short_factor.assign(c->short_factor, c->short_factor + c->factor_count);
        s.long_factor.assign(c->long_factor, c->long_factor + c->factor_count);
    }
    return s;
}

posattn::AlibiForm alibi_form(int32_t form) {
    if (form < POSATTN_ALIBI_RELATIVE || form > POSATTN_ALIBI_SYMMETRIC)
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             "posattn: argument 'form' is " + std::to_string(form) + "; expected 0, 1 or 2");
    return posattn::AlibiForm(form);
}

posattn::RopeLayout rope_layout(int32_t layout) {
    if (layout != POSATTN_ROPE_NEOX && layout != POSATTN_ROPE_GPTJ)
        throw posattn::Error(posattn::Error::Kind::invalid_argument,
                             "posattn: argument 'layout' is " + std::to_string(layout) + "; expected 0 (neox) or 1 (gptj)");
    return layout == POSATTN_ROPE_GPTJ ? posattn::RopeLayout::gptj : posattn::RopeLayout::neox;
}

// A C options struct as the C++ one (NULL: the defaults).
posattn::AttentionOptions attention_options(const posattn_attention_options *c) {
    posattn_attention_options defaults;
    posattn_attention_options_init(&defaults);
    if (!c) c = &defaults;
    posattn::AttentionOptions options;
    if (c->has_scale) options.scale = c->scale;
    options.causal = c->causal != 0;
    options.window = c->window;
    options.check_finite = !c->unchecked_values;
    struct Field {
        std::optional<posattn::Tensor> *field;
        const posattn_tensor *t;
        const char *name;
    };
    for (auto [field, t, name] : {Field{&options.key_lengths, c->key_lengths, "key_lengths"},
                                  {&options.key_starts, c->key_starts, "key_starts"},
                                  {&options.q_segments, c->q_segments, "q_segments"},
                                  {&options.k_segments, c->k_segments, "k_segments"},
                                  {&options.query_lengths, c->query_lengths, "query_lengths"},
                                  {&options.mask, c->mask, "mask"}, {&options.bias, c->bias, "bias"}})
        if (t) *field = view(t, name);
    return options;
}

// Runs attention with the options and the variant set by `variant`.
template <typename Variant>
posattn_status attention_with(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                              const posattn_tensor *out, const posattn_attention_options *options, Variant variant) {
    return guarded([&] {
        posattn::AttentionOptions o = attention_options(options);
        variant(o);
        posattn::attention(view(q, "q"), view(k, "k"), view(v, "v"), view(out, "out"), o, thread_call);
    });
}

std::optional<posattn::Tensor> optional_view(const posattn_tensor *t, const char *name) {
    if (!t) return std::nullopt;
    return view(t, name);
}

}  // namespace

extern "C" {

posattn_status posattn_sinusoidal(const posattn_tensor *positions, const posattn_tensor *out, double base,
                                  int32_t layout, int32_t convention) {
    return guarded([&] {
        posattn::sinusoidal(view(positions, "positions"), view(out, "out"), sinusoidal_options(base, layout, convention), thread_call);
    });
}

posattn_status posattn_sinusoidal_add(const posattn_tensor *x, const posattn_tensor *positions,
                                      const posattn_tensor *out, double base, int32_t layout, int32_t convention) {
    return guarded([&] {
        posattn::sinusoidal_add(view(x, "x"), view(positions, "positions"), view(out, "out"),
                                sinusoidal_options(base, layout, convention), thread_call);
    });
}

posattn_status posattn_learned(const posattn_tensor *table, const posattn_tensor *positions,
                               const posattn_tensor *out, int64_t offset) {
    return guarded([&] { posattn::learned(view(table, "table"), view(positions, "positions"), view(out, "out"), offset, thread_call); });
}

posattn_status posattn_learned_add(const posattn_tensor *x, const posattn_tensor *table,
                                   const posattn_tensor *positions, const posattn_tensor *out, int64_t offset) {
    return guarded([&] {
        posattn::learned_add(view(x, "x"), view(table, "table"), view(positions, "positions"), view(out, "out"), offset, thread_call);
    });
}

posattn_status posattn_integer(const posattn_tensor *positions, const posattn_tensor *out) {
    return guarded([&] { posattn::integer(view(positions, "positions"), view(out, "out"), thread_call); });
}

posattn_status posattn_integer_add(const posattn_tensor *x, const posattn_tensor *positions, const posattn_tensor *out) {
    return guarded([&] { posattn::integer_add(view(x, "x"), view(positions, "positions"), view(out, "out"), thread_call); });
}

posattn_status posattn_normalized(const posattn_tensor *positions, const posattn_tensor *out, int64_t length,
                                  int32_t mode) {
    return guarded([&] {
        posattn::normalized(view(positions, "positions"), view(out, "out"), normalized_options(length, mode), thread_call);
    });
}

posattn_status posattn_normalized_add(const posattn_tensor *x, const posattn_tensor *positions,
                                      const posattn_tensor *out, int64_t length, int32_t mode) {
    return guarded([&] {
        posattn::normalized_add(view(x, "x"), view(positions, "positions"), view(out, "out"),
                                normalized_options(length, mode), thread_call);
    });
}

posattn_status posattn_binary(const posattn_tensor *positions, const posattn_tensor *out, int32_t signed_values,
                              int32_t msb_first) {
    return guarded([&] {
        posattn::binary(view(positions, "positions"), view(out, "out"), {signed_values != 0, msb_first != 0}, thread_call);
    });
}

posattn_status posattn_binary_add(const posattn_tensor *x, const posattn_tensor *positions, const posattn_tensor *out,
                                  int32_t signed_values, int32_t msb_first) {
    return guarded([&] {
        posattn::binary_add(view(x, "x"), view(positions, "positions"), view(out, "out"),
                            {signed_values != 0, msb_first != 0}, thread_call);
    });
}

posattn_status posattn_sin_only(const posattn_tensor *positions, const posattn_tensor *out, double base) {
    return guarded([&] { posattn::sin_only(view(positions, "positions"), view(out, "out"), base, thread_call); });
}

posattn_status posattn_sin_only_add(const posattn_tensor *x, const posattn_tensor *positions,
                                    const posattn_tensor *out, double base) {
    return guarded([&] { posattn::sin_only_add(view(x, "x"), view(positions, "positions"), view(out, "out"), base, thread_call); });
}

void posattn_rope_scaling_init(posattn_rope_scaling *scaling, int32_t type) {
    if (!scaling) return;
    posattn::RopeScaling d;
    *scaling = posattn_rope_scaling{type, d.factor, d.original_max_position_embeddings, d.max_position_embeddings,
                                    d.beta_fast, d.beta_slow, d.truncate, d.mscale, d.mscale_all_dim, NAN,
                                    d.low_freq_factor, d.high_freq_factor, nullptr, nullptr, 0};
}

posattn_status posattn_rope_frequencies(int64_t rotary_dim, double base, const posattn_rope_scaling *scaling,
                                        int64_t seq_len, double *inv_freq, double *attention_factor) {
    return guarded([&] {
        if (!inv_freq || !attention_factor)
            throw posattn::Error(posattn::Error::Kind::invalid_argument, "posattn: argument 'inv_freq' or 'attention_factor' is NULL");
        auto f = posattn::rope_frequencies(rotary_dim, base, rope_scaling(scaling), seq_len);
        std::copy(f.inv_freq.begin(), f.inv_freq.end(), inv_freq);
        *attention_factor = f.attention_factor;
    });
}

posattn_status posattn_rope(const posattn_tensor *x, const posattn_tensor *out, const posattn_tensor *positions,
                            double base, int32_t layout, int64_t rotary_dim, const posattn_rope_scaling *scaling,
                            int64_t seq_len) {
    return guarded([&] {
        posattn::RopeOptions options;
        options.base = base;
        options.layout = rope_layout(layout);
        options.rotary_dim = rotary_dim;
        options.scaling = rope_scaling(scaling);
        options.seq_len = seq_len;
        if (positions) options.positions = view(positions, "positions");
        posattn::rope(view(x, "x"), view(out, "out"), options, thread_call);
    });
}

posattn_status posattn_complex_order(const posattn_tensor *token_ids, const posattn_tensor *positions,
                                     const posattn_tensor *amplitude, const posattn_tensor *frequency,
                                     const posattn_tensor *phase, const posattn_tensor *real,
                                     const posattn_tensor *imag) {
    return guarded([&] {
        std::optional<posattn::Tensor> ph;
        if (phase) ph = view(phase, "phase");
        posattn::complex_order(view(token_ids, "token_ids"), view(positions, "positions"), view(amplitude, "amplitude"),
                               view(frequency, "frequency"), ph, view(real, "real"), view(imag, "imag"), thread_call);
    });
}

posattn_status posattn_complex_order_frequency_init(const posattn_tensor *out, int32_t kind) {
    return guarded([&] {
        if (kind != POSATTN_COMPLEX_ORDER_TRANSLATION && kind != POSATTN_COMPLEX_ORDER_CLASSIFICATION)
            throw posattn::Error(posattn::Error::Kind::invalid_argument,
                                 "posattn: argument 'kind' is " + std::to_string(kind) + "; expected 0 or 1");
        posattn::complex_order_frequency_init(view(out, "out"), posattn::ComplexOrderInit(kind));
    });
}

posattn_status posattn_floater(const posattn_tensor *p0, const posattn_tensor *W1, const posattn_tensor *b1,
                               const posattn_tensor *W2, const posattn_tensor *b2, const posattn_tensor *out, double dt,
                               int64_t substeps, int32_t method) {
    return guarded([&] {
        if (method < POSATTN_FLOATER_RK4_38 || method > POSATTN_FLOATER_EULER)
            throw posattn::Error(posattn::Error::Kind::invalid_argument,
                                 "posattn: argument 'method' is " + std::to_string(method) + "; expected 0 ... 3");
        posattn::floater(view(p0, "p0"), view(W1, "W1"), view(b1, "b1"), view(W2, "W2"), view(b2, "b2"), view(out, "out"),
                         {dt, substeps, posattn::FloaterMethod(method)}, thread_call);
    });
}

posattn_status posattn_alibi_slopes(int64_t heads, double *slopes) {
    return guarded([&] {
        if (!slopes) throw posattn::Error(posattn::Error::Kind::invalid_argument, "posattn: argument 'slopes' is NULL");
        auto values = posattn::alibi_slopes(heads);
        std::copy(values.begin(), values.end(), slopes);
    });
}

posattn_status posattn_alibi_bias(const posattn_tensor *slopes, const posattn_tensor *out, int32_t form) {
    return guarded([&] { posattn::alibi_bias(view(slopes, "slopes"), view(out, "out"), alibi_form(form), thread_call); });
}

posattn_status posattn_t5_bucket(int64_t rel, int32_t bidirectional, int64_t num_buckets, int64_t max_distance,
                                 int64_t *bucket) {
    return guarded([&] {
        if (!bucket) throw posattn::Error(posattn::Error::Kind::invalid_argument, "posattn: argument 'bucket' is NULL");
        *bucket = posattn::t5_bucket(rel, bidirectional != 0, num_buckets, max_distance);
    });
}

void posattn_attention_options_init(posattn_attention_options *options) {
    if (options) *options = posattn_attention_options{0, 0.0, 0, nullptr, 0, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
}

posattn_status posattn_attention(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                 const posattn_tensor *out, const posattn_attention_options *options) {
    return attention_with(q, k, v, out, options, [](posattn::AttentionOptions &) {});
}

posattn_status posattn_attention_alibi(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                       const posattn_tensor *out, const posattn_attention_options *options,
                                       const posattn_tensor *alibi_slopes, int32_t form) {
    return attention_with(q, k, v, out, options, [&](posattn::AttentionOptions &o) {
        o.alibi = posattn::AlibiAttention{view(alibi_slopes, "alibi_slopes"), alibi_form(form)};
    });
}

posattn_status posattn_attention_t5(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                    const posattn_tensor *out, const posattn_attention_options *options,
                                    const posattn_tensor *t5_table, int32_t bidirectional, int64_t max_distance) {
    return attention_with(q, k, v, out, options, [&](posattn::AttentionOptions &o) {
        o.t5 = posattn::T5Attention{view(t5_table, "t5_table"), bidirectional != 0, max_distance};
    });
}

posattn_status posattn_attention_rope(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                      const posattn_tensor *out, const posattn_attention_options *options, double base,
                                      int32_t layout, int64_t rotary_dim, const posattn_rope_scaling *scaling,
                                      const posattn_tensor *q_positions, const posattn_tensor *k_positions,
                                      int64_t seq_len) {
    return attention_with(q, k, v, out, options, [&](posattn::AttentionOptions &o) {
        posattn::RopeAttention rope;
        rope.base = base;
        rope.layout = rope_layout(layout);
        rope.rotary_dim = rotary_dim;
        rope.scaling = rope_scaling(scaling);
        rope.q_positions = optional_view(q_positions, "q_positions");
        rope.k_positions = optional_view(k_positions, "k_positions");
        rope.seq_len = seq_len;
        o.rope = rope;
    });
}

posattn_status posattn_attention_shaw(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                      const posattn_tensor *out, const posattn_attention_options *options,
                                      const posattn_tensor *rel_k, const posattn_tensor *rel_v) {
    return attention_with(q, k, v, out, options, [&](posattn::AttentionOptions &o) {
        o.shaw = posattn::ShawAttention{view(rel_k, "rel_k"), view(rel_v, "rel_v")};
    });
}

posattn_status posattn_attention_transformer_xl(const posattn_tensor *q, const posattn_tensor *k,
                                                const posattn_tensor *v, const posattn_tensor *out,
                                                const posattn_attention_options *options, const posattn_tensor *r,
                                                const posattn_tensor *u, const posattn_tensor *v_bias,
                                                int64_t clamp_len, int64_t same_length) {
    return attention_with(q, k, v, out, options, [&](posattn::AttentionOptions &o) {
        o.transformer_xl = posattn::TransformerXLAttention{view(r, "r"), view(u, "u"), view(v_bias, "v_bias"), clamp_len,
                                                           same_length};
    });
}

posattn_status posattn_attention_deberta(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                         const posattn_tensor *out, const posattn_attention_options *options,
                                         const posattn_tensor *rel_embeddings, const posattn_tensor *w_key,
                                         const posattn_tensor *b_key, const posattn_tensor *w_query,
                                         const posattn_tensor *b_query, int64_t position_buckets,
                                         int64_t max_relative_positions, int32_t p2c_index) {
    return attention_with(q, k, v, out, options, [&](posattn::AttentionOptions &o) {
        if (p2c_index != POSATTN_DEBERTA_P2C_CODE && p2c_index != POSATTN_DEBERTA_P2C_PAPER)
            throw posattn::Error(posattn::Error::Kind::invalid_argument, "posattn: argument 'p2c_index' is " +
                                                                             std::to_string(p2c_index) + "; expected 0 (code) or 1 (paper)");
        posattn::DebertaAttention d;
        d.rel_embeddings = view(rel_embeddings, "rel_embeddings");
        d.w_key = optional_view(w_key, "w_key");
        d.b_key = optional_view(b_key, "b_key");
        d.w_query = optional_view(w_query, "w_query");
        d.b_query = optional_view(b_query, "b_query");
        d.position_buckets = position_buckets;
        d.max_relative_positions = max_relative_positions;
        d.p2c_index = p2c_index == POSATTN_DEBERTA_P2C_PAPER ? posattn::DebertaP2cIndex::paper : posattn::DebertaP2cIndex::code;
        o.deberta = d;
    });
}

posattn_status posattn_deberta_bucket(int64_t delta, int64_t position_buckets, int64_t max_relative_positions,
                                      int64_t *bucket) {
    return guarded([&] {
        if (!bucket) throw posattn::Error(posattn::Error::Kind::invalid_argument, "posattn: argument 'bucket' is NULL");
        *bucket = posattn::deberta_bucket(delta, position_buckets, max_relative_positions);
    });
}

posattn_status posattn_attention_custom(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                        const posattn_tensor *out, const posattn_attention_options *options,
                                        const char *kernel, int32_t input_count, const char *const *input_names,
                                        const posattn_tensor *inputs, int32_t scalar_count,
                                        const char *const *scalar_names, const double *scalars) {
    return attention_with(q, k, v, out, options, [&](posattn::AttentionOptions &o) {
        posattn::CustomAttention custom{text(kernel, "kernel"), {}, {}};
        named_array(input_count, input_names, inputs, "inputs");
        named_array(scalar_count, scalar_names, scalars, "scalars");
        for (int32_t n = 0; n < input_count; n++) custom.inputs[text(input_names[n], "input_names")] = view(&inputs[n], "inputs");
        for (int32_t n = 0; n < scalar_count; n++) custom.scalars[text(scalar_names[n], "scalar_names")] = scalars[n];
        o.custom = std::move(custom);
    });
}

posattn_status posattn_add_kernel(const char *function, int (*argv)(void **), const struct halide_filter_metadata_t *(*metadata)(void)) {
    return guarded([&] { posattn::add_kernel(text(function, "function"), argv, metadata); });
}

posattn_status posattn_load_kernel(const char *path, const char *symbol, const char *function) {
    return guarded([&] { posattn::load_kernel(text(path, "path"), text(symbol, "symbol"), text(function, "function")); });
}

posattn_status posattn_linear(const posattn_tensor *x, const posattn_tensor *weight, const posattn_tensor *bias,
                              const posattn_tensor *out) {
    return guarded([&] { posattn::linear(view(x, "x"), view(weight, "weight"), optional_view(bias, "bias"), view(out, "out"), thread_call); });
}

posattn_status posattn_set_num_threads(int32_t threads) {
    return guarded([&] { posattn::set_num_threads(threads); });
}

posattn_status posattn_set_allocator(posattn_allocate_fn allocate, posattn_release_fn release, void *context) {
    return guarded([&] { posattn::set_allocator(allocate, release, context); });
}

int32_t posattn_kernel_count(void) {
    int32_t count = 0;
    posattn::detail::for_each_kernel([&](const posattn::detail::KernelEntry &) { count++; });
    return count;
}

posattn_status posattn_kernel_at(int32_t index, posattn_kernel_info *info) {
    return guarded([&] {
        if (!info) throw posattn::Error(posattn::Error::Kind::invalid_argument, "posattn: argument 'info' is NULL; expected a posattn_kernel_info to fill");
        const posattn::detail::KernelEntry *found = nullptr;
        int32_t n = 0;
        posattn::detail::for_each_kernel([&](const posattn::detail::KernelEntry &e) {
            if (n++ == index) found = &e;
        });
        if (!found)
            throw posattn::Error(posattn::Error::Kind::invalid_argument, "posattn: argument 'index' is " + std::to_string(index) +
                                                                             "; expected 0 <= index < " + std::to_string(n) + " (posattn_kernel_count())");
        *info = posattn_kernel_info{found->function, found->family, found->schedule, found->targets};
    });
}

posattn_status posattn_set_device(const char *device) {
    return guarded([&] {
        if (!device)
            throw posattn::Error(posattn::Error::Kind::invalid_argument,
                                 "posattn: argument 'device' is NULL; expected cpu, cuda, opencl or vulkan");
        posattn::check_device(device);
        thread_call.device = device;
    });
}

posattn_status posattn_device_context(const char *device, void **context, void **queue) {
    return guarded([&] {
        if (!device || !context || !queue)
            throw posattn::Error(posattn::Error::Kind::invalid_argument,
                                 "posattn: arguments 'device', 'context' and 'queue': one is NULL; expected a device name and two pointers");
        posattn::DeviceContext c = posattn::device_context(device);
        *context = c.context, *queue = c.queue;
    });
}

posattn_status posattn_set_schedule(const char *schedule) {
    return guarded([&] {
        if (!schedule || !*schedule)
            throw posattn::Error(posattn::Error::Kind::invalid_argument,
                                 "posattn: argument 'schedule' is NULL or empty; expected \"hand\" or a compiled baseline's name");
        thread_call.schedule = schedule;
    });
}

const char *posattn_last_error(void) { return last_error.c_str(); }

}  // extern "C"
