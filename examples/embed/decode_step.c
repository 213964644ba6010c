/* One decoding step of a small Llama-style attention block through posattn's C ABI alone, as an
 * app embeds it (libposattn_embed.a; docs/embedding.md): float16 weights, activations and KV
 * cache, the cache stored token-major and filled up to `position`.
 *
 *   q, k, v = x Wq^T, x Wk^T, x Wv^T      (v written straight into the cache's next slot)
 *   q, k    = RoPE at `position`          (k's rotated rows land in the cache: the append)
 *   a       = GQA attention of q over the first position + 1 cached keys
 *   y       = a Wo^T
 *
 * Usage: decode_step [dump-file]. It prints the model's sizes and the kernels it ran; with a file,
 * it also writes every input and output there (tests/test_embed.py checks them against float64). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posattn/posattn.h"

enum { E = 256, Hq = 8, Hkv = 2, D = 32, CAPACITY = 64, POSITION = 40 };
typedef _Float16 half; /* (GCC 12+ and Clang on x86-64 and AArch64) */

#define CHECK(call)                                                          \
    do {                                                                     \
        if ((call) != POSATTN_OK) {                                          \
            fprintf(stderr, "%s failed: %s\n", #call, posattn_last_error()); \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

static posattn_tensor tensor(half *data, int32_t rank, const int64_t *shape, const int64_t *strides) {
    posattn_tensor t = {data, POSATTN_FLOAT16, rank, shape, strides, POSATTN_HOST};
    return t;
}

/* Uniform in [-scale, scale), from a fixed seed: the same model on every run. */
static void fill(half *data, size_t n, float scale, uint32_t *state) {
    for (size_t i = 0; i < n; i++) {
        *state ^= *state << 13, *state ^= *state >> 17, *state ^= *state << 5;
        data[i] = (half)(scale * ((float)(*state >> 8) / (1 << 23) - 1.0f));
    }
}

/* The app's allocator for the kernels' scratch (here aligned_alloc, counted; called from the
 * kernels' worker threads too). */
static atomic_size_t scratch_blocks;
static void *allocate(void *context, size_t size, size_t alignment) {
    (void)context;
    atomic_fetch_add(&scratch_blocks, 1);
    return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
static void release(void *context, void *block) {
    (void)context;
    free(block);
}

int main(int argc, char **argv) {
    CHECK(posattn_set_num_threads(2)); /* e.g. a phone's big cores */
    CHECK(posattn_set_allocator(allocate, release, NULL));

    static half x[E], wq[Hq * D * E], wk[Hkv * D * E], wv[Hkv * D * E], wo[E * Hq * D];
    static half k_cache[CAPACITY * Hkv * D], v_cache[CAPACITY * Hkv * D], q[Hq * D], k_new[Hkv * D], a[Hq * D], y[E];
    uint32_t seed = 12345;
    fill(x, E, 1.0f, &seed);
    fill(wq, Hq * D * E, 0.0625f, &seed); /* 1/sqrt(E) */
    fill(wk, Hkv * D * E, 0.0625f, &seed);
    fill(wv, Hkv * D * E, 0.0625f, &seed);
    fill(wo, E * Hq * D, 0.0625f, &seed);
    fill(k_cache, CAPACITY * Hkv * D, 1.0f, &seed); /* rows past POSITION: stale, never read */
    fill(v_cache, CAPACITY * Hkv * D, 1.0f, &seed);

    /* The projections, [1, E] -> [1, H*D]; v straight into the cache's slot POSITION. */
    const int64_t x_shape[] = {1, E}, wq_shape[] = {Hq * D, E}, wkv_shape[] = {Hkv * D, E}, wo_shape[] = {E, Hq * D};
    const int64_t q_flat[] = {1, Hq * D}, kv_flat[] = {1, Hkv * D}, y_shape[] = {1, E};
    posattn_tensor tx = tensor(x, 2, x_shape, NULL), tq = tensor(q, 2, q_flat, NULL), tk = tensor(k_new, 2, kv_flat, NULL);
    posattn_tensor twq = tensor(wq, 2, wq_shape, NULL), twk = tensor(wk, 2, wkv_shape, NULL);
    posattn_tensor twv = tensor(wv, 2, wkv_shape, NULL), two = tensor(wo, 2, wo_shape, NULL);
    posattn_tensor v_slot = tensor(v_cache + POSITION * Hkv * D, 2, kv_flat, NULL);
    CHECK(posattn_linear(&tx, &twq, NULL, &tq));
    CHECK(posattn_linear(&tx, &twk, NULL, &tk));
    CHECK(posattn_linear(&tx, &twv, NULL, &v_slot));

    /* RoPE on q in place, and on k into the cache ([B, H, L, D] views of token-major rows). */
    const int32_t position = POSITION;
    const int64_t one[] = {1}, q_heads[] = {1, Hq, 1, D}, k_heads[] = {1, Hkv, 1, D};
    const int64_t cache_strides[] = {CAPACITY * Hkv * D, D, Hkv * D, 1};
    posattn_tensor positions = {(void *)&position, POSATTN_INT32, 1, one, NULL, POSATTN_HOST};
    posattn_tensor q4 = tensor(q, 4, q_heads, NULL), k4 = tensor(k_new, 4, k_heads, NULL);
    posattn_tensor k_slot = tensor(k_cache + POSITION * Hkv * D, 4, k_heads, cache_strides);
    CHECK(posattn_rope(&q4, &q4, &positions, 10000.0, POSATTN_ROPE_NEOX, 0, NULL, 0));
    CHECK(posattn_rope(&k4, &k_slot, &positions, 10000.0, POSATTN_ROPE_NEOX, 0, NULL, 0));

    /* GQA attention over the cache's first POSITION + 1 keys. */
    const int32_t length = POSITION + 1;
    const int64_t cache_shape[] = {1, Hkv, CAPACITY, D};
    posattn_tensor lengths = {(void *)&length, POSATTN_INT32, 1, one, NULL, POSATTN_HOST};
    posattn_tensor keys = tensor(k_cache, 4, cache_shape, cache_strides), values = tensor(v_cache, 4, cache_shape, cache_strides);
    posattn_tensor out = tensor(a, 4, q_heads, NULL);
    posattn_attention_options options;
    posattn_attention_options_init(&options);
    options.key_lengths = &lengths;
    CHECK(posattn_attention(&q4, &keys, &values, &out, &options));

    posattn_tensor ta = tensor(a, 2, q_flat, NULL), ty = tensor(y, 2, y_shape, NULL);
    CHECK(posattn_linear(&ta, &two, NULL, &ty));

    printf("sizes E=%d Hq=%d Hkv=%d D=%d capacity=%d position=%d\n", E, Hq, Hkv, D, CAPACITY, POSITION);
    int32_t count = posattn_kernel_count();
    for (int32_t i = 0; i < count; i++) {
        posattn_kernel_info info;
        CHECK(posattn_kernel_at(i, &info));
        if (strcmp(info.function, "posattn_attn_plain_f16_decode") == 0 && strcmp(info.schedule, "hand") == 0)
            printf("kernel %s on %s: %s\n", info.function, info.family, info.targets);
    }
    printf("%d kernels in the library; %zu scratch blocks from the app's allocator\n", count, atomic_load(&scratch_blocks));
    printf("y[0..3] = %.4f %.4f %.4f %.4f\n", (double)y[0], (double)y[1], (double)y[2], (double)y[3]);

    if (argc > 1) {
        FILE *f = fopen(argv[1], "wb");
        if (!f) return perror(argv[1]), 1;
        const struct { const half *data; size_t count; } arrays[] = {
            {x, E}, {wq, Hq * D * E}, {wk, Hkv * D * E}, {wv, Hkv * D * E}, {wo, E * Hq * D},
            {k_cache, CAPACITY * Hkv * D}, {v_cache, CAPACITY * Hkv * D}, {q, Hq * D}, {a, Hq * D}, {y, E}};
        for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
            if (fwrite(arrays[i].data, sizeof(half), arrays[i].count, f) != arrays[i].count) return perror(argv[1]), 1;
        fclose(f);
    }
    return 0;
}
