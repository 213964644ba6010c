"""Tuning on a Ray cluster: `tune/tune.py KERNEL --cluster HEAD:6379` compiles each batch of
candidates on any worker with a CPU and measures them only on machines that offer the run's target,
one measurement at a time per machine. Without --cluster the tuner runs in its own process; Ray is
needed only here (pip install ray).

Every node runs the same posattn checkout, built, at the same path: a candidate links against its
build's libposattn, and the measuring node loads it into its own. A node that measures says what it
measures with the resources this script prints:

    ray start --address HEAD:6379 --resources "$(PYTHONPATH=build/python .venv/bin/python tune/cluster.py)"

    {"posattn-measure": 1, "posattn-target:x86-64-linux-avx512_skylake@AMD EPYC": 1, ...}

one measuring slot, and a label per Halide target it runs (each kernel's x86 ISA level; --device
cuda adds the build's CUDA target) at its CPU model, which the records keep apart. A node started
without them only compiles. Give a measuring node no CPUs (ray start --num-cpus 0) where other
nodes compile: a compile beside a measurement disturbs its timing.

Faults: a compile whose worker dies is retried by Ray; a measurement whose worker dies, or gives no
reply within --trial-timeout seconds (hung: it is killed), is tried again by a new measuring
process, up to --attempts times, then recorded as failed with the reason. Only the driver writes
records, each trial once, with the machine and the worker (host:pid) that measured it.
"""
import argparse
import collections
import hashlib
import json
import os
import pathlib
import socket
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tune"))
from measure import RunnerError, first_line, pair_outcome  # noqa: E402

SLOT = "posattn-measure"  # one per machine: its measurements one at a time


def label(target, model):
    return f"posattn-target:{target}@{model}"


def resources(devices=()):
    """This machine's measuring slot and labels: arm-64-linux on AArch64, else each ISA level its
    x86 kernels dispatch to here; the build's target of each GPU API given."""
    import platform
    import tune
    if platform.machine() == "aarch64":
        targets = {"arm-64-linux"}
    else:
        targets = {tune.host_target()} | {tune.host_target(f) for f, k in tune.manifest().items() if k.get("x86_levels")}
    targets |= {tune.GPU_TARGETS[d] for d in devices}
    return {SLOT: 1, **{label(t, tune.bench.cpu_model()): 1 for t in sorted(targets)}}


def compile_candidate(function, target, params=None, autoscheduler=None, timeout=None):
    """On any worker: the candidate compiled by tune.Compiler, as (library bytes, symbol)."""
    import tune
    with tempfile.TemporaryDirectory(prefix="posattn-compile-") as workdir:
        library, symbol = tune.Compiler(function, target, workdir).build(params, autoscheduler, timeout).rsplit(":", 1)
        return pathlib.Path(library).read_bytes(), symbol


class Measurer:
    """On a measuring node, one process per run: the kernel's benchmark inputs built once, each
    candidate library loaded into this process's runtime and timed (tune/measure.py)."""
    def __init__(self, function, device, repeats):
        import bench
        import measure
        import posattn
        posattn.set_num_threads(bench.THREADS)
        (_, self.bench_obj), = measure.benches_of([function])
        self.function, self.device, self.repeats = function, device, repeats
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="posattn-measure-"))
        self.worker = f"{socket.gethostname()}:{os.getpid()}"

    def measure(self, max_error, *libraries):
        import measure
        candidates = []
        for data, symbol in libraries:  # named by content: each loaded once
            path = self.dir / f"{hashlib.sha1(data).hexdigest()[:16]}.so"
            if not path.exists():
                path.write_bytes(data)
            candidates.append(f"{path}:{symbol}")
        return (dict(machine=measure.machine(), worker=self.worker),
                measure.measure_candidates(self.function, self.bench_obj, self.device, candidates, self.repeats, max_error))


class Cluster:
    """tune.py's executor on a Ray cluster (tune.Local's interface): a candidate is the reference
    of its compiled library; measurements go to one Measurer per machine that offers the label."""
    def __init__(self, function, target, args):
        try:
            import ray
        except ImportError:
            raise SystemExit("tune: --cluster needs Ray (pip install ray)") from None
        self.ray = ray
        if not ray.is_initialized():
            build = os.environ.get("POSATTN_BUILD", "build")
            paths = [ROOT / build / "python", ROOT / "tune", ROOT / "bench", ROOT / "cmake"]
            ray.init(address=args.cluster, namespace="posattn-tune", log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(map(str, paths)), "POSATTN_BUILD": build}})
        self.function, self.target, self.device, self.repeats = function, target, args.device, args.repeats
        self.timeout, self.attempts = args.trial_timeout, args.attempts
        self.label = self._label(args.machine)
        self.compile = ray.remote(num_cpus=1, max_retries=3)(compile_candidate)
        self.measurer = ray.remote(num_cpus=0, max_restarts=0)(Measurer)
        self.measurers = {}  # machine (node IP) -> its measuring process

    def _label(self, model):
        offered = sorted({r for n in self.ray.nodes() if n["Alive"] for r in n["Resources"]
                          if r.startswith(label(self.target, ""))})
        if model:
            if label(self.target, model) not in offered:
                raise SystemExit(f"tune: no node of the cluster measures {self.target} on a {model} (offered: {offered})")
            return label(self.target, model)
        if len(offered) != 1:
            raise SystemExit(f"tune: {len(offered)} CPU models of the cluster measure {self.target} ({offered}): "
                             "give --machine" if offered else
                             f"tune: no node of the cluster measures {self.target}: start one with tune/cluster.py's resources")
        return offered[0]

    def _staff(self):
        """A measuring process on each machine (node IP) that has none, on a node of it with a free
        slot; two on one machine would disturb each other's timings."""
        machines = {n["NodeManagerAddress"] for n in self.ray.nodes() if n["Alive"] and self.label in n["Resources"]}
        for ip in machines - set(self.measurers):
            self.measurers[ip] = self.measurer.options(resources={SLOT: 1, self.label: 1, f"node:{ip}": 0.001}).remote(
                self.function, self.device, self.repeats)
        if not self.measurers:
            raise SystemExit(f"tune: no node of the cluster offers {self.label} any more")

    def _retire(self, ip):
        self.ray.kill(self.measurers.pop(ip), no_restart=True)

    def _measure_each(self, calls):
        """Each call (max_error, candidates) on a measuring process, one at a time per machine; one
        whose process dies or hangs is tried again on a new process, up to `attempts` tries. Per
        call: (where, results), or the RunnerError that ended it."""
        ray = self.ray
        queue, running = collections.deque((i, 1) for i in range(len(calls))), {}
        replies = [None] * len(calls)
        while queue or running:
            self._staff()
            busy = {ip for _, _, ip, _ in running.values()}
            for ip in [ip for ip in self.measurers if ip not in busy][:len(queue)]:
                i, attempt = queue.popleft()
                max_error, candidates = calls[i]
                ref = self.measurers[ip].measure.remote(max_error, *candidates)
                running[ref] = (i, attempt, ip, time.monotonic() + self.timeout)
            wait = max(0.0, min(deadline for *_, deadline in running.values()) - time.monotonic())
            ready, _ = ray.wait(list(running), num_returns=1, timeout=wait)
            for ref, (i, attempt, ip, deadline) in list(running.items()):
                if ref in ready:
                    del running[ref]
                    try:
                        where, results = ray.get(ref)
                        replies[i] = (dict(where, attempts=attempt), results)
                        continue
                    except ray.exceptions.RayTaskError as e:  # measure.py raised: no other worker would do better
                        replies[i] = RunnerError(first_line(e.cause))
                        continue
                    except ray.exceptions.RayError as e:
                        why = f"its worker died ({type(e).__name__})"
                elif deadline <= time.monotonic():
                    del running[ref]
                    why = f"its worker gave no reply in {self.timeout:g} s"
                else:
                    continue
                self._retire(ip)
                if attempt < self.attempts:
                    queue.appendleft((i, attempt + 1))
                else:
                    replies[i] = RunnerError(f"failed on {attempt} workers: {why}")
        return replies

    def build(self, params=None, autoscheduler=None, timeout=None):
        ref = self.compile.remote(self.function, self.target, params, autoscheduler, timeout)
        why = self._compile_error(ref)
        if why:
            raise RuntimeError(why)
        return ref

    def _compile_error(self, ref):
        try:
            self.ray.get(ref, timeout=self.timeout)
            return ""
        except self.ray.exceptions.RayTaskError as e:  # the compiler's own message
            return first_line(e.cause)
        except self.ray.exceptions.GetTimeoutError:
            self.ray.cancel(ref, force=True)
            return f"compile gave no reply in {self.timeout:g} s"
        except self.ray.exceptions.RayError as e:  # its worker died, more often than Ray retries
            return f"compile failed: {first_line(e)}"

    def measure(self, candidates, max_error=None):
        (reply,) = self._measure_each([(max_error, candidates)])
        if isinstance(reply, RunnerError):
            raise reply
        return reply

    def trials(self, default, jobs, max_error=None):
        """As tune.Local.trials(): the batch's compiles all at once, then its measurements on every
        measuring machine."""
        compiles = [self.compile.remote(self.function, self.target, **job) for job in jobs]
        outcomes = [dict(invalid=why) if (why := self._compile_error(ref)) else None for ref in compiles]
        measured = [i for i, o in enumerate(outcomes) if o is None]
        replies = self._measure_each([(max_error, [default, compiles[i]]) for i in measured])
        for i, reply in zip(measured, replies):
            try:
                if isinstance(reply, RunnerError):
                    raise reply
                where, (first, second) = reply
                outcomes[i] = dict(pair_outcome(first, second), **where)
            except RunnerError as e:
                outcomes[i] = dict(invalid=str(e))
        return outcomes

    def close(self):
        for ip in list(self.measurers):
            self._retire(ip)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", action="append", default=[], choices=["cuda", "opencl", "vulkan"],
                        help="a GPU API this machine measures (repeatable)")
    print(json.dumps(resources(parser.parse_args().device)))


if __name__ == "__main__":
    main()
