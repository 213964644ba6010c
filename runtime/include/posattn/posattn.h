/* posattn C ABI: the same kernels and checks as the C++ API, for callers that cannot use C++
 * exceptions (mobile apps, other languages). Every function returns a status; on failure
 * posattn_last_error() gives the message (per thread) and caller data is left untouched. */
#ifndef POSATTN_H
#define POSATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posattn_status {
    POSATTN_OK = 0,
    POSATTN_ERROR_INVALID_ARGUMENT = 1, /* bad shape, dtype, stride, index, size or value */
    POSATTN_ERROR_UNSUPPORTED = 2,      /* no kernel for this request (e.g. unknown schedule) */
    POSATTN_ERROR_KERNEL = 3,           /* the kernel itself reported an error */
    POSATTN_ERROR_INTERNAL = 4
} posattn_status;

typedef enum posattn_dtype {
    POSATTN_FLOAT32 = 0,
    POSATTN_FLOAT64 = 1,
    POSATTN_INT32 = 2,
    POSATTN_INT64 = 3,
    POSATTN_BOOL = 4, /* one byte, 0 or 1 */
    POSATTN_FLOAT16 = 5, /* storage types: computed in float32, rounded once on store */
    POSATTN_BFLOAT16 = 6
} posattn_dtype;

typedef enum posattn_layout { POSATTN_LAYOUT_INTERLEAVED = 0, POSATTN_LAYOUT_HALF = 1 } posattn_layout;
typedef enum posattn_convention { POSATTN_VASWANI = 0, POSATTN_T2T = 1 } posattn_convention;

/* A non-owning view. shape is outermost-first; strides are in elements (NULL: row-major). */
/* memory: where data points (C++ posattn::Memory): POSATTN_HOST, or POSATTN_DEVICE for a buffer
 * of the call's GPU API the caller owns (a CUdeviceptr, a cl_mem), used in place, on "cuda" and
 * "opencl": every float32 operand may be one, except the tables and weights of attention's
 * variants; positions, token ids, key lengths and slopes are host memory. */
typedef enum posattn_memory { POSATTN_HOST = 0, POSATTN_DEVICE = 1 } posattn_memory;

typedef struct posattn_tensor {
    void *data;
    int32_t dtype; /* posattn_dtype */
    int32_t rank;
    const int64_t *shape;
    const int64_t *strides;
    int32_t memory; /* posattn_memory; 0 (host) in a zero-initialized struct */
} posattn_tensor;

posattn_status posattn_sinusoidal(const posattn_tensor *positions, const posattn_tensor *out, double base,
                                  int32_t layout, int32_t convention);
posattn_status posattn_sinusoidal_add(const posattn_tensor *x, const posattn_tensor *positions,
                                      const posattn_tensor *out, double base, int32_t layout, int32_t convention);
posattn_status posattn_learned(const posattn_tensor *table, const posattn_tensor *positions,
                               const posattn_tensor *out, int64_t offset);
posattn_status posattn_learned_add(const posattn_tensor *x, const posattn_tensor *table,
                                   const posattn_tensor *positions, const posattn_tensor *out, int64_t offset);
/* The simple encodings (contract §3); the _add forms compute out = x + PE. */
typedef enum posattn_normalized_mode {
    POSATTN_NORMALIZED_MINUS_ONE = 0, /* p/(L-1) */
    POSATTN_NORMALIZED_LENGTH = 1     /* p/L */
} posattn_normalized_mode;

posattn_status posattn_integer(const posattn_tensor *positions, const posattn_tensor *out);
posattn_status posattn_integer_add(const posattn_tensor *x, const posattn_tensor *positions, const posattn_tensor *out);
/* length: L, or 0 for the largest position + 1 of each sequence. */
posattn_status posattn_normalized(const posattn_tensor *positions, const posattn_tensor *out, int64_t length,
                                  int32_t mode);
posattn_status posattn_normalized_add(const posattn_tensor *x, const posattn_tensor *positions,
                                      const posattn_tensor *out, int64_t length, int32_t mode);
/* signed_values, msb_first: 0 or 1. */
posattn_status posattn_binary(const posattn_tensor *positions, const posattn_tensor *out, int32_t signed_values,
                              int32_t msb_first);
posattn_status posattn_binary_add(const posattn_tensor *x, const posattn_tensor *positions, const posattn_tensor *out,
                                  int32_t signed_values, int32_t msb_first);
posattn_status posattn_sin_only(const posattn_tensor *positions, const posattn_tensor *out, double base);
posattn_status posattn_sin_only_add(const posattn_tensor *x, const posattn_tensor *positions,
                                    const posattn_tensor *out, double base);

/* RoPE (contract §6). */
typedef enum posattn_rope_layout { POSATTN_ROPE_NEOX = 0, POSATTN_ROPE_GPTJ = 1 } posattn_rope_layout;
typedef enum posattn_rope_scaling_type {
    POSATTN_ROPE_UNSCALED = 0,
    POSATTN_ROPE_LINEAR = 1,
    POSATTN_ROPE_NTK = 2,
    POSATTN_ROPE_DYNAMIC = 3,
    POSATTN_ROPE_YARN = 4,
    POSATTN_ROPE_LLAMA3 = 5,
    POSATTN_ROPE_LONGROPE = 6
} posattn_rope_scaling_type;
/* The fields each type reads are those of posattn::RopeScaling (posattn.hpp). Start from
 * posattn_rope_scaling_init(), which sets HF's defaults. */
typedef struct posattn_rope_scaling {
    int32_t type; /* posattn_rope_scaling_type */
    double factor;
    int64_t original_max_position_embeddings, max_position_embeddings;
    double beta_fast, beta_slow;
    int32_t truncate;
    double mscale, mscale_all_dim;
    double attention_factor; /* NaN: the type's default */
    double low_freq_factor, high_freq_factor;
    const double *short_factor, *long_factor; /* longrope: factor_count = rotary_dim/2 entries each */
    int64_t factor_count;
} posattn_rope_scaling;

void posattn_rope_scaling_init(posattn_rope_scaling *scaling, int32_t type);
/* inv_freq: rotary_dim/2 doubles written; attention_factor: one double. scaling may be NULL. */
posattn_status posattn_rope_frequencies(int64_t rotary_dim, double base, const posattn_rope_scaling *scaling,
                                        int64_t seq_len, double *inv_freq, double *attention_factor);
/* x, out [B, H, L, D] float32 (out may be x); positions int32 [L] or [B, L], or NULL for 0 ... L-1;
 * rotary_dim 0 for D; scaling NULL for none; seq_len 0 for max(positions) + 1. */
posattn_status posattn_rope(const posattn_tensor *x, const posattn_tensor *out, const posattn_tensor *positions,
                            double base, int32_t layout, int64_t rotary_dim, const posattn_rope_scaling *scaling,
                            int64_t seq_len);

/* Complex-order embeddings (contract §4). phase may be NULL (the public code has none). */
posattn_status posattn_complex_order(const posattn_tensor *token_ids, const posattn_tensor *positions,
                                     const posattn_tensor *amplitude, const posattn_tensor *frequency,
                                     const posattn_tensor *phase, const posattn_tensor *real,
                                     const posattn_tensor *imag);
typedef enum posattn_complex_order_init {
    POSATTN_COMPLEX_ORDER_TRANSLATION = 0,   /* 10000^(-2 floor(c/2)/d), every word */
    POSATTN_COMPLEX_ORDER_CLASSIFICATION = 1 /* w * 10000^(-2c/d) */
} posattn_complex_order_init;
posattn_status posattn_complex_order_frequency_init(const posattn_tensor *out, int32_t kind);

/* FLOATER (contract §5): p0 [d] or [batch, d]; W1 [hidden, d+1], b1 [hidden], W2 [d, hidden+1], b2 [d];
 * out [N, d] or [batch, N, d]. */
typedef enum posattn_floater_method {
    POSATTN_FLOATER_RK4_38 = 0, /* torchdiffeq's "rk4" */
    POSATTN_FLOATER_RK4 = 1,
    POSATTN_FLOATER_MIDPOINT = 2,
    POSATTN_FLOATER_EULER = 3
} posattn_floater_method;
posattn_status posattn_floater(const posattn_tensor *p0, const posattn_tensor *W1, const posattn_tensor *b1,
                               const posattn_tensor *W2, const posattn_tensor *b2, const posattn_tensor *out, double dt,
                               int64_t substeps, int32_t method);

/* ALiBi (contract §7). */
typedef enum posattn_alibi_form {
    POSATTN_ALIBI_RELATIVE = 0,     /* -m(i-j) */
    POSATTN_ALIBI_KEY_POSITION = 1, /* +m*j */
    POSATTN_ALIBI_SYMMETRIC = 2     /* -m|i-j| */
} posattn_alibi_form;
/* slopes: `heads` doubles written. */
posattn_status posattn_alibi_slopes(int64_t heads, double *slopes);
/* slopes float64 or float32 [H]; out float32 [H, Lq, Lk]. */
posattn_status posattn_alibi_bias(const posattn_tensor *slopes, const posattn_tensor *out, int32_t form);

/* T5's bucket of rel = key - query (contract §9), written to *bucket. */
posattn_status posattn_t5_bucket(int64_t rel, int32_t bidirectional, int64_t num_buckets, int64_t max_distance,
                                 int64_t *bucket);

/* The masks and scale of every attention call; posattn_attention_options_init() sets the defaults
 * (no mask, the variant's scale). options NULL means the defaults. */
typedef struct posattn_attention_options {
    int32_t has_scale; /* 0: the variant's default scale */
    double scale;
    int32_t causal;                     /* bottom-right aligned */
    const posattn_tensor *key_lengths;  /* int32 [B], or NULL */
    int64_t window;                     /* > 0: sliding window, p_i - j < window */
    int32_t unchecked_values;           /* nonzero: q, k, v not scanned for NaN/Inf (C++ check_finite = false) */
    const posattn_tensor *key_starts;   /* int32 [B], or NULL: keys j < key_starts[b] are masked (left padding) */
    const posattn_tensor *q_segments;   /* int32 [B, Lq] and k_segments [B, Lk], both or neither: a query */
    const posattn_tensor *k_segments;   /* sees only the keys of its own segment (packed sequences) */
    const posattn_tensor *query_lengths; /* int32 [B], or NULL: query rows i >= query_lengths[b] are 0 */
    /* Broadcast to [B, Hq, Lq, Lk] (rank 2 to 4, each dimension 1 or the full extent), or NULL: */
    const posattn_tensor *mask; /* POSATTN_BOOL, nonzero = may attend */
    const posattn_tensor *bias; /* float32, added to the scaled logits; -inf masks, NaN and +inf are refused */
} posattn_attention_options;
void posattn_attention_options_init(posattn_attention_options *options);

/* Plain attention: q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] -> out [B, Hq, Lq, Dv]. */
posattn_status posattn_attention(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                 const posattn_tensor *out, const posattn_attention_options *options);

/* Each variant below: posattn_attention plus the variant's arguments. */

/* ALiBi's bias (contract §7): alibi_slopes float32 or float64 [Hq], form posattn_alibi_form. */
posattn_status posattn_attention_alibi(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                       const posattn_tensor *out, const posattn_attention_options *options,
                                       const posattn_tensor *alibi_slopes, int32_t form);
/* T5's bias t5_table[bucket(key - query), h] (contract §9): t5_table float32 [num_buckets, Hq]; the
 * default scale is 1 here (T5 does not scale q.k). */
posattn_status posattn_attention_t5(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                    const posattn_tensor *out, const posattn_attention_options *options,
                                    const posattn_tensor *t5_table, int32_t bidirectional, int64_t max_distance);

/* RoPE attention (contract §6): q and k rotated inside the kernel. q_positions int32 [Lq] or [B, Lq]
 * and k_positions [Lk] or [B, Lk], or NULL for the defaults (keys 0 ... Lk-1, queries at the
 * last Lq of them); rotary_dim 0 means D; seq_len 0 means max(key position) + 1. */
posattn_status posattn_attention_rope(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                      const posattn_tensor *out, const posattn_attention_options *options, double base,
                                      int32_t layout, int64_t rotary_dim, const posattn_rope_scaling *scaling,
                                      const posattn_tensor *q_positions, const posattn_tensor *k_positions,
                                      int64_t seq_len);

/* Shaw et al. (contract §8): rel_k float32 [2K+1, D] or [Hq, 2K+1, D], rel_v [2K+1, Dv] or [Hq, 2K+1, Dv]. */
posattn_status posattn_attention_shaw(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                      const posattn_tensor *out, const posattn_attention_options *options,
                                      const posattn_tensor *rel_k, const posattn_tensor *rel_v);

/* Transformer-XL (contract §10): r float32 [R, D] or [Hq, R, D] in ascending distance; u, v_bias
 * [Hq, D]; clamp_len 0: none; same_length: mem_len, or 0. Needs causal (or key lengths that
 * hide every later key). */
posattn_status posattn_attention_transformer_xl(const posattn_tensor *q, const posattn_tensor *k,
                                                const posattn_tensor *v, const posattn_tensor *out,
                                                const posattn_attention_options *options, const posattn_tensor *r,
                                                const posattn_tensor *u, const posattn_tensor *v_bias,
                                                int64_t clamp_len, int64_t same_length);

typedef enum posattn_deberta_p2c_index { POSATTN_DEBERTA_P2C_CODE = 0, POSATTN_DEBERTA_P2C_PAPER = 1 } posattn_deberta_p2c_index;
/* DeBERTa v2/v3 (contract §11): rel_embeddings float32 [>= 2 span, hidden]; w_key/w_query [Hq*D, hidden]
 * (c2p / p2c, NULL: that term off) and b_key/b_query [Hq*D] or NULL. position_buckets <= 0: no
 * log buckets; max_relative_positions < 1: 512. */
posattn_status posattn_attention_deberta(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                         const posattn_tensor *out, const posattn_attention_options *options,
                                         const posattn_tensor *rel_embeddings, const posattn_tensor *w_key,
                                         const posattn_tensor *b_key, const posattn_tensor *w_query,
                                         const posattn_tensor *b_query, int64_t position_buckets,
                                         int64_t max_relative_positions, int32_t p2c_index);
/* DeBERTa's relative position of delta = query - key (contract §11), written to *bucket. */
posattn_status posattn_deberta_bucket(int64_t delta, int64_t position_buckets, int64_t max_relative_positions,
                                      int64_t *bucket);

/* A variant of one's own (C++ CustomAttention): the kernel `kernel`, added with posattn_add_kernel
 * or posattn_load_kernel, with its inputs by argument name: input_count tensors and scalar_count
 * numbers (converted to the kernel's scalar types). */
posattn_status posattn_attention_custom(const posattn_tensor *q, const posattn_tensor *k, const posattn_tensor *v,
                                        const posattn_tensor *out, const posattn_attention_options *options,
                                        const char *kernel, int32_t input_count, const char *const *input_names,
                                        const posattn_tensor *inputs, int32_t scalar_count,
                                        const char *const *scalar_names, const double *scalars);
/* Adds a kernel compiled outside this library (C++ add_kernel, load_kernel): its Halide entry
 * points, or the shared library at `path` exporting <symbol>_argv and <symbol>_metadata; as the
 * "hand" schedule of `function` on the CPU. */
struct halide_filter_metadata_t;
posattn_status posattn_add_kernel(const char *function, int (*argv)(void **),
                                  const struct halide_filter_metadata_t *(*metadata)(void));
posattn_status posattn_load_kernel(const char *path, const char *symbol, const char *function);

/* out = x * weight^T + bias, as torch's Linear: x float32 [N, E], weight [O, E], bias [O] or NULL, out [N, O]. */
posattn_status posattn_linear(const posattn_tensor *x, const posattn_tensor *weight, const posattn_tensor *bias,
                              const posattn_tensor *out);

/* The threads of the CPU kernels' pool (Halide's): 0 <= threads <= 256, 0 for one per core (a
 * big.LITTLE phone may want its big cores' count). */
posattn_status posattn_set_num_threads(int32_t threads);
/* Where the kernels' scratch memory comes from (C++ posattn::set_allocator): allocate(context, size,
 * alignment) returns size bytes aligned to alignment (a power of two) or NULL; release(context,
 * block) frees a block it returned. Both NULL (the default): posattn's own, which keeps freed blocks
 * for reuse. Each block goes back to the allocator that made it, by the call that took it. */
typedef void *(*posattn_allocate_fn)(void *context, size_t size, size_t alignment);
typedef void (*posattn_release_fn)(void *context, void *block);
posattn_status posattn_set_allocator(posattn_allocate_fn allocate, posattn_release_fn release, void *context);
/* What this library holds: kernel `index`, 0 <= index < posattn_kernel_count(), as its function
 * (posattn_attn_plain_f16_decode), target family ("x86", "arm", "cuda", ...), schedule ("hand" or
 * a baseline) and the Halide targets compiled in, ","-joined (a CPU kernel's ISA levels). The
 * strings live as long as the library. */
typedef struct posattn_kernel_info {
    const char *function, *family, *schedule, *targets;
} posattn_kernel_info;
int32_t posattn_kernel_count(void);
posattn_status posattn_kernel_at(int32_t index, posattn_kernel_info *info);
/* Where this thread's following calls run: "cpu" (the default), "cuda", "opencl" or "vulkan"; host
 * tensors are copied by the runtime (device buffers: posattn_memory). A kernel not built for that
 * device, or a device the machine lacks, fails the call with POSATTN_ERROR_UNSUPPORTED or
 * POSATTN_ERROR_KERNEL. */
posattn_status posattn_set_device(const char *device);
/* The context and queue the kernels on `device` run in (OpenCL: cl_context, cl_command_queue;
 * CUDA: CUcontext, CUstream), created on first use: where device buffers for posattn are made. */
posattn_status posattn_device_context(const char *device, void **context, void **queue);
/* Which compiled schedule this thread's following calls use: "hand" (the default) or the name of
 * an autoscheduled baseline built with the kernel (e.g. "adams2019"). */
posattn_status posattn_set_schedule(const char *schedule);
/* The message of the last failed call on this thread ("" if none). */
const char *posattn_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* POSATTN_H */
