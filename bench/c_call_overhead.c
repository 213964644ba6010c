/* Time per call of attention at decoding sizes through the C ABI, where the runtime's checks and
 * dispatch cost more than the kernel: the median over 15 runs of N back-to-back calls, beside the
 * bare decode kernel called with the same buffers (Halide's own entry point, no checks): the
 * difference is the runtime's overhead.
 *
 *     build/c_call_overhead [N]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "posattn/posattn.h"
#include "HalideRuntime.h"
#include "posattn_attn_plain_f32_decode1.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A dense halide_buffer_t over data of shape [B, H, L, C] (dims listed innermost first). */
static halide_buffer_t buffer4(void *data, struct halide_type_t type, halide_dimension_t *dim, int B, int H, int L, int C) {
    dim[0] = (halide_dimension_t){0, C, 1, 0}, dim[1] = (halide_dimension_t){0, L, C, 0};
    dim[2] = (halide_dimension_t){0, H, L * C, 0}, dim[3] = (halide_dimension_t){0, B, H * L * C, 0};
    return (halide_buffer_t){0, NULL, data, 0, type, 4, dim, NULL};
}

/* The one-row decode kernel alone on q [1, H, 1, D] against Lk <= 512 keys: every row sees keys [0, Lk), no
 * mask (a stand-in row read for every head and row), the runtime's scalars for this call. */
static int bare_kernel(float *q, float *k, float *v, float *o, int H, int Lk, int D) {
    static int32_t first = 0, end;
    static uint8_t no_mask[512];
    static float no_bias[512];
    end = Lk;
    halide_dimension_t dq[4], dk[4], dv[4], dout[4], dr[2] = {{0, 1, 1, 0}, {0, 1, 0, 0}}, dm[4], db[4];
    struct halide_type_t f32 = {halide_type_float, 32, 1}, i32 = {halide_type_int, 32, 1}, u8 = {halide_type_uint, 8, 1};
    halide_buffer_t bq = buffer4(q, f32, dq, 1, H, 1, D), bk = buffer4(k, f32, dk, 1, H, Lk, D),
                    bv = buffer4(v, f32, dv, 1, H, Lk, D), bo = buffer4(o, f32, dout, 1, H, 1, D),
                    bm = buffer4(no_mask, u8, dm, 1, H, 1, Lk), bb = buffer4(no_bias, f32, db, 1, H, 1, Lk);
    for (int d = 1; d < 4; d++) dm[d].stride = db[d].stride = 0;
    halide_buffer_t first_b = {0, NULL, (uint8_t *)&first, 0, i32, 2, dr, NULL}, end_b = first_b;
    end_b.host = (uint8_t *)&end;
    return posattn_attn_plain_f32_decode1(NULL, &bq, &bk, &bv, &first_b, &end_b, &first_b, &end_b, &bm, &bb, 0,
                                         1.0f / sqrtf((float)D), 1, Lk, &bo);
}

/* q [1, H, 1, D] against Lk keys, non-causal, the default scale. */
typedef struct {
    int64_t H, Lk, D, q_shape[4], kv_shape[4];
    float *q, *k, *v, *o;
    posattn_tensor tq, tk, tv, to;
} Call;

static void make_call(Call *c, int64_t H, int64_t Lk, int64_t D) {
    *c = (Call){H, Lk, D, {1, H, 1, D}, {1, H, Lk, D}};
    c->q = malloc(sizeof(float) * H * D), c->o = malloc(sizeof(float) * H * D);
    c->k = malloc(sizeof(float) * H * Lk * D), c->v = malloc(sizeof(float) * H * Lk * D);
    for (int64_t e = 0; e < H * Lk * D; e++) c->k[e] = c->v[e] = (float)((e * 37 % 101) - 50) / 50.0f;
    for (int64_t e = 0; e < H * D; e++) c->q[e] = (float)((e * 53 % 97) - 48) / 48.0f;
    c->tq = (posattn_tensor){c->q, POSATTN_FLOAT32, 4, c->q_shape, NULL, POSATTN_HOST};
    c->tk = (posattn_tensor){c->k, POSATTN_FLOAT32, 4, c->kv_shape, NULL, POSATTN_HOST};
    c->tv = (posattn_tensor){c->v, POSATTN_FLOAT32, 4, c->kv_shape, NULL, POSATTN_HOST};
    c->to = (posattn_tensor){c->o, POSATTN_FLOAT32, 4, c->q_shape, NULL, POSATTN_HOST};
}

static void run(Call *c, int bare) {
    if (bare ? bare_kernel(c->q, c->k, c->v, c->o, (int)c->H, (int)c->Lk, (int)c->D) != 0
             : posattn_attention(&c->tq, &c->tk, &c->tv, &c->to, NULL) != POSATTN_OK) {
        fprintf(stderr, "%s failed: %s\n", bare ? "the bare kernel" : "posattn_attention", bare ? "" : posattn_last_error());
        exit(1);
    }
}

/* Microseconds per call through the C ABI and of the bare kernel, each the median of 15 runs of
 * `calls` back-to-back calls, the two alternated run by run; the bare kernel's result is checked
 * to be the C ABI's (the same call). */
static void time_call(Call *c, int calls, double *api, double *kernel) {
    float *expected = malloc(sizeof(float) * c->H * c->D);
    run(c, 0);
    memcpy(expected, c->o, sizeof(float) * c->H * c->D);
    run(c, 1);
    if (memcmp(expected, c->o, sizeof(float) * c->H * c->D)) {
        fprintf(stderr, "the bare kernel's result differs from the C ABI's\n");
        exit(1);
    }
    enum { RUNS = 15 };
    double runs[2][RUNS];
    for (int r = 0; r < RUNS; r++)
        for (int side = 0; side < 2; side++) {
            int bare = side ^ (r & 1);
            double start = now_us();
            for (int n = 0; n < calls; n++) run(c, bare);
            runs[bare][r] = (now_us() - start) / calls;
        }
    qsort(runs[0], RUNS, sizeof(double), by_value), qsort(runs[1], RUNS, sizeof(double), by_value);
    *api = runs[0][RUNS / 2], *kernel = runs[1][RUNS / 2];
    free(expected);
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 5000;
    static const struct { const char *name; int64_t H, Lk, D; int divide; } cases[] = {
        {"attention [1, 1, 1, 64] x 1 key", 1, 1, 64, 1},
        {"decode step [1, 8, 1, 64] x 16 keys", 8, 16, 64, 1},
        {"decode step [1, 32, 1, 128] x 512 keys", 32, 512, 128, 20}};
    printf("%-40s %9s %9s %9s  (us a call)\n", "", "C ABI", "kernel", "overhead");
    for (int i = 0; i < 3; i++) {
        Call c;
        double api, kernel;
        make_call(&c, cases[i].H, cases[i].Lk, cases[i].D);
        time_call(&c, calls / cases[i].divide, &api, &kernel);
        printf("%-40s %9.2f %9.2f %9.2f\n", cases[i].name, api, kernel, api - kernel);
        free(c.q), free(c.k), free(c.v), free(c.o);
    }
    return 0;
}
