"""KERPLE and FIRE from this project's kernels against NumPy in float64: causal GQA attention with
padded keys, a prompt and a decoding step, every element of a poisoned output checked.

    python check.py build/libcustom_attention.so
"""
import sys

import numpy as np

import posattn
import variants

# The bound on |posattn − float64| per element, as a fraction of max |v|: the float32 kernel's
# rounding of scores, weights and sums, and fast_log's of the bias (Halide: all but the last 5 bits
# of the mantissa), each moving a softmax weight relatively by about that much. Errors seen: below
# 2^-21 (AMD EPYC, these shapes).
BOUND = 2.0 ** -18


def main(library):
    variants.load(library)
    rng = np.random.default_rng()
    worst = {}
    for B, Hq, Hkv, Lq, Lk, D in [(2, 8, 2, 100, 100, 64), (3, 8, 4, 1, 300, 64), (1, 4, 1, 37, 80, 32)]:
        params = variants.parameters(rng, Hq)
        q = rng.normal(size=(B, Hq, Lq, D)).astype(np.float32)
        k = rng.normal(size=(B, Hkv, Lk, D)).astype(np.float32)
        v = rng.normal(size=(B, Hkv, Lk, D)).astype(np.float32)
        key_lengths = rng.integers(Lk - Lq + 1, Lk + 1, size=B).astype(np.int32)  # every row sees a key
        for variant in ("kerple", "fire"):
            out = np.full((B, Hq, Lq, D), np.nan, np.float32)
            posattn.attention(q, k, v, causal=True, key_lengths=key_lengths, out=out,
                              custom=variants.custom(variant, params[variant]))
            expected = variants.reference(q, k, v, variants.bias(variant, params[variant], Lq, Lk), key_lengths)
            error = np.abs(out - expected).max() / np.abs(v).max()
            worst[variant] = max(worst.get(variant, 0), error)
            assert np.isfinite(out).all() and error <= BOUND, f"{variant} {q.shape}: error {error:.3g} > {BOUND:.3g}"
    print("check: ok (" + ", ".join(f"{name} max error {e:.2g}·max|v|" for name, e in worst.items()) + f"; bound {BOUND:.2g})")


if __name__ == "__main__":
    main(sys.argv[1])
