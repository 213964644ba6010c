"""What masks cost (docs/benchmarks.md): each masked call against the same call without its mask,
timed alternately, the ratio the median of per-pair speed ratios (this machine's drift cancels).
B = 1, H = 8, L = 2048, D = 64, as bench.py:

- a dense boolean mask [1, 1, L, L] (90% True) and a dense float bias [1, H, L, L] against plain
  attention (the bars: 0.8x and 0.75x its speed);
- every variant, causal, with an all-True mask against the same variant without it (0.9x), and
  a causal mask given as a boolean tril against causal=True: a mask whose rows are runs of True
  keys is turned into per-row key ranges (the dense mask above measures the per-logit path);
- 8 packed causal documents of 256 tokens (q_segments / k_segments) against one causal sequence
  of 2048 (4x faster: the key blocks of other documents are skipped).

    PYTHONPATH=build/python .venv/bin/python bench/masks.py [--pairs 15]
"""
import argparse
import statistics
import time

import numpy as np

import posattn

import bench

B, H, L, D = 1, 8, 2048, 64


def variants(rng):
    """posattn.attention's arguments of each variant at the benchmark's shape (bench.py's values)."""
    f32 = lambda *shape: rng.standard_normal(shape, dtype=np.float32)
    return {"plain": {}, "alibi": {"alibi_slopes": posattn.alibi_slopes(H)},
            "t5": {"t5_table": f32(32, H), "t5_bidirectional": False}, "rope": {"rope": {}},
            "shaw": {"shaw": {"rel_k": f32(33, D), "rel_v": f32(33, D)}},
            "xl": {"transformer_xl": {"r": f32(L, D), "u": f32(H, D), "v_bias": f32(H, D)}},
            "deberta": {"deberta": {"rel_embeddings": f32(512, 128), "w_key": f32(H * D, 128) / 11,
                                    "w_query": f32(H * D, 128) / 11, "position_buckets": 256, "max_relative_positions": 512}}}


def speed_ratio(masked, unmasked, pairs):
    """Median over alternated pairs of t(unmasked) / t(masked): above 1, the masked call is faster."""
    masked(), unmasked()
    ratios = []
    for pair in range(pairs):
        times = {}
        for side in ((masked, unmasked) if pair % 2 else (unmasked, masked)):
            start = time.perf_counter()
            side()
            times[side] = time.perf_counter() - start
        ratios.append(times[unmasked] / times[masked])
    return statistics.median(ratios), min(ratios), max(ratios)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    posattn.set_num_threads(bench.THREADS)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((B, H, L, D), dtype=np.float32) for _ in range(3))
    out = np.empty_like(q)
    call = lambda **kwargs: (lambda: posattn.attention(q, k, v, out=out, **kwargs))
    holed = np.ones((L, L), bool)
    holed[:, L // 2] = False
    documents = np.repeat(np.arange(8, dtype=np.int32), L // 8)[None]
    rows = [("dense bool mask [1, 1, L, L]", call(mask=rng.random((1, 1, L, L)) < 0.9), call(), 0.8),
            ("dense float bias [1, H, L, L]", call(bias=rng.standard_normal((1, H, L, L), dtype=np.float32)), call(), 0.75),
            ("8 packed causal documents of 256", call(causal=True, q_segments=documents, k_segments=documents),
             call(causal=True), 4.0),
            ("causal as a boolean tril [L, L] (rows are runs: key ranges)", call(mask=np.tri(L, dtype=bool)),
             call(causal=True), 0.9),
            ("all True but the middle key of each row (the per-logit path)", call(mask=holed), call(), 0.8)]
    everywhere = np.ones((1, 1, L, L), bool)
    for name, kwargs in variants(rng).items():
        rows.append((f"{name}, causal, all-True mask", call(causal=True, mask=everywhere, **kwargs), call(causal=True, **kwargs), 0.9))
    print(f"{bench.THREADS} threads, {args.pairs} alternated pairs each\n")
    print("| call | speed vs unmasked (median) | range | bar |")
    print("|---|---|---|---|")
    for name, masked, unmasked, bar in rows:
        median, low, high = speed_ratio(masked, unmasked, args.pairs)
        print(f"| {name} | {median:.2f}x | {low:.2f}-{high:.2f} | >= {bar}x{'' if median >= bar else ' (missed)'} |", flush=True)


if __name__ == "__main__":
    main()
