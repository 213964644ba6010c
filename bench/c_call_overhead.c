/* Time per call of attention at decoding sizes through the C ABI, where the runtime's checks and
 * dispatch cost more than the kernel: the median over 7 runs of N back-to-back calls.
 *
 *     build/c_call_overhead [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "posattn/posattn.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* q [1, H, 1, D] against Lk keys, non-causal, the default scale. */
static double microseconds_per_call(int64_t H, int64_t Lk, int64_t D, int calls) {
    int64_t q_shape[4] = {1, H, 1, D}, kv_shape[4] = {1, H, Lk, D};
    float *q = malloc(sizeof(float) * H * D), *k = malloc(sizeof(float) * H * Lk * D),
          *v = malloc(sizeof(float) * H * Lk * D), *o = malloc(sizeof(float) * H * D);
    for (int64_t e = 0; e < H * Lk * D; e++) k[e] = v[e] = (float)((e * 37 % 101) - 50) / 50.0f;
    for (int64_t e = 0; e < H * D; e++) q[e] = (float)((e * 53 % 97) - 48) / 48.0f;
    posattn_tensor tq = {q, POSATTN_FLOAT32, 4, q_shape, NULL, POSATTN_HOST}, tk = {k, POSATTN_FLOAT32, 4, kv_shape, NULL, POSATTN_HOST},
                   tv = {v, POSATTN_FLOAT32, 4, kv_shape, NULL, POSATTN_HOST}, to = {o, POSATTN_FLOAT32, 4, q_shape, NULL, POSATTN_HOST};
    double runs[7];
    for (int r = -1; r < 7; r++) {  /* run -1: warm-up */
        double start = now_us();
        for (int c = 0; c < calls; c++)
            if (posattn_attention(&tq, &tk, &tv, &to, NULL, 0, NULL) != POSATTN_OK) {
                fprintf(stderr, "posattn_attention failed: %s\n", posattn_last_error());
                exit(1);
            }
        if (r >= 0) runs[r] = (now_us() - start) / calls;
    }
    qsort(runs, 7, sizeof(double), by_value);
    free(q), free(k), free(v), free(o);
    return runs[3];
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 20000;
    printf("attention [1, 1, 1, 64] x 1 key        %7.2f us a call\n", microseconds_per_call(1, 1, 64, calls));
    printf("decode step [1, 8, 1, 64] x 16 keys    %7.2f us a call\n", microseconds_per_call(8, 16, 64, calls));
    printf("decode step [1, 32, 1, 128] x 512 keys %7.2f us a call\n", microseconds_per_call(32, 512, 128, calls / 10));
    return 0;
}
