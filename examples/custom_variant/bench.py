"""KERPLE and FIRE against posattn's plain attention on the same call (causal prompt, B=1 H=8
L=2048 D=64, output allocated), timed alternately call by call: the median of per-pair ratios.
With torch installed, also its SDPA given the variant's bias as a float mask (computed once).

    python bench.py build/libcustom_attention.so [--pairs 15]
"""
import argparse
import platform
import statistics
import time

import numpy as np

import posattn
import variants


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def timed(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def ratios(a, b, pairs):
    """Median and quartiles of time(a) / time(b) over alternated pairs, and b's median seconds."""
    a(), b()  # warm
    rs, tb = [], []
    for n in range(pairs):
        ta_, tb_ = (timed(a), timed(b)) if n % 2 else (timed(b), timed(a))[::-1]
        rs.append(ta_ / tb_)
        tb.append(tb_)
    q = statistics.quantiles(rs, n=4)
    return statistics.median(rs), q[0], q[2], statistics.median(tb)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("library")
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    variants.load(args.library)
    B, H, L, D = 1, 8, 2048, 64
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(B, H, L, D)).astype(np.float32) for _ in range(3))
    params = variants.parameters(rng, H)
    plain = lambda: posattn.attention(q, k, v, causal=True)  # noqa: E731
    print(f"{cpu_model()}: causal attention B={B} H={H} L={L} D={D}, {args.pairs} alternated pairs")
    for variant in ("kerple", "fire"):
        call = lambda: posattn.attention(q, k, v, causal=True, custom=variants.custom(variant, params[variant]))  # noqa: E731
        r, lo, hi, seconds = ratios(plain, call, args.pairs)
        print(f"  {variant}: {seconds * 1e3:.2f} ms, speed {r:.2f}x plain (quartiles {lo:.2f}-{hi:.2f})")
        try:
            import torch
        except ImportError:
            continue
        bias = variants.bias(variant, params[variant], L, L)
        mask = torch.from_numpy(np.where(np.tril(np.ones((L, L), bool)), bias, -np.inf).astype(np.float32))
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)  # noqa: E731
        r, lo, hi, seconds = ratios(sdpa, call, args.pairs)
        print(f"  {variant}: torch SDPA with its bias {r * 1e3 * seconds:.2f} ms: posattn {r:.2f}x faster (quartiles {lo:.2f}-{hi:.2f})")


if __name__ == "__main__":
    main()
