"""python -m posattn: a few of posattn's kernels on fresh random inputs, each beside the contract's
float64 reference in NumPy (posattn.reference): the largest error, the time of a call, and the
reference's time over posattn's. The benchmark of every kernel is `make run` in the repository."""
import time

import numpy as np

import posattn
from posattn import reference


def best_time(fn, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    rng = np.random.default_rng()
    q = rng.standard_normal((1, 8, 512, 64), dtype=np.float32)
    k, v = (rng.standard_normal((1, 2, 512, 64), dtype=np.float32) for _ in range(2))  # GQA 4
    x = rng.standard_normal((1, 8, 512, 64), dtype=np.float32)
    positions = np.arange(2048)
    slopes = posattn.alibi_slopes(8)
    alibi = reference.alibi_bias(slopes, 512, 512)[None]
    inv_freq, _ = reference.rope_inv_freq(64)
    rows = [
        ("attention, causal, GQA [1, 8, 512, 64]", lambda: posattn.attention(q, k, v, causal=True),
         lambda: reference.attention(q, k, v, causal=True)),
        ("attention + ALiBi", lambda: posattn.attention(q, k, v, alibi_slopes=slopes),
         lambda: reference.attention(q, k, v, bias=alibi)),
        ("RoPE [1, 8, 512, 64]", lambda: posattn.rope(x), lambda: reference.rope(x, np.arange(512), inv_freq)),
        ("sinusoidal [2048, 1024]", lambda: posattn.sinusoidal(positions, 1024),
         lambda: reference.sinusoidal(positions, 1024)),
    ]
    print(f"posattn: {len(posattn.kernels())} compiled kernels; float64 reference: posattn.reference")
    print(f"{'call':42} {'max error':>10} {'posattn ms':>11} {'reference / posattn':>20}")
    for name, call, ref in rows:
        error = np.abs(call().astype(np.float64) - ref()).max()
        ours, numpy_time = best_time(call), best_time(ref, repeats=2)
        print(f"{name:42} {error:10.2e} {ours * 1e3:11.3f} {numpy_time / ours:19.1f}x")


if __name__ == "__main__":
    main()
