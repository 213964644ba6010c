"""Each x86 kernel with a non-temporal twin (kernels.json "nontemporal", every storage type's
instance: cmake/manifest.py) against its twin, on the
benchmark's shapes with 64-byte aligned outputs, alternated call by call with the copy stream:

    PYTHONPATH=build/python .venv/bin/python bench/nontemporal_twins.py [--repeats 7] [--only TEXT,...]

The build runs the twin for large outputs; here the kernel itself runs as schedule "hand" (the
threshold set out of reach) and the twin, linked from build/<kernel>_nontemporal.a into a shared
library, as schedule "twin". Prints, per benchmark, both speeds as fractions of the copy stream's
and the twin's speed-up (median of the per-pair ratios)."""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["POSATTN_STREAMING_THRESHOLD"] = str(2**62)  # read at the first call: "hand" is the kernel itself

import numpy as np  # noqa: E402
import posattn  # noqa: E402
from posattn import _probes  # noqa: E402

import bench  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
sys.path.insert(0, str(ROOT / "cmake"))
import manifest  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", default="", help="benchmarks whose name contains this text (or one of these, comma-separated)")
    args = parser.parse_args()
    posattn.set_num_threads(bench.THREADS)
    twinned = {k["function"] for k in manifest.kernels() if k.get("nontemporal")}
    rng = np.random.default_rng(0)
    benches = (bench.encoding_benches(rng) + bench.complex_order_benches(rng) + bench.rope_benches(rng) + bench.alibi_benches(rng)
               + bench.storage_benches(rng))
    streams = bench.Streams(256 << 18, 1024)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="posattn-twins-"))
    print("| benchmark | of copy, kernel | of copy, twin | twin speed-up |\n|---|---|---|---|")
    for b in benches:
        function = b.name.split("[")[0]
        if function not in twinned or not bench.selected(b, args.only):
            continue
        library = workdir / f"{function}.so"
        if not library.exists():
            subprocess.run(["c++", "-shared", "-o", str(library), "-Wl,--whole-archive", str(BUILD / f"{function}_nontemporal.a"),
                            "-Wl,--no-whole-archive", f"-L{BUILD}", "-lposattn", f"-Wl,-rpath,{BUILD}"], check=True)
            posattn.load_kernel(str(library), f"{function}_nontemporal", function, "twin")
        times, to_copy = {"hand": [], "twin": []}, {"hand": [], "twin": []}
        for r in range(args.repeats + 1):  # the first round warms up
            for schedule in times:
                start = time.perf_counter()
                b.run(r, bench.on(schedule))
                t = time.perf_counter() - start
                t_copy = _probes.stream_copy(streams.src, streams.dst, bench.THREADS)
                if r:
                    times[schedule].append(t)
                    to_copy[schedule].append((b.work / t) / (2 * streams.src.nbytes / t_copy))
        speedup = statistics.median(k / t for k, t in zip(times["hand"], times["twin"]))
        print(f"| {b.name} | {statistics.median(to_copy['hand']):.0%} | {statistics.median(to_copy['twin']):.0%} | "
              f"{speedup:.2f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
