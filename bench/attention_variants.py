"""Each attention variant against plain attention with the same mask (the issue's speed table):
the two timed alternately, the ratio the median of per-pair ratios (this machine's drift
cancels), beside the share of the FMA peak and the speed-up over the eager NumPy composition.
No autoscheduled baseline is run (bench.py does), so this takes about two minutes.

    PYTHONPATH=build/python .venv/bin/python bench/attention_variants.py [--pairs 5]
"""
import argparse
import statistics

import numpy as np

import posattn
from posattn import _probes

import bench


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    posattn.set_num_threads(bench.THREADS)
    # The compute-bound calls; decoding is memory-bound and held to the copy stream by bench.py.
    benches = {b.name: b for b in bench.attention_benches(np.random.default_rng(0)) if b.unit == "GFLOP/s"}
    peak = _probes.fma_peak_gflops(bench.THREADS, repeats=3, iterations=4_000_000)
    print(f"FMA peak {peak:.0f} GFLOP/s, {bench.THREADS} threads\n")
    print("| kernel | time ms | plain, same mask, ms | of plain | of FMA peak | vs NumPy | max err vs f64 |")
    print("|---|---|---|---|---|---|---|")
    hand = bench.on("hand")
    for name, b in benches.items():
        mask = name[name.index("_f32") + len("_f32"):]  # "", "_causal", "_window[causal256]"
        plain = benches["posattn_attn_plain_f32" + mask]
        times, plain_times, ratios = [], [], []
        for _ in range(args.pairs):
            t = bench.median_time(lambda r: b.run(r, hand), 3)
            t_plain = bench.median_time(lambda r: plain.run(r, hand), 3)
            times.append(t), plain_times.append(t_plain), ratios.append(t_plain / t)
        t = statistics.median(times)
        t_numpy = bench.median_time(b.eager, 3, warmup=1)
        print(f"| {name} | {1e3 * t:.1f} | {1e3 * statistics.median(plain_times):.1f} | "
              f"{100 * statistics.median(ratios):.0f}% | {100 * b.work / t / 1e9 / peak:.0f}% | {t_numpy / t:.1f}x | "
              f"{b.verify(hand):.2e} |", flush=True)


if __name__ == "__main__":
    main()
