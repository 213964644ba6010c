"""Time per call of calls at decoding sizes, where the runtime's checks and dispatch and the
Python binding cost more than the kernel: RoPE of one token's q [1, 32, 1, 128], the integer
table of one row, a [64, 64] sinusoid table. Each line: the median over 5 runs of N calls, after
warm-up (docs/benchmarks.md).

    PYTHONPATH=build/python .venv/bin/python bench/call_overhead.py [--calls 3000]
"""
import argparse
import statistics
import time

import numpy as np

import posattn


def microseconds_per_call(fn, calls, runs=5):
    for _ in range(100):
        fn()
    per_run = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        per_run.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(per_run)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    posattn.set_num_threads(2)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 32, 1, 128), dtype=np.float32)
    rotated = np.empty_like(q)
    position, positions = np.array([4000], np.int32), np.arange(64, dtype=np.int32)
    table = np.empty((64, 64), np.float32)
    calls = {
        "rope q [1, 32, 1, 128], one position": lambda: posattn.rope(q, position, out=rotated),
        "integer table [1, 4]": lambda: posattn.integer(position, 4, out=table[:1, :4]),
        "sinusoidal table [64, 64]": lambda: posattn.sinusoidal(positions, 64, out=table),
    }
    for name, fn in calls.items():
        print(f"{name:40s} {microseconds_per_call(fn, args.calls):7.2f} µs a call")


if __name__ == "__main__":
    main()
