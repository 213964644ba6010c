// posattn's C++ API, statically linked, beside a kernel this project compiled from posattn's
// alibi_bias generator for its own target: both give the same bits, in every form. (posattn::jit,
// which needs the shared runtime, is refused.)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "HalideBuffer.h"
#include "consumer_alibi.h"
#include "posattn/posattn.hpp"

int main() {
    const int heads = 5, lq = 3, lk = 9;
    std::vector<double> slopes = posattn::alibi_slopes(heads);
    posattn::Tensor slopes_tensor{slopes.data(), posattn::DType::float64, {heads}};
    Halide::Runtime::Buffer<double, 1> slopes_buffer(slopes.data(), heads);
    for (int form = 0; form < 3; form++) {
        std::vector<float> runtime_out(heads * lq * lk, NAN);
        posattn::alibi_bias(slopes_tensor, {runtime_out.data(), posattn::DType::float32, {heads, lq, lk}},
                            posattn::AlibiForm(form));
        Halide::Runtime::Buffer<float, 3> own(lk, lq, heads);
        own.fill(NAN);
        if (consumer_alibi(slopes_buffer, form, own) != 0) return 1;
        for (int h = 0; h < heads; h++)
            for (int r = 0; r < lq; r++)
                for (int j = 0; j < lk; j++)
                    if (!(own(j, r, h) == runtime_out[(h * lq + r) * lk + j])) {
                        std::fprintf(stderr, "consumer_cpp: form %d [%d, %d, %d]: %g vs %g\n", form, h, r, j,
                                     own(j, r, h), runtime_out[(h * lq + r) * lk + j]);
                        return 1;
                    }
    }
    try {  // run-time compilation links against the shared runtime, which a static program has not
        posattn::jit("posattn_alibi_bias_f32");
        return 1;
    } catch (const posattn::Error &e) {
        if (e.kind() != posattn::Error::Kind::unsupported || !std::strstr(e.what(), "needs the shared runtime")) {
            std::fprintf(stderr, "consumer_cpp: jit: %s\n", e.what());
            return 1;
        }
    }
    try {
        posattn::alibi_bias(slopes_tensor, {nullptr, posattn::DType::float32, {heads, lq, lk}});
        return 1;
    } catch (const posattn::Error &e) {
        std::printf("consumer_cpp: ok (%s)\n", e.what());
    }
    return 0;
}
