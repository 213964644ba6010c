// KERPLE (Chi et al., 2022), its logarithmic kernel: the bias −r1_h·log(1 + r2_h·|i − j|) of a query
// at position i and key j, added to the scaled logits; r1, r2 > 0 are learned per head.
#include "attention_generator.h"

using namespace Halide;

class Kerple : public posattn::AttentionGenerator<Kerple> {
public:
    Input<Buffer<float, 1>> r1{"r1"}, r2{"r2"};  // [Hq]

    posattn::AttentionDeclaration declaration() {
        r1.set_estimates({{0, 8}});
        r2.set_estimates({{0, 8}});
        // A bias of the query − key offset and the head alone: computed once per call per offset.
        posattn::AttentionDeclaration decl;
        decl.offset_biases.push_back([this](const Expr &offset, const Expr &head) {
            // fast_log: a polynomial that vectorizes (log calls libm lane by lane), exact to all but the
            // last 5 bits of the mantissa (Halide's documentation).
            return -r1(head) * fast_log(1.0f + r2(head) * abs(cast<float>(offset)));
        });
        return decl;
    }
};

HALIDE_REGISTER_GENERATOR(Kerple, kerple_attention)
