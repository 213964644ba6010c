"""Measures schedule candidates of one kernel on this machine: the tuner's measuring side
(tune/tune.py calls it in-process for this machine's CPU, and through --runner anywhere else).

    PYTHONPATH=build/python python3 tune/measure.py posattn_linear_f32 --device cpu --repeats 7 \\
        first.so:candidate_1 second.so:candidate_2

Each candidate is a shared library exporting <symbol>_argv/_metadata (compiled by the tuner for
this machine's target, linked against libposattn), loaded into the runtime for --device. Each is
checked against the float64 reference on the benchmark's small odd-sized inputs (further than
--max-error: invalid, not timed), then the valid ones are
timed on the benchmark's inputs (bench/bench.py: its shape is the shape class; on cuda and opencl
already in device buffers, so that the time is the kernel's, not the copies') interleaved, one
call of each in turn, so that they see the same drift: the first candidate is the kernel's
defaults, and a candidate's time is its ratio to theirs in the same run. Prints one JSON
object: the machine, and per candidate its max error and median time and noise (interquartile
range / median) or why it is invalid.

Timings under emulation are refused: an AArch64 process whose /proc/cpuinfo or /bin/sh is x86
runs under qemu-user, whose timings mean nothing. --check-only checks the candidates and times
none (allowed anywhere: the runner protocol's test, tune.py --check-only under qemu).
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

import posattn

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "cmake"))
import bench  # noqa: E402  (the benchmark's inputs and eager baselines)
import manifest as kernels_json  # noqa: E402  (cmake/manifest.py: a kernel per storage dtype)

BENCH_GROUPS = (bench.encoding_benches, bench.complex_order_benches, bench.rope_benches, bench.alibi_benches,
                bench.linear_benches, bench.floater_benches, bench.attention_benches, bench.storage_benches)
# The group that holds each generator's benchmarks (tried first: building a group's inputs takes
# GBs and seconds); the encodings' group holds the rest.
GROUP_OF = {"complex_order": bench.complex_order_benches, "rope": bench.rope_benches,
            "alibi_bias": bench.alibi_benches, "linear": bench.linear_benches, "floater_step": bench.floater_benches,
            "attention": bench.attention_benches}


def bench_matches(function, name):
    return name == function or name.startswith(function + "[") or name == function + "_causal"


def benches_of(functions, skip_unshaped=False):
    """Yields (function, its benchmark: the first of its group's that matches), building each
    group's inputs once; the inputs are the shape class. A function without one is an error at
    the end, or skipped with skip_unshaped."""
    left = list(functions)
    generators = {k["function"]: k["generator"] for k in kernels_json.kernels()}
    first = {GROUP_OF.get(generators.get(f), bench.encoding_benches) for f in left}
    for make in [g for g in BENCH_GROUPS if g in first] + [g for g in BENCH_GROUPS if g not in first]:
        if not left:
            return
        group = make(np.random.default_rng(0))
        for function in list(left):
            found = [b for b in group if bench_matches(function, b.name)]
            if found:
                left.remove(function)
                yield function, found[0]
        del group
    if left and not skip_unshaped:
        raise SystemExit(f"tune: {', '.join(left)} has no benchmark shape in bench/bench.py, so nothing to time it on")


ELF_MACHINES = {62: "x86_64", 183: "aarch64"}  # e_machine


def emulated(cpuinfo_text, machine, system_binary_machine):
    """Whether this process runs under user-mode emulation: its architecture is not the CPU's
    (/proc/cpuinfo's), or not the system's (that of /bin/sh; newer qemu-user fakes cpuinfo)."""
    x86_cpu = "vendor_id" in cpuinfo_text and " sse2" in cpuinfo_text
    return x86_cpu != (machine == "x86_64") or system_binary_machine not in (None, machine)


def elf_machine(path):
    """The architecture an ELF binary is built for (None if not one of ELF_MACHINES)."""
    with open(path, "rb") as f:
        header = f.read(20)
    return ELF_MACHINES.get(int.from_bytes(header[18:20], "little")) if header[:4] == b"\x7fELF" else None


cpu_model = bench.cpu_model  # (the model the build matches records by)


def machine():
    return f"{cpu_model()}, {os.cpu_count()} cores, {bench.THREADS} threads"


_loaded = set()  # (candidate, device): a library is loaded once per process


def schedule_of(function, device, candidate):
    """The schedule name a candidate is called by: a built-in schedule name as is, or a library
    'path:symbol', loaded on first use under that name."""
    if ":" in candidate and (candidate, device) not in _loaded:
        path, symbol = candidate.rsplit(":", 1)
        posattn.load_kernel(path, symbol, function, candidate, device)
        _loaded.add((candidate, device))
    return candidate


def measure_candidates(function, bench_obj, device, candidates, repeats, max_error=None, call_limit=None):
    """Per candidate: dict(error, ms, noise), or dict(invalid=why), e.g. an error over max_error
    (such a candidate is not timed); repeats 0: checked only, dict(error). A candidate whose first
    call takes over call_limit seconds is timed by that call alone: dict(error, over_limit_ms)."""
    results, names = [], []
    for candidate in candidates:
        try:
            name = schedule_of(function, device, candidate)
            error = bench_obj.verify(bench.on(name, device))
            if max_error is not None and not error <= max_error:
                raise RuntimeError(f"wrong: max error {error:.2e} against float64 (allowed {max_error:.2e})")
            results.append(dict(error=error))
            names.append(name)
        except (RuntimeError, posattn.Error) as e:
            results.append(dict(invalid=str(e)[:200]))
            names.append(None)
    valid = [(r, n, []) for r, n in zip(results, names) if n and repeats]
    with bench.resident(device):  # on a GPU, the kernel's time: operands already on the device
        for result, name, _ in list(valid):  # warm-up
            for r in range(2):
                start = time.perf_counter()
                bench_obj.run(r, bench.on(name, device))
                elapsed = time.perf_counter() - start
                if call_limit and elapsed > call_limit:
                    result["over_limit_ms"] = elapsed * 1e3
                    valid = [v for v in valid if v[1] != name]
                    break
        for r in range(repeats):  # interleaved: every candidate sees the same minute
            for _, name, times in valid:
                start = time.perf_counter()
                bench_obj.run(r, bench.on(name, device))
                times.append(time.perf_counter() - start)
    for result, _, times in valid:
        median = statistics.median(times)
        q1, q3 = np.percentile(times, [25, 75])
        result.update(ms=median * 1e3, noise=(q3 - q1) / median)
    return results


class RunnerError(RuntimeError):
    """A measurement that failed as a whole (the candidate crashed the measuring process, the
    connection broke, the defaults failed this time): the tuner records the trial as invalid and
    goes on."""


def pair_outcome(defaults, candidate):
    """A candidate's measurement beside the defaults (measured together, call by call): its time
    ratio to them, or why it is invalid."""
    if "ms" not in defaults:
        raise RunnerError(f"the defaults failed this time: {defaults['invalid']}")
    if "ms" not in candidate:
        return dict(invalid=candidate["invalid"])
    return dict(ratio=candidate["ms"] / defaults["ms"], noise=candidate["noise"], error=candidate["error"])


def first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("function", help="a kernels.json function")
    parser.add_argument("candidates", nargs="+", help="library:symbol (or a built schedule name)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "opencl", "vulkan"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--max-error", type=float, help="a candidate further from float64 is invalid")
    parser.add_argument("--check-only", action="store_true", help="check the candidates against float64, time none")
    args = parser.parse_args()
    under_emulation = emulated(pathlib.Path("/proc/cpuinfo").read_text(), platform.machine(), elf_machine("/bin/sh"))
    if under_emulation and not args.check_only:
        raise SystemExit(f"measure: this {platform.machine()} process runs on another architecture's CPU "
                         "(user-mode emulation): its timings mean nothing")
    posattn.set_num_threads(bench.THREADS)
    (_, bench_obj), = benches_of([args.function])
    results = measure_candidates(args.function, bench_obj, args.device, args.candidates,
                                 0 if args.check_only else args.repeats, args.max_error)
    where = machine() + (f" ({platform.machine()} under user-mode emulation)" if under_emulation else "")
    print(json.dumps(dict(machine=where, device=args.device, shape_class=bench_obj.name, results=results)))


if __name__ == "__main__":
    main()
