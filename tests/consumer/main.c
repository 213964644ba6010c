/* posattn's C ABI from a C program: ALiBi's bias against its formula, -m_h (i - j), every element. */
#include <math.h>
#include <stdio.h>

#include "posattn/posattn.h"

enum { H = 3, LQ = 4, LK = 7 };

int main(void) {
    double slopes[H];
    float bias[H * LQ * LK];
    int64_t slopes_shape[1] = {H}, bias_shape[3] = {H, LQ, LK};
    posattn_tensor s = {slopes, POSATTN_FLOAT64, 1, slopes_shape, NULL};
    posattn_tensor b = {bias, POSATTN_FLOAT32, 3, bias_shape, NULL};
    for (int e = 0; e < H * LQ * LK; e++) bias[e] = NAN;
    if (posattn_alibi_slopes(H, slopes) != POSATTN_OK || posattn_alibi_bias(&s, &b, POSATTN_ALIBI_RELATIVE) != POSATTN_OK) {
        fprintf(stderr, "consumer_c: %s\n", posattn_last_error());
        return 1;
    }
    for (int h = 0; h < H; h++)
        for (int r = 0; r < LQ; r++)
            for (int j = 0; j < LK; j++) {
                float expected = (float)(-slopes[h] * (double)(r + LK - LQ - j));
                if (bias[(h * LQ + r) * LK + j] != expected) {
                    fprintf(stderr, "consumer_c: bias[%d, %d, %d] = %g, expected %g\n", h, r, j,
                            bias[(h * LQ + r) * LK + j], expected);
                    return 1;
                }
            }
    if (posattn_alibi_bias(&s, NULL, 0) != POSATTN_ERROR_INVALID_ARGUMENT) return 1;
    printf("consumer_c: ok\n");
    return 0;
}
