/* ggml's CPU flash attention (ggml_flash_attn_ext, float32 q, k and v, no mask) as bench/peers.py
 * calls it through ctypes: the graph is built once per case, as llama.cpp builds a decoding
 * step's, and each call computes it on the given threads; the caller's arrays are ggml's tensors.
 * Built by scripts/ggml.sh against the ggml that llama-cpp-python vendors (PyPI sdist).
 *
 *   q [B, Hq, Lq, D], k and v [B, Hkv, Lk, D] (row-major, as posattn takes them: ggml's ne order
 *   [D, L, H, B] is the same memory); out [B, Lq, Hq, D] (ggml's result is permuted).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ggml-cpu.h"
#include "ggml.h"

typedef struct {
    struct ggml_context *ctx;
    struct ggml_cgraph *graph;
    struct ggml_cplan plan;
    struct ggml_threadpool *pool;
    uint8_t *work;
} Attention;

Attention *ggml_attention_new(float *q, float *k, float *v, float *out, int64_t B, int64_t Hq, int64_t Hkv,
                              int64_t Lq, int64_t Lk, int64_t D, int threads) {
    Attention *a = calloc(1, sizeof(Attention));
    struct ggml_init_params params = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, /*no_alloc=*/true};
    a->ctx = ggml_init(params);
    struct ggml_tensor *tq = ggml_new_tensor_4d(a->ctx, GGML_TYPE_F32, D, Lq, Hq, B),
                       *tk = ggml_new_tensor_4d(a->ctx, GGML_TYPE_F32, D, Lk, Hkv, B),
                       *tv = ggml_new_tensor_4d(a->ctx, GGML_TYPE_F32, D, Lk, Hkv, B);
    tq->data = q, tk->data = k, tv->data = v;
    struct ggml_tensor *result = ggml_flash_attn_ext(a->ctx, tq, tk, tv, NULL, 1.0f / sqrtf((float)D), 0.0f, 0.0f);
    result->data = out;
    a->graph = ggml_new_graph(a->ctx);
    ggml_build_forward_expand(a->graph, result);
    struct ggml_threadpool_params pool = ggml_threadpool_params_default(threads);
    a->pool = ggml_threadpool_new(&pool);
    a->plan = ggml_graph_plan(a->graph, threads, a->pool);
    a->work = a->plan.work_size ? malloc(a->plan.work_size) : NULL;
    a->plan.work_data = a->work;
    return a;
}

int ggml_attention_run(Attention *a) { return ggml_graph_compute(a->graph, &a->plan) == GGML_STATUS_SUCCESS ? 0 : 1; }

void ggml_attention_free(Attention *a) {
    ggml_threadpool_free(a->pool);
    ggml_free(a->ctx);
    free(a->work);
    free(a);
}
