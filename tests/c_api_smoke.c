/* Compiles and links the C ABI from plain C; the behaviour is tested by tests/test_c_api.py. */
#include "posattn/posattn.h"

#include <stdio.h>

int main(void) {
    int32_t positions[3] = {0, 1, 2};
    float out[3 * 4];
    int64_t pshape[1] = {3}, oshape[2] = {3, 4};
    posattn_tensor p = {positions, POSATTN_INT32, 1, pshape, NULL};
    posattn_tensor o = {out, POSATTN_FLOAT32, 2, oshape, NULL};
    posattn_status s = posattn_sinusoidal(&p, &o, 10000.0, POSATTN_LAYOUT_INTERLEAVED, POSATTN_VASWANI);
    if (s != POSATTN_OK || out[0] != 0.0f || out[1] != 1.0f) {
        fprintf(stderr, "posattn_sinusoidal: status %d (%s)\n", (int)s, posattn_last_error());
        return 1;
    }
    s = posattn_sinusoidal(&p, NULL, 10000.0, 0, 0);
    if (s != POSATTN_ERROR_INVALID_ARGUMENT) return 1;
    printf("c_api_smoke: ok (%s)\n", posattn_last_error());
    return 0;
}
