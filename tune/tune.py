"""Schedule autotuner: searches a kernel's schedule parameters on this machine, against its default
schedule and Halide's autoschedulers, and appends the measurements to schedules/tuned/<family>.jsonl,
which the AOT build reads (the best record per kernel and shape class; defaults otherwise).

    PYTHONPATH=build/python .venv/bin/python tune/tune.py posattn_attn_plain_f32 --minutes 10 --seed 1

The search space is the schedule's own declaration (each params field's choices in
schedules/cpu/*.h, printed by build/posattn_search_space). Candidates: the defaults first, then
random samples, then mutations of the best so far (one or two fields moved to a neighbouring
choice); the same seed gives the same candidates. Each candidate is compiled by the project's
generator for this machine's target, loaded into the runtime (posattn.load_kernel), checked against
the float64 reference on the benchmark's small odd-sized inputs (a candidate that does not compile or
is wrong is recorded as invalid, with the reason), and timed on the
benchmark's inputs (bench/bench.py: its shape is the shape class): warm-up, then the median of
repeats, with the incumbent re-measured next to every candidate so that a candidate's time is its
ratio to the incumbent in the same minute times the incumbent's first time (this machine's
throughput drifts). The noise reported is the spread (interquartile range / median) of the
candidate's repeats.

Timings are only recorded for the machine the tuner runs on, and only for its own CPU target:
ARM timings under qemu are emulation and a GPU API without a GPU cannot be timed, so those
targets are refused here. They are tuned by running this script on a machine of that target (an
AArch64 board, or a GPU host with --device, once the runtime can load GPU candidates), whose
records go to that family's file.
"""
import argparse
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import posattn

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / os.environ.get("POSATTN_BUILD", "build")
sys.path.insert(0, str(ROOT / "bench"))
import bench  # noqa: E402  (the benchmark's inputs and eager baselines)

# Which schedule (schedules/<family>/<kind>.h) each generator uses.
SCHEDULE_KIND = {"sinusoidal": "encoding", "learned": "encoding", "simple_encoding": "encoding",
                 "complex_order": "encoding", "alibi_bias": "encoding", "rope": "rope",
                 "floater_step": "floater", "linear": "linear", "attention": "attention"}
AUTOSCHEDULERS = ("Adams2019", "Mullapudi2016", "Li2018")
FEATURES = "user_context-large_buffers-no_runtime"


def host_target():
    """The x86 ISA level this machine's multi-target libraries dispatch to (the one to tune)."""
    flags = pathlib.Path("/proc/cpuinfo").read_text()
    if " avx512f " in flags and " avx512bw " in flags:
        return "x86-64-linux-avx512_skylake"
    if " avx2 " in flags and " fma " in flags:
        return "x86-64-linux-avx2-fma-f16c-sse41"
    return "x86-64-linux-sse41"


def manifest():
    return {k["function"]: k for k in json.loads((ROOT / "kernels.json").read_text())["kernels"]}


def search_space(family, kind):
    spaces = json.loads(subprocess.run([str(BUILD / "posattn_search_space")], check=True, capture_output=True,
                                       text=True).stdout)
    return spaces[family][kind]


class Space:
    """The fields of one params struct: name → (default, choices)."""
    def __init__(self, fields):
        self.fields = {f["name"]: (f["default"], f["choices"]) for f in fields}

    def defaults(self):
        return {name: d for name, (d, _) in self.fields.items()}

    def sample(self, rng):
        return {name: int(rng.choice(choices)) for name, (_, choices) in self.fields.items()}

    def mutate(self, params, rng):
        child = dict(params)
        for name in rng.choice(list(self.fields), size=min(len(self.fields), int(rng.integers(1, 3))), replace=False):
            choices = self.fields[name][1]
            at = choices.index(child[name]) if child[name] in choices else len(choices) // 2
            child[name] = choices[int(np.clip(at + rng.choice([-1, 1]), 0, len(choices) - 1))]
        return child


def text(params):
    return ",".join(f"{k}:{v}" for k, v in params.items())


class Compiler:
    """Compiles one kernel with given schedule params (or an autoscheduler) into a shared library
    and loads it into the runtime under a fresh schedule name."""
    def __init__(self, function, target, workdir):
        import halide
        entry = manifest()[function]
        self.function, self.generator, self.params = function, entry["generator"], entry["params"]
        self.target, self.workdir, self.count = target, pathlib.Path(workdir), 0
        self.halide_lib = pathlib.Path(halide.install_dir()) / "lib64"

    def build(self, schedule_params=None, autoscheduler=None, timeout=None):
        """Returns the schedule name to call it by, or raises RuntimeError with the compiler's message."""
        self.count += 1
        symbol = f"candidate_{self.count}"
        args = [str(BUILD / "posattn_generators"), "-g", self.generator, "-f", symbol, "-o", str(self.workdir),
                "-e", "object", f"target={self.target}-{FEATURES}", *self.params]
        if autoscheduler:
            plugin = self.halide_lib / f"libautoschedule_{autoscheduler.lower()}.so"
            args[1:1] = ["-p", str(plugin)]
            args.append(f"autoscheduler={autoscheduler}")
        else:
            args.append(f"schedule_params={text(schedule_params)}")
        try:
            run = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"compile took over {timeout} s") from None
        if run.returncode:
            raise RuntimeError((run.stderr.strip().splitlines() or ["compile failed"])[-1])
        library = self.workdir / f"{symbol}.so"
        subprocess.run(["c++", "-shared", "-o", str(library), str(self.workdir / f"{symbol}.o"), f"-L{BUILD}",
                        "-lposattn", f"-Wl,-rpath,{BUILD}"], check=True)
        name = f"{symbol}@{os.getpid()}"
        posattn.load_kernel(str(library), symbol, self.function, name)
        return name


def timed(bench_obj, schedule, repeats):
    """Median and spread (IQR / median) of `repeats` calls after two warm-up calls."""
    call = bench.on(schedule)
    times = bench.wall_times(lambda r: bench_obj.run(r, call), repeats)
    q1, q3 = np.percentile(times, [25, 75])
    return statistics.median(times), (q3 - q1) / statistics.median(times)


def machine():
    model = next((l.split(":", 1)[1].strip() for l in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
                  if l.startswith("model name")), platform.machine())
    return f"{model}, {os.cpu_count()} cores, {bench.THREADS} threads"


BENCH_GROUPS = (bench.encoding_benches, bench.complex_order_benches, bench.rope_benches, bench.alibi_benches,
                bench.linear_benches, bench.attention_benches)


def bench_matches(function, name):
    return name == function or name.startswith(function + "[") or name == function + "_causal"


def benches_of(functions, skip_unshaped=False):
    """Yields (function, its benchmark: the first of its group's that matches), building each
    group's inputs once; the inputs are the shape class. A function without one is an error at
    the end, or skipped with skip_unshaped."""
    left = list(functions)
    for make in BENCH_GROUPS:
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


class Progress:
    def __init__(self, trials, seconds):
        self.trials, self.deadline, self.start = trials, time.monotonic() + seconds, time.monotonic()

    def done(self, tried):
        return tried >= self.trials or time.monotonic() >= self.deadline

    def show(self, tried, best_ms, default_ms, note=""):
        left = max(0.0, self.deadline - time.monotonic())
        width = 24
        filled = int(width * min(1.0, max(tried / self.trials, (time.monotonic() - self.start)
                                          / max(1e-9, self.deadline - self.start))))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {tried}/{self.trials} tried, best "
                         f"{best_ms:.2f} ms ({default_ms / best_ms:.2f}x default), {left:.0f} s left {note[:40]:<40}")
        sys.stderr.flush()


def tune(function, bench_obj, args):
    target = args.target or host_target()
    if not target.startswith("x86-64"):
        raise SystemExit(f"tune: {target} cannot be timed on this machine (emulation or no device); run the "
                         "tuner on a machine of that target")
    entry = manifest()[function]
    kind = SCHEDULE_KIND[entry["generator"]]
    space = Space(search_space("x86", kind))
    rng = np.random.default_rng(args.seed)
    records_path = ROOT / "schedules" / "tuned" / "x86.jsonl"
    previous = [r for r in (json.loads(l) for l in records_path.read_text().splitlines() if l.strip())
                if r["kernel"] == function and r["target"] == target and r["shape_class"] == bench_obj.name] \
        if records_path.exists() else []
    workdir = tempfile.mkdtemp(prefix="posattn-tune-")
    compiler = Compiler(function, target, workdir)
    common = dict(kernel=function, target=target, shape_class=bench_obj.name, halide=importlib.metadata.version("halide"),
                  machine=machine(), date=datetime.date.today().isoformat(), seed=args.seed)

    # The incumbent: the defaults, or the best earlier record (tuning resumes from the records).
    default_name = compiler.build(space.defaults())
    default_error = bench_obj.verify(bench.on(default_name))
    default_s, noise = timed(bench_obj, default_name, args.repeats)
    best = dict(params=space.defaults(), name=default_name, seconds=default_s)
    if previous:
        earlier = min(previous, key=lambda r: r["ratio_to_default"])
        try:
            name = compiler.build(earlier["params"])
            s, _ = timed(bench_obj, name, args.repeats)
            if s < best["seconds"]:
                best = dict(params=earlier["params"], name=name, seconds=s)
        except RuntimeError:
            pass
    history = [dict(trial=0, best_ms=best["seconds"] * 1e3)]
    baselines = {"default": dict(ms=default_s * 1e3, noise=noise)}
    built = {k["schedule"] for k in posattn.kernels() if k["function"] == function and k["family"] == "x86"}
    for scheduler in AUTOSCHEDULERS:
        try:  # the build's own baseline where it has one (same target), else compiled here
            name = scheduler.lower() if scheduler.lower() in built else compiler.build(
                autoscheduler=scheduler, timeout=args.baseline_timeout)
            s, n = timed(bench_obj, name, max(3, args.repeats // 2))
            ratio = s / timed(bench_obj, default_name, args.repeats)[0]
            baselines[scheduler] = dict(ms=default_s * ratio * 1e3, noise=n)
        except Exception as e:  # reported, never hidden: some autoschedulers fail on some graphs
            baselines[scheduler] = dict(error=str(e).splitlines()[0][:200])

    progress = Progress(args.trials, args.minutes * 60)
    seen, tried = {text(best["params"]), text(space.defaults())}, 0
    records = []
    while not progress.done(tried):
        params = space.sample(rng) if tried < args.random else space.mutate(best["params"], rng)
        if text(params) in seen:
            params = space.sample(rng)
            if text(params) in seen:
                continue
        seen.add(text(params))
        tried += 1
        record = dict(common, trial=tried, params=params)
        try:
            name = compiler.build(params)
            wrong = bench_obj.verify(bench.on(name))  # on the benchmark's small, odd-sized inputs
            if not wrong <= max(2 * default_error, 1e-6):
                raise RuntimeError(f"wrong: max error {wrong:.2e} against float64 (defaults {default_error:.2e})")
            s, n = timed(bench_obj, name, args.repeats)
        except (RuntimeError, posattn.Error) as e:
            record["invalid"] = str(e)[:200]
            records.append(record)
            progress.show(tried, best["seconds"] * 1e3, default_s * 1e3, "invalid")
            continue
        incumbent, _ = timed(bench_obj, best["name"], args.repeats)  # the same minute's incumbent
        candidate_s = best["seconds"] * s / incumbent
        record.update(ms=candidate_s * 1e3, noise=n, ratio_to_default=candidate_s / default_s)
        records.append(record)
        if candidate_s < best["seconds"]:
            best = dict(params=params, name=name, seconds=candidate_s)
        history.append(dict(trial=tried, best_ms=best["seconds"] * 1e3))
        progress.show(tried, best["seconds"] * 1e3, default_s * 1e3)
    sys.stderr.write("\n")

    # The best is re-measured against the defaults, alternately; that ratio is what is recorded.
    best_ratio = statistics.median(timed(bench_obj, best["name"], args.repeats)[0]
                                   / timed(bench_obj, default_name, args.repeats)[0] for _ in range(3))
    summary = dict(common, params=best["params"], ms=default_s * best_ratio * 1e3, ratio_to_default=best_ratio,
                   best=True, baselines=baselines, history=history, trials=tried)
    records_path.parent.mkdir(parents=True, exist_ok=True)
    with records_path.open("a") as f:
        for r in records + [summary]:
            f.write(json.dumps(r) + "\n")
    print(json.dumps(dict(kernel=function, best=best["params"], ratio_to_default=round(best_ratio, 3),
                          baselines={k: round(v["ms"], 3) if "ms" in v else v["error"] for k, v in baselines.items()})))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*", help="kernels.json functions, e.g. posattn_attn_plain_f32")
    parser.add_argument("--all", action="store_true", help="every kernel with a benchmark shape")
    parser.add_argument("--target", help="Halide target without features (default: this machine's ISA level)")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--random", type=int, default=8, help="random samples before the local search")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline-timeout", type=float, default=300.0,
                        help="seconds an autoscheduler may take to compile a baseline not in the build")
    args = parser.parse_args()
    posattn.set_num_threads(bench.THREADS)
    functions = list(manifest()) if args.all else args.kernels
    for function, bench_obj in benches_of(functions, skip_unshaped=args.all):
        tune(function, bench_obj, args)


if __name__ == "__main__":
    main()
