"""Schedule autotuner: searches a kernel's schedule parameters on this machine, against its default
schedule and Halide's autoschedulers, and appends the measurements to schedules/tuned/<family>.jsonl,
which the AOT build reads (the best record per kernel and shape class; defaults otherwise).

    PYTHONPATH=build/python .venv/bin/python tune/tune.py posattn_attn_plain_f32 --minutes 10 --seed 1

The search space is the schedule's own declaration (each params field's choices in
schedules/cpu/*.h, printed by build/posattn_search_space, which also checks the constraints between
them). Candidates come in batches (--batch): first the kernel's earlier best on this machine and the
params the build takes for its siblings (the other kernels of its generator, tuned on this target
and machine), then random samples, then mutations of the best so far (one or two fields moved to a
neighbouring choice), each drawn again until it meets the constraints; a batch depends only on the
seed and the best before it, so one seed, batch size and records give the same candidates in
this process or on a cluster. Each candidate is compiled by the project's generator into a shared
library, then measured by tune/measure.py's measure(): loaded into the runtime
(posattn.load_kernel), checked against the float64 reference on the benchmark's small odd-sized
inputs (a candidate that does not compile or is wrong is recorded as invalid, with the reason),
and timed on the benchmark's inputs (bench/bench.py: its shape is the shape class) interleaved with
the defaults, call by call, so that its time is its ratio to the defaults in the same minute (this
machine's throughput drifts). The noise reported is the spread (interquartile range / median) of
the candidate's repeats. The best is re-measured beside the defaults three times at the end.
Every record is appended as soon as it is made, with the run it belongs to: a stopped run, started
again with the same settings, goes on from its records.

Where the timings are taken: this machine's CPU, in this process, by default. Any other target
(ARM: --target arm-64-linux; a GPU API: --device cuda|opencl|vulkan) is measured through
--runner, a command that runs tune/measure.py on a machine of that target: the tuner compiles
each candidate here (for ARM with Debian's aarch64 g++, against build-arm/'s libposattn), runs the
command with measure.py's arguments appended (FUNCTION library:symbol ... --device D --repeats N
--max-error E) and reads the JSON line it prints. tune/runners/local.sh runs it on this machine;
a runner for a board or a GPU host copies the libraries there (same paths) and runs measure.py
with that machine's build (docs/autotuning.md). Records go to schedules/tuned/<family>.jsonl
(x86, arm, cuda, opencl, vulkan), which the build reads per family. measure.py refuses to time
under user-mode emulation (ARM under qemu), and without a runner only this machine's CPU is tuned.
--cluster ADDRESS spreads the runs over a Ray cluster instead (tune/cluster.py): each batch's
candidates compiled on any worker and measured on the machines that offer the run's target, one
measurement at a time per machine.
"""
import argparse
import datetime
import hashlib
import importlib.metadata
import json
import os
import pathlib
import shlex
import socket
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
sys.path.insert(0, str(ROOT / "tune"))
import bench  # noqa: E402  (the benchmark's inputs and eager baselines)
from measure import RunnerError, benches_of, cpu_model, first_line, machine, measure_candidates, pair_outcome  # noqa: E402
from report import applied, model  # noqa: E402  (the records a build takes; a record's CPU model)
from spaces import family_of, manifest, schedule_kind, schedule_version, search_space  # noqa: E402

FEATURES = "user_context-large_buffers-no_runtime"
# The build's GPU targets (CMakeLists.txt, POSATTN_GPU_TARGET_<api>); CUDA's lowest capability,
# which runs on every newer GPU too (another: --target).
GPU_TARGETS = {"cuda": "x86-64-linux-cuda-cuda_capability_80", "opencl": "x86-64-linux-opencl-cl_doubles",
               "vulkan": "x86-64-linux-vulkan-vk_int8-vk_int64-vk_float64"}
# Halide's autoschedulers that can target each schedule family: the baselines of a run.
AUTOSCHEDULERS = {"x86": ("Adams2019", "Mullapudi2016", "Li2018"), "x86_avx2": ("Adams2019", "Mullapudi2016", "Li2018"),
                  "arm": ("Adams2019", "Mullapudi2016", "Li2018"),
                  "gpu": ("Anderson2021",), "vulkan": ("Anderson2021",)}


# The CPU flags (/proc/cpuinfo) of the levels a storage type may add (kernels.json x86_levels), as
# the runtime tests them (runtime/src/cpu_features.cpp).
LEVEL_FLAGS = {"avx512_zen4": ("avx512f", "avx512dq", "avx512ifma", "avx512cd", "avx512bw", "avx512vl", "avx512vbmi",
                               "avx512_vbmi2", "gfni", "vaes", "vpclmulqdq", "avx512_vnni", "avx512_bitalg",
                               "avx512_vpopcntdq", "avx512_bf16")}


def host_target(function=None):
    """The x86 ISA level this machine's multi-target library of `function` (any kernel's where
    None) dispatches to (the one to tune)."""
    text = pathlib.Path("/proc/cpuinfo").read_text()
    flags = set(next((line.partition(":")[2] for line in text.splitlines() if line.startswith("flags")), "").split())
    for level in manifest()[function].get("x86_levels", []) if function else []:
        if flags >= set(LEVEL_FLAGS[level]):
            return f"x86-64-linux-{level}"
    if {"avx512f", "avx512bw"} <= flags:
        return "x86-64-linux-avx512_skylake"
    if {"avx2", "fma"} <= flags:
        return "x86-64-linux-avx2-fma-f16c-sse41"
    return "x86-64-linux-sse41"


def constraints(family, kind):
    """The schedule's own check of its params' constraints (posattn_search_space --check, the check
    a build makes): params -> why they break them, '' when they hold."""
    def why_invalid(params):
        run = subprocess.run([str(BUILD / "posattn_search_space"), "--check", family, kind, text(params)],
                             capture_output=True, text=True)
        return "" if run.returncode == 0 else (run.stdout.strip() or f"the check failed ({run.stderr.strip()})")
    return why_invalid


class Space:
    """The fields of one params struct: name → (default, choices); samples and mutations are drawn
    again until they meet the struct's constraints (why_invalid), so no trial is spent on them."""
    DRAWS = 1000

    def __init__(self, fields, why_invalid=lambda params: ""):
        self.fields = {f["name"]: (f["default"], f["choices"]) for f in fields}
        self.why_invalid = why_invalid

    def defaults(self):
        return {name: d for name, (d, _) in self.fields.items()}

    def of(self, params):
        """Params recorded under an earlier version of this space, as this one's: a field added since
        at its default, one removed since dropped."""
        return {name: params.get(name, d) for name, (d, _) in self.fields.items()}

    def sample(self, rng):
        return self._valid(lambda: {name: int(rng.choice(choices)) for name, (_, choices) in self.fields.items()})

    def mutate(self, params, rng):
        def child():
            moved = dict(params)
            for name in rng.choice(list(self.fields), size=min(len(self.fields), int(rng.integers(1, 3))),
                                   replace=False):
                choices = self.fields[name][1]
                at = choices.index(moved[name]) if moved[name] in choices else len(choices) // 2
                moved[name] = choices[int(np.clip(at + rng.choice([-1, 1]), 0, len(choices) - 1))]
            return moved
        return self._valid(child)

    def _valid(self, draw):
        for _ in range(self.DRAWS):
            params = draw()
            if not self.why_invalid(params):
                return params
        raise RuntimeError(f"no params meeting the schedule's constraints in {self.DRAWS} draws")


def text(params):
    return ",".join(f"{k}:{v}" for k, v in params.items())


def sibling_starts(records, function, target, machine, space):
    """The search's first trials: the params the build takes for the other kernels of the same
    generator tuned on this target and machine (report.applied(), best first), as this space's
    params (a field they lack at its default) that meet its constraints. Variants of one schedule
    tend to share their best tiles."""
    generator = {f: entry["generator"] for f, entry in manifest().items()}
    siblings = {}
    for r in records:
        if (r.get("best") and r["kernel"] != function and generator.get(r["kernel"]) == generator[function]
                and (r["target"], r["machine"]) == (target, machine)):
            siblings.setdefault(r["kernel"], []).append(r)
    starts = []
    for r in sorted(filter(None, map(applied, siblings.values())), key=lambda r: r["ratio_to_default"]):
        params = space.of(r["params"])
        if not space.why_invalid(params) and params not in starts:
            starts.append(params)
    return starts


class Compiler:
    """Compiles one kernel with given schedule params (or an autoscheduler) for a target into a
    shared library linked against that target's libposattn: a candidate 'path:symbol'. A kernel
    with a non-temporal twin on x86 (the manifest's "nontemporal") is compiled as that twin, which
    is what the build runs at the benchmark's sizes (cmake/nontemporal_outputs.py); the
    autoschedulers' baselines as Halide compiles them."""
    def __init__(self, function, target, workdir, generator_binary=None):
        import halide
        entry = manifest()[function]
        # This build's generators, or another's (bench/ab.py: a change measured against its parent).
        self.binary = pathlib.Path(generator_binary) if generator_binary else BUILD / "posattn_generators"
        self.generator, self.params = entry["generator"], entry["params"]
        self.target, self.workdir, self.count = target, pathlib.Path(workdir), 0
        self.halide_lib = pathlib.Path(halide.install_dir()) / "lib64"
        arm = target.startswith("arm-64")
        self.cxx, self.libdir = ("aarch64-linux-gnu-g++", ROOT / "build-arm") if arm else ("c++", BUILD)
        self.nontemporal = entry.get("nontemporal", False) and target.startswith("x86-64") and not any(
            api in target for api in GPU_TARGETS)

    def build(self, schedule_params=None, autoscheduler=None, timeout=None):
        """Returns the candidate, or raises RuntimeError with the compiler's message."""
        self.count += 1
        symbol = f"candidate_{self.count}"
        twin = self.nontemporal and not autoscheduler
        args = [str(self.binary), "-g", self.generator, "-f", symbol, "-o", str(self.workdir),
                "-e", "static_library,bitcode" if twin else "object", f"target={self.target}-{FEATURES}", *self.params]
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
        library, compiled = self.workdir / f"{symbol}.so", [str(self.workdir / f"{symbol}.o")]
        if twin:
            archive = self.workdir / f"{symbol}.a"
            subprocess.run([sys.executable, str(ROOT / "cmake" / "nontemporal_outputs.py"), str(archive),
                            *map(str, self.workdir.glob(f"{symbol}*.bc"))], check=True, capture_output=True)
            compiled = ["-Wl,--whole-archive", str(archive), "-Wl,--no-whole-archive"]
        subprocess.run([self.cxx, "-shared", "-o", str(library), *compiled,
                        f"-L{self.libdir}", "-lposattn", f"-Wl,-rpath,{self.libdir}"], check=True)
        return f"{library}:{symbol}"


class Runner:
    """Where candidates are measured: in this process (runner None), or by a command that runs
    tune/measure.py on a machine of the target; measure(candidates) -> (machine, results)."""
    def __init__(self, function, bench_obj, device, repeats, command=None):
        self.function, self.bench_obj, self.device, self.repeats = function, bench_obj, device, repeats
        self.command = shlex.split(command) if command else None

    def measure(self, candidates, max_error=None, check_only=False):
        if not self.command:
            return machine(), measure_candidates(self.function, self.bench_obj, self.device, candidates,
                                                 0 if check_only else self.repeats, max_error)
        args = [*self.command, self.function, *candidates, "--device", self.device, "--repeats", str(self.repeats)]
        if max_error is not None:
            args += ["--max-error", repr(max_error)]
        if check_only:
            args.append("--check-only")
        try:
            run = subprocess.run(args, capture_output=True, text=True)
        except OSError as e:
            raise SystemExit(f"tune: cannot run the runner {self.command[0]}: {e}") from None
        lines = run.stdout.strip().splitlines()
        if run.returncode or not lines:
            raise RunnerError(f"the runner failed (exit {run.returncode}): "
                              f"{(run.stderr.strip().splitlines() or ['no output'])[-1]}")
        reply = json.loads(lines[-1])
        return reply["machine"], reply["results"]


class Local:
    """The executor of a run without a cluster: compiles here and measures here (or through
    --runner), one trial after another. build() -> a candidate; measure(candidates) -> (where,
    results); trials(default, jobs) -> per job its outcome. tune/cluster.py's Cluster is the same
    on a Ray cluster."""
    def __init__(self, function, target, bench_obj, args):
        self.compiler = Compiler(function, target, tempfile.mkdtemp(prefix="posattn-tune-"))
        self.runner = Runner(function, bench_obj, args.device, args.repeats, args.runner)
        self.worker = args.runner or f"{socket.gethostname()}:{os.getpid()}"
        family = family_of(target, args.device)[0]
        # The build's own autoscheduled baselines (same target, this machine), where it has them.
        self.built = set() if args.runner else {k["schedule"] for k in posattn.kernels()
                                                if k["function"] == function and k["family"] == family}

    def build(self, params=None, autoscheduler=None, timeout=None):
        """The candidate, or RuntimeError with the compiler's message."""
        if autoscheduler and autoscheduler.lower() in self.built:
            return autoscheduler.lower()
        return self.compiler.build(params, autoscheduler, timeout)

    def measure(self, candidates, max_error=None):
        where, results = self.runner.measure(candidates, max_error)
        return dict(machine=where, worker=self.worker, attempts=1), results

    def trials(self, default, jobs, max_error=None):
        """Each job (params=..., or autoscheduler=..., timeout=...) compiled and measured beside the
        defaults: its pair_outcome() with where it was measured, or dict(invalid=why)."""
        outcomes = []
        for job in jobs:
            try:
                where, (first, second) = self.measure([default, self.build(**job)], max_error)
                outcomes.append(dict(pair_outcome(first, second), **where))
            except RuntimeError as e:  # (a runner call that failed: RunnerError)
                outcomes.append(dict(invalid=first_line(e), worker=self.worker, attempts=1))
        return outcomes

    def close(self):
        pass


def proposals(count, draw):
    """Up to `count` candidates from draw() (None: nothing new this time), in at most Space.DRAWS
    draws: a batch shorter than asked where the space runs out."""
    batch = []
    for _ in range(Space.DRAWS):
        if len(batch) == count:
            break
        params = draw()
        if params is not None:
            batch.append(params)
    return batch


class LocalSearch:
    """The candidates of a run, in order: `starts` (what won for the kernel before, and for its
    siblings), then `random` samples, then mutations of the best so far; never one proposed
    before. A batch depends only on the seed and the best before it, so the same seed, batch size
    and results give the same candidates, on one machine or a cluster."""
    name = "local"

    def __init__(self, space, seed, starts, random):
        self.space, self.rng, self.starts = space, np.random.default_rng(seed), list(starts)
        self.random_until, self.proposed = len(self.starts) + random, 0
        self.seen = {text(space.defaults())}

    def propose(self, count, best):
        return proposals(count, lambda: self._next(best))

    def _next(self, best):
        if self.starts:
            params = self.starts.pop(0)
        else:
            params = self.space.sample(self.rng) if self.proposed < self.random_until else self.space.mutate(best, self.rng)
        if text(params) in self.seen:
            params = self.space.sample(self.rng)
            if text(params) in self.seen:
                return None
        self.seen.add(text(params))
        self.proposed += 1
        return params

    def tell(self, params, record):
        """(The best so far is all this search learns from a trial.)"""


class TpeSearch:
    """Optuna's TPE sampler over the same space (each field a categorical choice): the same starts
    first, then `random` samples of its own, then its model's proposals. Proposals that break the
    constraints are told back at once as a loss of PENALTY, and ones measured before with their
    value, without spending a trial; each trial's log time ratio (PENALTY where invalid) is told in
    trial order, so the same seed, batch size and results give the same candidates."""
    name = "tpe"
    PENALTY = 10.0

    def __init__(self, space, seed, starts, random):
        import optuna  # (only for this strategy)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna, self.space, self.starts = optuna, space, list(starts)
        self.study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=random))
        self.dists = {name: optuna.distributions.CategoricalDistribution(choices)
                      for name, (_, choices) in space.fields.items()}
        self.values, self.asked = {}, {}  # text(params) -> log ratio; -> its study trial
        self.tell(space.defaults(), dict(ratio_to_default=1.0))

    def propose(self, count, best):
        return proposals(count, self._next)

    def _next(self):
        if self.starts:
            params = self.starts.pop(0)
            return None if text(params) in self.values else params
        trial = self.study.ask(self.dists)
        params = {name: int(trial.params[name]) for name in self.space.fields}
        if text(params) in self.values:
            self.study.tell(trial, self.values[text(params)])
        elif self.space.why_invalid(params):
            self.study.tell(trial, float(np.log(self.PENALTY)))
        elif text(params) in self.asked:  # proposed again in this batch: told once measured
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.asked[text(params)] = trial
            return params
        return None

    def tell(self, params, record):
        value = float(np.log(record.get("ratio_to_default", self.PENALTY)))
        self.values[text(params)] = value
        trial = self.asked.pop(text(params), None)
        if trial is not None:
            self.study.tell(trial, value)
        elif all(params[name] in d.choices for name, d in self.dists.items()):  # a start the model may learn from
            self.study.add_trial(self.optuna.trial.create_trial(params=params, distributions=self.dists, value=value))


STRATEGIES = {s.name: s for s in (LocalSearch, TpeSearch)}


class Records:
    """A records file: JSON lines, appended whole, never rewritten. A line cut short (a run killed
    while writing it) was never a record: it is dropped before the next append."""
    def __init__(self, path):
        self.path = pathlib.Path(path)

    def read(self):
        if not self.path.exists():
            return []
        text = self.path.read_text()
        if text and not text.endswith("\n"):
            text = text[:text.rfind("\n") + 1]
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def run_of(self, settings):
        """The run these settings resume (the latest with them that has no summary yet) or start:
        (its id, the records before it, its trials by number)."""
        key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
        records = self.read()
        runs = [r["run"] for r in records if r.get("run", "").startswith(key + ".")]
        if runs and not any(r.get("best") and r.get("run") == runs[-1] for r in records):
            first = next(i for i, r in enumerate(records) if r.get("run") == runs[-1])
            return runs[-1], records[:first], {r["trial"]: r for r in records if r.get("run") == runs[-1]}
        return f"{key}.{len(set(runs)) + 1}", records, {}

    def appender(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            text = self.path.read_bytes()
            if text and not text.endswith(b"\n"):
                with self.path.open("r+b") as f:
                    f.truncate(text.rfind(b"\n") + 1)
        log = self.path.open("a")

        def append(record):
            log.write(json.dumps(record) + "\n")
            log.flush()
        return log, append


class Progress:
    def __init__(self, trials, seconds):
        self.trials, self.deadline, self.start = trials, time.monotonic() + seconds, time.monotonic()

    def done(self, tried):
        return tried >= self.trials or time.monotonic() >= self.deadline

    def show(self, tried, best_ratio):
        left = max(0.0, self.deadline - time.monotonic())
        width = 24
        filled = int(width * min(1.0, max(tried / self.trials, (time.monotonic() - self.start)
                                          / max(1e-9, self.deadline - self.start))))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {tried}/{self.trials} tried, best "
                         f"{1 / best_ratio:.2f}x the defaults, {left:.0f} s left")
        sys.stderr.flush()


def search_setting(function, args):
    """(target, its family, its schedules' family, the search space) of a run over `function`: the
    target is --target, or the build's for --device, or this machine's ISA level."""
    target = args.target or (GPU_TARGETS[args.device] if args.device != "cpu" else host_target(function))
    family, space_family = family_of(target, args.device)
    kind = schedule_kind(manifest()[function])
    return target, family, space_family, Space(search_space(space_family, kind), constraints(space_family, kind))


def check(function, bench_obj, args):
    """--check-only: the defaults and --random samples compiled for the target and checked against
    float64 through the runner, none timed and nothing recorded (the runner protocol under qemu,
    where timings mean nothing: scripts/test_arm.sh). Returns whether every candidate was right."""
    target, _, _, space = search_setting(function, args)
    compiler = Compiler(function, target, tempfile.mkdtemp(prefix="posattn-check-"))
    rng = np.random.default_rng(args.seed)
    params = [space.defaults()] + [space.sample(rng) for _ in range(args.random)]
    # (a wrong candidate is orders of magnitude further from float64 than this: tune()'s own bound)
    try:
        where, results = Runner(function, bench_obj, args.device, args.repeats, args.runner).measure(
            [compiler.build(p) for p in params], max_error=1e-3, check_only=True)
    except RunnerError as e:
        raise SystemExit(f"tune: {e}") from None
    for p, result in zip(params, results):
        print(json.dumps(dict(kernel=function, target=target, machine=where, params=p, **result)))
    return all("error" in r for r in results)


def records_of(args, family):
    return Records(args.records or ROOT / "schedules" / "tuned" / f"{family}.jsonl")


def error_bound(default_error):
    """How far from float64 a candidate may be. One summing in another order (other block sizes)
    may be a few times further than the defaults (Shaw with 512-key blocks: 2.0x); a wrong one is
    orders of magnitude off."""
    return max(8 * default_error, 1e-5)


def brief(baselines):
    return {k: round(v["ms"], 3) if "ms" in v else v["error"] for k, v in baselines.items()}


def executor_for(function, target, bench_obj, args):
    if not args.cluster:
        return Local(function, target, bench_obj, args)
    import cluster  # tune/cluster.py: ray, imported only for a cluster run
    return cluster.Cluster(function, target, args)


def baselines_of(executor, default, default_ms, space_family, args):
    """The autoschedulers' builds of the kernel, each measured beside the defaults: ms and noise,
    or the error (some autoschedulers fail on some graphs: reported, never hidden)."""
    schedulers = AUTOSCHEDULERS[space_family] if args.baselines else ()
    outcomes = executor.trials(default, [dict(autoscheduler=s, timeout=args.baseline_timeout) for s in schedulers])
    return {s: dict(ms=default_ms * o["ratio"], noise=o["noise"]) if "ratio" in o else dict(error=o["invalid"])
            for s, o in zip(schedulers, outcomes)}


def trial_record(outcome, default_ms):
    """A trial's record fields from its outcome: time (as the ratio to the defaults measured beside
    it, and in this run's ms), or why it is invalid; where and on which attempt it was measured."""
    fields = {k: outcome[k] for k in ("machine", "worker", "attempts") if k in outcome}
    if "ratio" not in outcome:
        return dict(fields, invalid=outcome["invalid"])
    return dict(fields, ms=default_ms * outcome["ratio"], noise=outcome["noise"], ratio_to_default=outcome["ratio"])


def tune(function, bench_obj, args):
    target, family, space_family, space = search_setting(function, args)
    if family != "x86" and not (args.runner or args.cluster):
        raise SystemExit(f"tune: {target} ({args.device}) is not timed on this machine's CPU: give --runner, a "
                         "command that runs tune/measure.py on a machine of that target, or --cluster")
    records = records_of(args, family)
    executor = executor_for(function, target, bench_obj, args)
    try:
        summary = search(function, bench_obj, args, target, space, space_family, records, executor)
    finally:
        executor.close()
    print(json.dumps(dict(kernel=function, best=summary["params"], ratio_to_default=round(summary["ratio_to_default"], 3),
                          baselines=brief(summary["baselines"]))))


def starts_from(earlier, function, target, shape_class, machine, space):
    """Tuning goes on from the records: the kernel's earlier best on this machine, then what won
    for its siblings; those that meet the constraints."""
    previous = [r for r in earlier if r.get("best") and (r["kernel"], r["target"], r["shape_class"], r["machine"]) ==
                (function, target, shape_class, machine)]
    starts = [space.of(min(previous, key=lambda r: r["ratio_to_default"])["params"])] if previous else []
    starts += [p for p in sibling_starts(earlier, function, target, machine, space) if p not in starts]
    return [p for p in starts if not space.why_invalid(p)]


def remeasured_ratio(function, executor, default, candidate):
    """The best, compiled again, measured beside the defaults three times: the median ratio."""
    try:
        ratios = [pair_outcome(*executor.measure([default, candidate])[1]).get("ratio") for _ in range(3)]
    except RunnerError as e:
        raise SystemExit(f"tune: re-measuring {function}'s best failed ({e}); its trials are recorded") from None
    if None in ratios:
        raise SystemExit(f"tune: the best candidate of {function} failed when re-measured; its trials are recorded")
    return statistics.median(ratios)


def search(function, bench_obj, args, target, space, space_family, records, executor):
    """One kernel's run: the defaults measured, the baselines, the trials in batches (each
    candidate measured beside the defaults), the best re-measured; every record appended as soon
    as it is made, so a stopped run resumes where it stopped. Returns the summary record."""
    default = executor.build(space.defaults())
    try:
        where, (measured,) = executor.measure([default])
    except RunnerError as e:
        raise SystemExit(f"tune: {e}") from None
    if "ms" not in measured:
        raise SystemExit(f"tune: {function}'s default schedule fails on {args.device}: {measured['invalid']}")
    default_ms, max_error = measured["ms"], error_bound(measured["error"])
    version = schedule_version(function, space_family)
    settings = dict(kernel=function, target=target, device=args.device, shape_class=bench_obj.name, seed=args.seed,
                    random=args.random, batch=args.batch, strategy=args.strategy, schedule_version=version)
    run, earlier, done = records.run_of(settings)
    common = dict(kernel=function, target=target, device=args.device, shape_class=bench_obj.name,
                  schedule_version=version, halide=importlib.metadata.version("halide"), machine=where["machine"],
                  runner=args.runner, cluster=args.cluster, run=run, strategy=args.strategy, date=datetime.date.today().isoformat(),
                  seed=args.seed)
    starts = starts_from(earlier, function, target, bench_obj.name, where["machine"], space)
    strategy = STRATEGIES[args.strategy](space, args.seed, starts, args.random)
    baselines = dict(default=dict(ms=default_ms, noise=measured["noise"]),
                     **baselines_of(executor, default, default_ms, space_family, args))

    log, append = records.appender()
    with log:
        best, tried, history = dict(params=space.defaults(), ratio=1.0), 0, [dict(trial=0, best_ms=default_ms)]
        progress = Progress(args.trials, args.minutes * 60)
        while not progress.done(tried):
            batch = strategy.propose(min(args.batch, args.trials - tried), best["params"])
            if not batch:
                break
            numbers = range(tried + 1, tried + len(batch) + 1)
            fresh = [(n, p) for n, p in zip(numbers, batch) if n not in done]
            outcomes = dict(zip([n for n, _ in fresh], executor.trials(default, [dict(params=p) for _, p in fresh], max_error)))
            for n, params in zip(numbers, batch):  # in trial order, wherever each was measured
                if n in done:
                    record = done[n]
                    if record["params"] != params:
                        raise SystemExit(f"tune: run {run}'s trial {n} in {records.path} is not the candidate this seed "
                                         "gives (the records, the search space or the code changed): start a new run")
                else:
                    record = dict(common, trial=n, params=params, **trial_record(outcomes[n], default_ms))
                    append(record)
                strategy.tell(params, record)
                if record.get("ratio_to_default", 1.0) < best["ratio"]:
                    best = dict(params=params, ratio=record["ratio_to_default"])
                history.append(dict(trial=n, best_ms=default_ms * best["ratio"]))
            tried += len(batch)
            progress.show(tried, best["ratio"])
        sys.stderr.write("\n")

        candidate = executor.build(best["params"]) if best["params"] != space.defaults() else default
        ratio = remeasured_ratio(function, executor, default, candidate)
        summary = dict(common, params=best["params"], ms=default_ms * ratio, ratio_to_default=ratio, best=True,
                       baselines=baselines, history=history, trials=tried)
        append(summary)
    return summary


def remeasure(function, bench_obj, args):
    """--remeasure: the kernel's latest summary on this CPU model (for its target and shape class),
    its params measured again in one run beside the defaults and the autoschedulers, call by call,
    and recorded for the current schedule version, the record's date as "remeasured". A baseline
    whose first call takes over --baseline-call-limit seconds is timed by that call alone."""
    target, family, space_family, space = search_setting(function, args)
    records = records_of(args, family)
    here = [r for r in records.read() if r.get("best") and (r["kernel"], r["target"], r["shape_class"]) ==
            (function, target, bench_obj.name) and model(r) == cpu_model()]
    if not here:
        print(json.dumps(dict(kernel=function, remeasured=None, why=f"no summary on a {cpu_model()} for {target}")))
        return
    earlier, executor = here[-1], Local(function, target, bench_obj, args)
    params, names, candidates, baselines = space.of(earlier["params"]), [], [], {}
    for name, job in [("default", dict(params=space.defaults())), ("tuned", dict(params=params))] + [
            (s, dict(autoscheduler=s, timeout=args.baseline_timeout)) for s in AUTOSCHEDULERS[space_family] if args.baselines]:
        try:
            candidates.append(executor.build(**job))
        except RuntimeError as e:
            if name in ("default", "tuned"):
                raise SystemExit(f"tune: {function}'s {name} params do not compile: {first_line(e)}") from None
            baselines[name] = dict(error=first_line(e))
            continue
        names.append(name)
    where = machine()
    results = dict(zip(names, measure_candidates(function, bench_obj, args.device, candidates, args.repeats,
                                                 call_limit=args.baseline_call_limit)))
    for name, r in results.items():
        if "ms" in r:
            baselines[name] = dict(ms=r["ms"], noise=r["noise"])
        elif "over_limit_ms" in r:
            baselines[name] = dict(error=f"over {args.baseline_call_limit:g} s a call ({r['over_limit_ms'] / 1e3:.0f} s)")
        else:
            baselines[name] = dict(error=r["invalid"])
    if "ms" not in baselines["default"] or "ms" not in baselines["tuned"]:
        raise SystemExit(f"tune: {function}'s defaults or tuned params failed when re-measured: {results}")
    if results["tuned"]["error"] > error_bound(results["default"]["error"]):
        raise SystemExit(f"tune: {function}'s tuned params are wrong now: max error {results['tuned']['error']:.2e}")
    tuned = baselines.pop("tuned")
    record = dict(kernel=function, target=target, device=args.device, shape_class=bench_obj.name,
                  schedule_version=schedule_version(function, space_family), halide=importlib.metadata.version("halide"),
                  machine=where, runner=None, cluster=None, run=f"remeasure-{earlier.get('run', earlier['date'])}",
                  date=datetime.date.today().isoformat(), seed=earlier["seed"], params=params, ms=tuned["ms"],
                  ratio_to_default=tuned["ms"] / baselines["default"]["ms"], best=True, remeasured=earlier["date"],
                  baselines=baselines, trials=earlier["trials"])
    log, append = records.appender()
    with log:
        append(record)
    print(json.dumps(dict(kernel=function, ratio_to_default=round(record["ratio_to_default"], 3), baselines=brief(baselines))))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*", help="kernels.json functions, e.g. posattn_attn_plain_f32")
    parser.add_argument("--all", action="store_true", help="every kernel with a benchmark shape")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "opencl", "vulkan"])
    parser.add_argument("--target", help="Halide target without features (default: this machine's ISA level, "
                                         "or the build's target for --device)")
    parser.add_argument("--runner", help="command that runs tune/measure.py where the target is (see above)")
    parser.add_argument("--cluster", help="a Ray cluster's address (tune/cluster.py): compile on its workers, "
                                          "measure on its machines of the target")
    parser.add_argument("--machine", help="with --cluster: the CPU model to measure on, where several offer the target")
    parser.add_argument("--trial-timeout", type=float, default=600.0,
                        help="with --cluster: seconds a measurement may take before its worker is taken as hung")
    parser.add_argument("--attempts", type=int, default=3,
                        help="with --cluster: tries of a trial whose worker dies or hangs before it is recorded as failed")
    parser.add_argument("--records", help="records file (default: schedules/tuned/<family>.jsonl)")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--random", type=int, default=8, help="random samples before the local search")
    parser.add_argument("--batch", type=int, default=4,
                        help="candidates proposed at a time (measured in parallel on a cluster): part of the seed's sequence")
    parser.add_argument("--strategy", default="local", choices=sorted(STRATEGIES),
                        help="local: random samples, then mutations of the best; tpe: Optuna's TPE sampler")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-baselines", dest="baselines", action="store_false",
                        help="skip the autoscheduled baselines (a quick run)")
    parser.add_argument("--baseline-timeout", type=float, default=300.0,
                        help="seconds an autoscheduler may take to compile a baseline not in the build")
    parser.add_argument("--remeasure", action="store_true",
                        help="measure each kernel's latest summary on this CPU model again, beside the defaults and the "
                             "autoschedulers in one run, and record it for the current schedule version")
    parser.add_argument("--baseline-call-limit", type=float, default=10.0,
                        help="with --remeasure: seconds a baseline's call may take before it is timed by that call alone")
    parser.add_argument("--check-only", action="store_true",
                        help="compile the defaults and --random samples, check them through the runner; time and record nothing")
    args = parser.parse_args()
    if args.cluster and args.runner:
        parser.error("--cluster and --runner are two ways to measure elsewhere: give one")
    posattn.set_num_threads(bench.THREADS)
    functions = list(manifest()) if args.all else args.kernels
    right = True
    for function, bench_obj in benches_of(functions, skip_unshaped=args.all):
        if args.check_only:
            right = check(function, bench_obj, args) and right
        elif args.remeasure:
            remeasure(function, bench_obj, args)
        else:
            tune(function, bench_obj, args)
    if not right:
        raise SystemExit("tune: a candidate failed its check (above)")


if __name__ == "__main__":
    main()
