"""Two builds of one kernel timed alternately, call by call, on its benchmark's inputs (bench.py's
shape): the "alternated N pairs" comparisons of docs/benchmarks.md. Each side is compiled by the tuner's
compiler (tune/tune.py) from schedule params over the kernel's defaults, with this build's
generators or another build's (a change measured against its parent commit):

    PYTHONPATH=build/python .venv/bin/python bench/ab.py posattn_attn_xl_f32 --b key_block:128
    PYTHONPATH=build/python .venv/bin/python bench/ab.py posattn_attn_xl_f32 \\
        --a-generators ../parent/build/posattn_generators --pairs 31
    PYTHONPATH=build/python .venv/bin/python bench/ab.py posattn_attn_plain_f32_decode \
        --a value_pass_keys:512,value_vectors:1 --flush-mib 64 --pairs 101

Prints each side's median and fastest call and its max error against float64 (the benchmark's
small check), and the median and quartiles of the per-pair time ratios a / b (above 1: b is
faster). The order within a pair alternates, and this machine's drift cancels within a pair.
"""
import argparse
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

import posattn

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tune"))
import bench  # noqa: E402
import measure  # noqa: E402  (the benchmark lookup and candidate loading the tuner uses)
import tune  # noqa: E402  (its compiler and search spaces)


def params_over_defaults(function, text):
    """The kernel's default schedule params with `name:value,...` in place of some."""
    target = tune.host_target(function)
    space = tune.Space(tune.search_space(tune.family_of(target, "cpu")[1], tune.schedule_kind(tune.manifest()[function])))
    params = space.defaults()
    for item in filter(None, text.split(",")):
        name, _, value = item.partition(":")
        if name not in params or not value.isdigit():
            raise SystemExit(f"ab: '{item}' is not name:value for one of {function}'s params ({', '.join(params)})")
        params[name] = int(value)
    return params


def compare(function, sides, pairs, flush_mib=0):
    """sides: (params text, generator binary or None) of a and b; flush_mib: MiB copied before each
    call, so that it finds none of its inputs in cache (0: none). Returns the benchmark's name, per
    side dict(ms: median, fastest, error), and the per-pair time ratios a / b."""
    params = [params_over_defaults(function, text) for text, _ in sides]
    (_, bench_obj), = measure.benches_of([function])
    names = []
    for (_, binary), side_params in zip(sides, params):
        with tempfile.TemporaryDirectory(prefix="posattn-ab-") as workdir:  # a loaded library outlives its file
            candidate = tune.Compiler(function, tune.host_target(function), workdir, binary).build(side_params)
            names.append(measure.schedule_of(function, "cpu", candidate))
    flush_src = np.ones(flush_mib << 20, np.uint8)
    flush_dst = np.empty_like(flush_src)
    times = [[], []]
    for pair in range(pairs + 1):  # the first pair warms up
        for side in ((0, 1) if pair % 2 else (1, 0)):
            np.copyto(flush_dst, flush_src)
            start = time.perf_counter()
            bench_obj.run(pair, bench.on(names[side]))
            if pair:
                times[side].append(time.perf_counter() - start)
    results = [dict(ms=1e3 * statistics.median(t), fastest=1e3 * min(t), error=bench_obj.verify(bench.on(name)))
               for name, t in zip(names, times)]
    return bench_obj.name, results, [a / b for a, b in zip(*times)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("function", help="a kernels.json function with a benchmark, e.g. posattn_attn_xl_f32")
    for side in "ab":
        parser.add_argument(f"--{side}", default="", help="schedule params name:value,... over the defaults")
        parser.add_argument(f"--{side}-generators", help="a posattn_generators binary (default: this build's)")
    parser.add_argument("--pairs", type=int, default=21)
    parser.add_argument("--flush-mib", type=int, default=0,
                        help="MiB copied before each call, to evict its inputs from the caches (memory-bound kernels)")
    args = parser.parse_args(argv)
    posattn.set_num_threads(bench.THREADS)
    sides = [(args.a, args.a_generators), (args.b, args.b_generators)]
    name, results, ratios = compare(args.function, sides, args.pairs, args.flush_mib)
    print(f"{name}, {args.pairs} alternated pairs")
    for label, (text, binary), r in zip("ab", sides, results):
        print(f"{label}: {r['ms']:.2f} ms (fastest {r['fastest']:.2f}), max error {r['error']:.1e}"
              f"  [{text or 'defaults'}; {binary or 'this build'}]")
    q1, q3 = np.percentile(ratios, [25, 75])
    print(f"a / b: {statistics.median(ratios):.3f} (quartiles {q1:.3f}-{q3:.3f})")


if __name__ == "__main__":
    main()
