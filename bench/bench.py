"""Benchmark and showcase: every kernel's error against the float64 reference, its speed, and
its speed as ratios measured in the same run — to this machine's FMA peak or memory streams
(bench/probes.cpp), to the Halide Adams2019 build of the same algorithm, and to the eager NumPy
composition a framework would run.

Every kernel is timed alternately with its ceiling — compute-bound ones with a short FMA-peak
probe, memory-bound ones with a copy and a fill stream over buffers of the same size — and each
ratio is the median of the per-pair ratios, so that this shared machine's drift (CPU steal,
bandwidth) cancels. A kernel that reads and writes is held to the copy; one that only writes (a
table) is also shown against the fill with its own store pattern. Both streams write with
non-temporal stores, the machine's ceiling (as the kernels' x86 twins do for large outputs).

    make run     # short showcase (5 repeats)
    make bench   # more repeats, and writes build/bench.json
"""
import argparse
import contextlib
import inspect
import json
import pathlib
import platform
import re
import statistics
import sys
import time

import ml_dtypes
import numpy as np

import posattn
from posattn import reference

try:
    from posattn import _probes  # (built for the host only: a cross build's measure.py --check-only needs none)
except ImportError:
    _probes = None

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # device buffers made as a caller makes them
from device_buffers import APIS, device_capable_functions, to_device_operands  # noqa: E402

THREADS = 2
DEVICE = "cpu"  # --device: where the kernels run (bench.run / bench.verify take a call: on(schedule))
ENCODING_SHAPE = (8, 8192, 1024)  # [B, S, D] float32: 256 MiB per tensor, far beyond the caches


def on(schedule, device=None):
    """The keyword arguments of one kernel call: its schedule, on DEVICE unless told otherwise."""
    return dict(schedule=schedule, device=device or DEVICE)


def wall_times(fn, repeats, warmup=2):
    """Wall times of fn(r) over `repeats` calls after `warmup` calls; fn rotates inputs by r."""
    for r in range(warmup):
        fn(r)
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - start)
    return times


def median_time(fn, repeats, warmup=2):
    return statistics.median(wall_times(fn, repeats, warmup))


def rotating(make, count):
    """`count` independent input sets, so that repeated calls do not find their inputs in cache."""
    return [make() for _ in range(count)]


class Bench:
    def __init__(self, name, work, unit, run, eager, verify, fill_runs=None):
        # work: FLOPs (unit "GFLOP/s") or bytes read + written (unit "GB/s") per call.
        # fill_runs: for a kernel that only writes, how many runs of each row it writes at once
        # (its fill stream is held to the same pattern); None for the others.
        self.name, self.work, self.unit, self.run, self.eager, self.verify = name, work, unit, run, eager, verify
        self.fill_runs = fill_runs


def peak_ratio(bench, repeats):
    """Median per-pair ratio of the kernel's GFLOP/s to the FMA peak probed right after it, and
    the median kernel time."""
    bench.run(0, on("hand"))
    ratios, times = [], []
    for r in range(repeats):
        start = time.perf_counter()
        bench.run(r, on("hand"))
        t = time.perf_counter() - start
        ratios.append(bench.work / t / 1e9 / _probes.fma_peak_gflops(THREADS, repeats=1, iterations=4_000_000))
        times.append(t)
    return statistics.median(ratios), statistics.median(times)


def aligned_zeros(elements, alignment=64):
    spare = np.zeros(elements + alignment // 4, np.float32)
    start = (-spare.ctypes.data % alignment) // 4
    return spare[start:start + elements]


def selected(bench, only):
    """Whether --only picks this benchmark: its name contains the text, or one of the comma-separated texts."""
    return any(text in bench.name for text in only.split(","))


def output_array(*shape):
    """An output as posattn allocates its own: 64-byte aligned, so that the non-temporal stores of
    the x86 twins write whole lines (NumPy's large arrays start at 16 mod 64: docs/benchmarks.md)."""
    return aligned_zeros(int(np.prod(shape))).reshape(shape)


class Streams:
    """Copy and fill streams over 256 MiB buffers of `row`-element rows, timed alternately with a kernel."""
    def __init__(self, elements, row):
        self.src = np.ones(elements, np.float32)
        self.dst = aligned_zeros(elements)  # (the probes' non-temporal stores write whole aligned vectors)
        self.row = row

    def ratios(self, bench, repeats):
        """Median per-pair ratios of the kernel's speed to the copy's and to the fill's, and the
        median kernel time."""
        for r in range(2):
            bench.run(r, on("hand"))
            _probes.stream_copy(self.src, self.dst, THREADS)
        to_copy, to_fill, times = [], [], []
        for r in range(repeats):
            start = time.perf_counter()
            bench.run(r, on("hand"))
            t = time.perf_counter() - start
            t_copy = _probes.stream_copy(self.src, self.dst, THREADS)
            # not 0: zero stores run faster here
            t_fill = _probes.stream_fill(self.dst, 1.0 + r, THREADS, bench.fill_runs or 1, self.row)
            speed = bench.work / t
            to_copy.append(speed / (2 * self.src.nbytes / t_copy))
            to_fill.append(speed / (self.dst.nbytes / t_fill))
            times.append(t)
        return statistics.median(to_copy), statistics.median(to_fill), statistics.median(times)


def encoding_benches(rng):
    (B, S, D), V = ENCODING_SHAPE, 8192
    positions = [rng.integers(0, V - 2, size=(B, S)).astype(np.int32) for _ in range(2)]
    xs = rotating(lambda: rng.standard_normal((B, S, D), dtype=np.float32), 2)
    table = rng.standard_normal((V, D), dtype=np.float32)
    out = output_array(B, S, D)
    omega = reference.sinusoidal_frequencies(D).astype(np.float32)
    n = B * S * D

    def eager_pe(p, layout="interleaved"):  # what a framework's float32 eager code does
        angle = p[..., None].astype(np.float32) * omega
        if layout == "half":
            return np.concatenate([np.sin(angle), np.cos(angle)], axis=-1)
        pe = np.empty(p.shape + (D,), np.float32)
        pe[..., 0::2] = np.sin(angle)
        pe[..., 1::2] = np.cos(angle)
        return pe

    small_p = rng.integers(-10**6, 10**6, size=(2, 300)).astype(np.int32)
    small_x = rng.standard_normal((2, 300, 96), dtype=np.float32)
    small_t = rng.standard_normal((600, 96), dtype=np.float32)
    small_rows = rng.integers(0, 600, size=(2, 300)).astype(np.int32)

    def err(actual, expected):
        return float(np.abs(actual - expected).max())

    return [
        Bench("posattn_sinusoidal_f32", 4 * n, "GB/s",
              lambda r, s: posattn.sinusoidal(positions[r % 2], D, out=out, **s),
              lambda r: eager_pe(positions[r % 2]),
              lambda s: err(posattn.sinusoidal(small_p, 96, **s), reference.sinusoidal(small_p, 96)),
              fill_runs=1),
        Bench("posattn_sinusoidal_f32[half]", 4 * n, "GB/s",
              lambda r, s: posattn.sinusoidal(positions[r % 2], D, layout="half", out=out, **s),
              lambda r: eager_pe(positions[r % 2], "half"),
              lambda s: err(posattn.sinusoidal(small_p, 96, layout="half", **s),
                            reference.sinusoidal(small_p, 96, layout="half")),
              fill_runs=2),  # the sine and the cosine halves of each row
        Bench("posattn_sinusoidal_add_f32", 8 * n, "GB/s",
              lambda r, s: posattn.sinusoidal_add(xs[r % 2], positions[r % 2], out=out, **s),
              lambda r: xs[r % 2] + eager_pe(positions[r % 2]),
              lambda s: err(posattn.sinusoidal_add(small_x, small_p, **s),
                            small_x + reference.sinusoidal(small_p, 96))),
        Bench("posattn_learned_f32", 8 * n, "GB/s",
              lambda r, s: posattn.learned(table, positions[r % 2], out=out, **s),
              lambda r: table[positions[r % 2]],
              lambda s: err(posattn.learned(small_t, small_rows, **s), reference.learned(small_t, small_rows))),
        Bench("posattn_learned_add_f32", 12 * n, "GB/s",
              lambda r, s: posattn.learned_add(xs[r % 2], table, positions[r % 2], out=out, **s),
              lambda r: xs[r % 2] + table[positions[r % 2]],
              lambda s: err(posattn.learned_add(small_x, small_t, small_rows, **s),
                            small_x + reference.learned(small_t, small_rows))),
    ] + simple_benches(positions, xs, out, rng)


def simple_benches(positions, xs, out, rng):
    """The simple encodings (contract §3), table and x + PE forms, against float32 eager NumPy."""
    B, S, D = ENCODING_SHAPE
    n = B * S * D
    omega = 10000.0 ** (-np.arange(D) / D)
    eager = {
        "integer": lambda p: np.repeat(p[..., None].astype(np.float32), D, axis=-1),
        "normalized": lambda p: np.repeat((p / p.max(axis=-1, keepdims=True)).astype(np.float32)[..., None], D, -1),
        "binary": lambda p: ((p[..., None] >> np.minimum(np.arange(D), 31)) & 1).astype(np.float32),
        "sin_only": lambda p: np.sin(p[..., None].astype(np.float32) * omega.astype(np.float32)),
    }
    small_p = rng.integers(0, 2**20, size=(2, 300)).astype(np.int32)
    small_x = rng.standard_normal((2, 300, 96), dtype=np.float32)
    benches = []
    for kind, pe in eager.items():
        # posattn's functions looked up at each call: the device table times them patched (Resident)
        table, add, ref = kind, kind + "_add", getattr(reference, kind)
        benches += [
            Bench(f"posattn_{kind}_f32", 4 * n, "GB/s",
                  lambda r, s, fn=table: getattr(posattn, fn)(positions[r % 2], D, out=out, **s),
                  lambda r, pe=pe: pe(positions[r % 2]),
                  lambda s, fn=table, ref=ref: float(np.abs(getattr(posattn, fn)(small_p, 96, **s)
                                                            - ref(small_p, 96)).max()),
                  fill_runs=1),
            Bench(f"posattn_{kind}_add_f32", 8 * n, "GB/s",
                  lambda r, s, fn=add: getattr(posattn, fn)(xs[r % 2], positions[r % 2], out=out, **s),
                  lambda r, pe=pe: xs[r % 2] + pe(positions[r % 2]),
                  lambda s, fn=add, ref=ref: float(np.abs(getattr(posattn, fn)(small_x, small_p, **s)
                                                          - (small_x + ref(small_p, 96))).max())),
        ]
    return benches


def rope_benches(rng):
    """RoPE on LLaMA-shaped q, [2, 32, 4096, 128] float32 (128 MiB), against HF's eager form."""
    B, H, L, D = 2, 32, 4096, 128
    xs = rotating(lambda: rng.standard_normal((B, H, L, D), dtype=np.float32), 2)
    out = output_array(B, H, L, D)
    positions = np.arange(L, dtype=np.int32)
    yarn = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}
    small = rng.standard_normal((1, 4, 64, D), dtype=np.float32)
    small_p = rng.integers(0, 10**5, size=64).astype(np.int32)

    def eager(x, scaling, r=D):  # HF: cos/sin of cat(freqs, freqs), then x·cos + rotate_half(x)·sin
        inv, af = posattn.rope_frequencies(r, scaling=scaling)
        freqs = positions[:, None].astype(np.float32) * inv.astype(np.float32)
        emb = np.concatenate([freqs, freqs], axis=-1)
        cos, sin = np.cos(emb) * np.float32(af), np.sin(emb) * np.float32(af)
        rotary = x[..., :r]  # partial rotary (GPT-NeoX): the rest of the channels pass through
        rotated = np.concatenate([-rotary[..., r // 2:], rotary[..., :r // 2]], axis=-1)
        out = rotary * cos + rotated * sin
        return out if r == D else np.concatenate([out, x[..., r:]], axis=-1)

    def verify(s, scaling):
        inv, af = reference.rope_inv_freq(D, scaling=scaling, seq_len=int(small_p.max()) + 1)
        return float(np.abs(posattn.rope(small, small_p, scaling=scaling, **s)
                            - reference.rope(small, small_p, inv, af)).max())

    def verify_partial(s):
        inv, af = reference.rope_inv_freq(D // 2, seq_len=int(small_p.max()) + 1)
        return float(np.abs(posattn.rope(small, small_p, rotary_dim=D // 2, **s)
                            - reference.rope(small, small_p, inv, af, rotary_dim=D // 2)).max())

    return [Bench(f"posattn_rope_f32{'[yarn]' if scaling else ''}", 8 * B * H * L * D, "GB/s",
                  lambda r, s, scaling=scaling: posattn.rope(xs[r % 2], positions, scaling=scaling, out=out, **s),
                  lambda r, scaling=scaling: eager(xs[r % 2], scaling),
                  lambda s, scaling=scaling: verify(s, scaling))
            for scaling in (None, yarn)] + [
        Bench("posattn_rope_partial_f32", 8 * B * H * L * D, "GB/s",
              lambda r, s: posattn.rope(xs[r % 2], positions, rotary_dim=D // 2, out=out, **s),
              lambda r: eager(xs[r % 2], None, D // 2), verify_partial)]


def complex_order_benches(rng):
    """Complex-order embeddings for [8, 8192] tokens of width 1024 (two 256 MiB outputs), V = 30000."""
    (B, S, D), V = ENCODING_SHAPE, 30000
    ids = rng.integers(0, V, size=(B, S)).astype(np.int32)
    positions = np.broadcast_to(np.arange(1, S + 1, dtype=np.int32), (B, S))
    amplitude = rng.standard_normal((V, D), dtype=np.float32)
    frequency = posattn.complex_order_frequency_init(V, D, "classification") / V
    phase = rng.uniform(-np.pi, np.pi, (V, D)).astype(np.float32)
    real, imag = output_array(B, S, D), output_array(B, S, D)
    small = [a[:2, :300] for a in (ids, positions)]

    def eager(p):  # the public model: gather, angle, then r·cos and r·sin
        angle = frequency[ids] * positions[..., None].astype(np.float32) + (0 if p is None else phase[ids])
        r = amplitude[ids]
        return r * np.cos(angle), r * np.sin(angle)

    def error(s, p):
        got = posattn.complex_order(*small, amplitude, frequency, p, **s)
        return float(np.abs(np.stack(got) - np.stack(reference.complex_order(*small, amplitude, frequency, p))).max())

    # Bytes: the gathered rows of the tables (read) and both outputs (written).
    return [Bench(f"posattn_complex_order{'_phase' if p is not None else ''}_f32",
                  4 * B * S * D * (4 + (p is not None)), "GB/s",
                  lambda r, s, p=p: posattn.complex_order(ids, positions, amplitude, frequency, p, real=real, imag=imag,
                                                          **s),
                  lambda r, p=p: eager(p), lambda s, p=p: error(s, p))
            for p in (None, phase)]


FLOATER_STAGES = {"rk4_38": 4, "rk4": 4, "midpoint": 2, "euler": 1}
FLOATER_POSITIONS = 64


def floater_benches(rng):
    """FLOATER is sequential in time: the paper's encoder setting (d = hidden = 512, 6 initial values =
    q/k/v × 2 layers, 5 steps per position, 64 positions) with each integrator, against the same
    integrator in NumPy (float32 matrix products on OpenBLAS). GFLOP/s count the two matrix
    products of every stage; floater_line() reports the time per position."""
    d, batch, N, substeps = 512, 6, FLOATER_POSITIONS, 5
    p0 = rng.standard_normal((batch, d)).astype(np.float32)
    W1, b1 = (rng.standard_normal((d, d + 1)) / np.sqrt(d)).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    W2, b2 = (rng.standard_normal((d, d + 1)) / np.sqrt(d)).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    out = np.empty((batch, N, d), np.float32)
    small = [p0[:2, :37], rng.standard_normal((70, 38)).astype(np.float32) / 6,
             rng.standard_normal(70).astype(np.float32), rng.standard_normal((37, 71)).astype(np.float32) / 8,
             rng.standard_normal(37).astype(np.float32)]  # d = 37, hidden = 70

    def field(t, p):  # float32, as a framework's eager code runs it
        hidden = np.maximum(p @ W1[:, :d].T + W1[:, d] * np.float32(t) + b1, 0)
        return hidden @ W2[:, :d].T + W2[:, d] * np.float32(t) + b2

    def eager(method):
        y, h, rows = p0, np.float32(0.01 / substeps), [p0]
        for n in range(1, N):
            for k in range(substeps):
                y = reference.ode_step(field, method, ((n - 1) * substeps + k) * h, y, h)
            rows.append(y)
        return np.stack(rows, 1)

    def verify(s, method):
        return float(np.abs(posattn.floater(40, *small, method=method, **s)
                            - reference.floater(40, *small, method=method)).max())

    return [Bench(f"posattn_floater_step_{method}_f32", 2 * 2 * d * (d + 1) * batch * stages * substeps * (N - 1),
                  "GFLOP/s",
                  lambda r, s, method=method: posattn.floater(N, p0, W1, b1, W2, b2, substeps=substeps, method=method,
                                                              out=out, **s),
                  lambda r, method=method: eager(method), lambda s, method=method: verify(s, method))
            for method, stages in FLOATER_STAGES.items()]


def cpu_model(cpuinfo_text=None, fallback=platform.machine()):
    """The value of a cpuinfo text's (this machine's by default) first "model name" (x86), "Model"
    or "CPU part" (ARM) line, `fallback` where it has none: every figure is reported with it, and
    the build matches tuned records by it (cmake/tuned_records.cmake's posattn_cpu_model, with the
    same fallback: the processor architecture)."""
    if cpuinfo_text is None:
        cpuinfo = pathlib.Path("/proc/cpuinfo")
        cpuinfo_text = cpuinfo.read_text() if cpuinfo.exists() else ""
    return next((l.split(":", 1)[1].strip() for l in cpuinfo_text.splitlines()
                 if re.match(r"(model name|Model|CPU part)[ \t]*:", l)), fallback)


def floater_line(row):
    """The time per position of a FLOATER row of the table (the first position is p0 itself)."""
    return f"{row['kernel']}: {row['time_ms'] * 1e3 / (FLOATER_POSITIONS - 1):.0f} µs per position"


def alibi_benches(rng):
    """The ALiBi bias table [16, 2048, 2048] float32 (256 MiB), against its eager float32 form."""
    H, L = 16, 2048
    slopes = posattn.alibi_slopes(H)
    out = output_array(H, L, L)
    m32 = slopes.astype(np.float32)[:, None, None]
    offset = (np.arange(L)[None, :] - np.arange(L)[:, None]).astype(np.float32)
    return [Bench("posattn_alibi_bias_f32", 4 * H * L * L, "GB/s",
                  lambda r, s: posattn.alibi_bias(slopes, L, L, out=out, **s),
                  lambda r: m32 * offset,
                  lambda s: float(np.abs(posattn.alibi_bias(slopes, 300, 500, **s)
                                         - reference.alibi_bias(slopes, 300, 500)).max()),
                  fill_runs=1)]


def attention_benches(rng):
    B, H, L, D = 1, 8, 2048, 64
    sets = rotating(lambda: [rng.standard_normal((B, H, L, D), dtype=np.float32) for _ in range(3)], 3)
    out = np.empty((B, H, L, D), np.float32)
    small = [rng.standard_normal((1, 8, 512, 64), dtype=np.float32) for _ in range(3)]

    def eager(q, k, v, mask):  # materialized scores, as HF-style eager attention runs; mask: causal, or the visible keys
        s = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(D))
        if mask is True:
            mask = np.tri(L, dtype=bool)
        if mask is not False:
            s = np.where(mask, s, np.float32(-np.inf))
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        return (s / s.sum(axis=-1, keepdims=True)) @ v

    benches = []
    slopes = posattn.alibi_slopes(H)

    def eager_alibi(q, k, v):  # BLOOM-style: the [H, L, L] bias materialized and added to the scores
        s = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(D))
        s = s + slopes.astype(np.float32)[:, None, None] * (np.arange(L) - np.arange(L)[:, None]).astype(np.float32)
        s = np.where(np.tri(L, dtype=bool), s, np.float32(-np.inf))
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        return (s / s.sum(axis=-1, keepdims=True)) @ v

    benches.append(Bench(
        "posattn_attn_alibi_f32_causal", 4.0 * B * H * L * L * D * 0.5, "GFLOP/s",
        lambda r, s: posattn.attention(*sets[r % 3], causal=True, alibi_slopes=slopes, out=out, **s),
        lambda r: eager_alibi(*sets[r % 3]),
        lambda s: float(np.abs(posattn.attention(*small, causal=True, alibi_slopes=slopes, **s)
                               - reference.attention(*small, causal=True,
                                                     bias=reference.alibi_bias(slopes, 512, 512)[None])).max())))
    t5_table = rng.standard_normal((32, H)).astype(np.float32)
    t5 = np.moveaxis(t5_table[reference.t5_bucket(np.arange(L)[None, :] - np.arange(L)[:, None], False)], -1, 0)

    def eager_t5(q, k, v):  # HF T5: the [H, L, L] position bias materialized and added, no scaling
        s = q @ k.transpose(0, 1, 3, 2) + t5
        s = np.where(np.tri(L, dtype=bool), s, np.float32(-np.inf))
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        return (s / s.sum(axis=-1, keepdims=True)) @ v

    benches.append(Bench(
        "posattn_attn_t5_f32_causal", 4.0 * B * H * L * L * D * 0.5, "GFLOP/s",
        lambda r, s: posattn.attention(*sets[r % 3], causal=True, t5_table=t5_table, t5_bidirectional=False, out=out,
                                       **s),
        lambda r: eager_t5(*sets[r % 3]),
        lambda s: float(np.abs(posattn.attention(*small, causal=True, t5_table=t5_table, t5_bidirectional=False,
                                                 **s)
                               - reference.attention(*small, 1.0, True,
                                                     bias=reference.t5_bias(t5_table, 512, 512, False)[None])).max())))
    inv, _ = posattn.rope_frequencies(D)
    angle = np.arange(L, dtype=np.float32)[:, None] * inv.astype(np.float32)
    cos, sin = np.cos(np.concatenate([angle, angle], -1)), np.sin(np.concatenate([angle, angle], -1))

    def eager_rope(q, k, v):  # HF LLaMA: rotate q and k (rotate_half), then materialized causal attention
        def rotate(x):
            return x * cos + np.concatenate([-x[..., D // 2:], x[..., :D // 2]], -1) * sin
        q, k = rotate(q), rotate(k)
        s = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(D))
        s = np.where(np.tri(L, dtype=bool), s, np.float32(-np.inf))
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        return (s / s.sum(axis=-1, keepdims=True)) @ v

    def rope_error(s):
        inv64, af = reference.rope_inv_freq(D)
        q, k, v = small
        rotated = [reference.rope(x, np.arange(512), inv64, af) for x in (q, k)]
        return float(np.abs(posattn.attention(q, k, v, causal=True, rope={}, **s)
                            - reference.attention(*rotated, v, causal=True)).max())

    benches.append(Bench(
        "posattn_attn_rope_f32_causal", 4.0 * B * H * L * L * D * 0.5, "GFLOP/s",
        lambda r, s: posattn.attention(*sets[r % 3], causal=True, rope={}, out=out, **s),
        lambda r: eager_rope(*sets[r % 3]), rope_error))
    benches += relative_attention_benches(rng, sets, small, out)
    for causal in (False, True):
        # A causal call does about half the work; the ratio counts only the visible half.
        flops = 4.0 * B * H * L * L * D * (0.5 if causal else 1.0)
        benches.append(Bench(
            f"posattn_attn_plain_f32{'_causal' if causal else ''}", flops, "GFLOP/s",
            lambda r, s, causal=causal: posattn.attention(*sets[r % 3], causal=causal, out=out, **s),
            lambda r, causal=causal: eager(*sets[r % 3], causal),
            lambda s, causal=causal: float(np.abs(posattn.attention(*small, causal=causal, **s)
                                                  - reference.attention(*small, causal=causal)).max())))
    # A sliding window (Mistral's, causal), which runs plain attention's window shape class: the
    # key blocks wholly before a tile's window are skipped. FLOPs count the visible band.
    W = 256
    band = np.tri(L, dtype=bool) & ~np.tri(L, k=-W, dtype=bool)
    benches.append(Bench(
        f"posattn_attn_plain_f32_window[causal{W}]", 4.0 * B * H * D * int(band.sum()), "GFLOP/s",
        lambda r, s: posattn.attention(*sets[r % 3], causal=True, window=W, out=out, **s),
        lambda r: eager(*sets[r % 3], band),
        lambda s: float(np.abs(posattn.attention(*small, causal=True, window=W, **s)
                               - reference.attention(*small, causal=True, window=W)).max())))
    benches += mask_benches(rng, sets, small, out, eager)
    benches += [decode_bench(rng), decode_bench(rng, check_finite=False), decode_bench(rng, Hq=8), decode_bench(rng, Hq=64)]
    return benches


def mask_benches(rng, sets, small, out, eager):
    """Masked plain attention at the benchmark's shape (bench/masks.py times each against the same
    call unmasked): a dense boolean mask as SDPA takes it, a dense float bias per head, and 8
    packed causal documents of 256 tokens, whose FLOPs count only their own keys."""
    (B, H, L, D), S = sets[0][0].shape, small[0].shape[2]
    mask = rng.random((1, 1, L, L)) < 0.9
    bias = rng.standard_normal((1, H, L, L), dtype=np.float32)
    documents = np.repeat(np.arange(8, dtype=np.int32), L // 8)[None]
    small_documents = np.repeat(np.arange(8, dtype=np.int32), S // 8)[None]
    same_document = (documents[0][:, None] == documents[0][None, :]) & np.tri(L, dtype=bool)

    def eager_bias(q, k, v):  # SDPA's float attn_mask, materialized with the scores
        s = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(D)) + bias
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        return (s / s.sum(axis=-1, keepdims=True)) @ v

    def error(**masks):
        small_masks = {name: (m[..., :S, :S] if name in ("mask", "bias") else m) for name, m in masks.items()}
        return lambda s: float(np.abs(posattn.attention(*small, **small_masks, **s)
                                      - reference.attention(*small, **small_masks)).max())
    flops = 4.0 * B * H * L * L * D
    return [
        Bench("posattn_attn_plain_f32[bool_mask]", flops * mask.mean(), "GFLOP/s",
              lambda r, s: posattn.attention(*sets[r % 3], mask=mask, out=out, **s),
              lambda r: eager(*sets[r % 3], mask[0, 0]), error(mask=mask)),
        Bench("posattn_attn_plain_f32[float_bias]", flops, "GFLOP/s",
              lambda r, s: posattn.attention(*sets[r % 3], bias=bias, out=out, **s),
              lambda r: eager_bias(*sets[r % 3]), error(bias=bias)),
        Bench("posattn_attn_plain_f32_window[packed8x256,causal]", 4.0 * B * H * D * int(same_document.sum()), "GFLOP/s",
              lambda r, s: posattn.attention(*sets[r % 3], causal=True, q_segments=documents, k_segments=documents, out=out, **s),
              lambda r: eager(*sets[r % 3], same_document),
              lambda s: float(np.abs(posattn.attention(*small, causal=True, q_segments=small_documents,
                                                       k_segments=small_documents, **s)
                                     - reference.attention(*small, causal=True, q_segments=small_documents,
                                                           k_segments=small_documents)).max())),
    ]


def decode_bench(rng, Hq=32, check_finite=True, dtype=np.float32):
    """Decoding one token: q [1, Hq, 1, 128] over a 4096-key cache of 8 KV heads. With GQA (Hq 32)
    the runtime runs one 4-row tile per KV head with plain attention's decode shape class, without
    (Hq 8) a one-row tile with its decode1 class, with groups of 8 (Hq 64) an 8-row tile with its
    decode8 class (runtime/src/attention.cpp): the shapes the tuner times those classes on (the
    first of each). Memory-bound: its work is the bytes of K and V, read once by the kernel, and
    once more by the NaN/Inf scan unless check_finite=False. dtype: of q, the cache and out (a
    float16 or bfloat16 cache is half the bytes); NumPy's eager form computes in float32."""
    Hkv, Lk, D = 8, 4096, 128
    q = rng.standard_normal((1, Hq, 1, D), dtype=np.float32).astype(dtype)
    caches = rotating(lambda: [rng.standard_normal((1, Hkv, Lk, D), dtype=np.float32).astype(dtype) for _ in range(2)], 2)
    out = np.empty((1, Hq, 1, D), dtype)
    # Checked on head sizes of whole 16-channel vectors and not (the schedule's two q·k forms).
    smalls = [[rng.standard_normal(shape, dtype=np.float32).astype(dtype) for shape in ((2, Hq // 4, 1, D), (2, 2, 300, D), (2, 2, 300, D))]
              for D in (40, 64)]

    def eager(k, v):  # HF's repeat_kv, then materialized scores
        k, v = (np.repeat(x.astype(np.float32), Hq // Hkv, axis=1) for x in (k, v))
        s = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(D))
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        return (s / s.sum(axis=-1, keepdims=True)) @ v

    name = {1: "posattn_attn_plain_f32_decode1[mha]", 4: f"posattn_attn_plain_f32_decode[gqa{'' if check_finite else ',unchecked'}]",
            8: "posattn_attn_plain_f32_decode8[gqa8]"}[Hq // Hkv].replace("_f32", "_" + STORAGE_SUFFIX[np.dtype(dtype)])
    return Bench(name, 2 * Hkv * Lk * D * np.dtype(dtype).itemsize, "GB/s",
                 lambda r, s: posattn.attention(q, *caches[r % 2], causal=True, check_finite=check_finite, out=out, **s),
                 lambda r: eager(*caches[r % 2]),
                 lambda s: max(float(np.abs(posattn.attention(*small, causal=True, **s)
                                            - reference.attention(*small, causal=True)).max()) for small in smalls))


STORAGE_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(ml_dtypes.bfloat16): "bf16"}


def storage_benches(rng):
    """The float16 and bfloat16 kernels (contract §15) on the float32 rows' shapes: a GQA decode
    step, causal prefill, linear, RoPE and the x + PE forms (half the bytes of float32). Their "eager"
    column is what one ran without them: the inputs widened to float32 and posattn's float32
    kernel (the decode row: HF's eager form, as its float32 row)."""
    (B, S, D), L = ENCODING_SHAPE, 2048
    benches = []
    for dtype in (np.float16, ml_dtypes.bfloat16):
        suffix, size = STORAGE_SUFFIX[np.dtype(dtype)], np.dtype(dtype).itemsize
        benches.append(decode_bench(rng, dtype=dtype))
        qkv = rotating(lambda: [rng.standard_normal((1, 8, L, 64), dtype=np.float32).astype(dtype) for _ in range(3)], 2)
        out = np.empty((1, 8, L, 64), dtype)
        small = [rng.standard_normal((1, 8, 300, 64), dtype=np.float32).astype(dtype) for _ in range(3)]
        benches.append(Bench(
            f"posattn_attn_plain_{suffix}_causal", 4.0 * 8 * L * L * 64 * 0.5, "GFLOP/s",
            lambda r, s, qkv=qkv, out=out: posattn.attention(*qkv[r % 2], causal=True, out=out, **s),
            lambda r, qkv=qkv: posattn.attention(*(a.astype(np.float32) for a in qkv[r % 2]), causal=True),
            lambda s, small=small: float(np.abs(posattn.attention(*small, causal=True, **s).astype(np.float64)
                                                - reference.attention(*small, causal=True)).max())))
        N, E, O = 512, 768, 768  # linear_benches' projection (bfloat16: vdpbf16ps where the CPU has it)
        lin = rotating(lambda: [rng.standard_normal(shape, dtype=np.float32).astype(dtype) for shape in ((N, E), (O, E), (O,))], 2)
        lin_out = np.empty((N, O), dtype)
        benches.append(Bench(
            f"posattn_linear_{suffix}", 2.0 * N * E * O, "GFLOP/s",
            lambda r, s, lin=lin, out=lin_out: posattn.linear(*lin[r % 2], out=out, **s),
            lambda r, lin=lin: posattn.linear(*(a.astype(np.float32) for a in lin[r % 2])),
            lambda s, lin=lin: float(np.abs(posattn.linear(*lin[0], **s).astype(np.float64)
                                            - (lin[0][0].astype(np.float64) @ lin[0][1].astype(np.float64).T + lin[0][2])).max())))
        x = rotating(lambda: rng.standard_normal((2, 32, 4096, 128), dtype=np.float32).astype(dtype), 2)
        x_out = np.empty((2, 32, 4096, 128), dtype)
        benches.append(Bench(
            f"posattn_rope_{suffix}", 2 * size * x_out.size, "GB/s",
            lambda r, s, x=x, out=x_out: posattn.rope(x[r % 2], out=out, **s),
            lambda r, x=x: posattn.rope(x[r % 2].astype(np.float32)),
            lambda s, small=small[0]: float(np.abs(posattn.rope(small, **s).astype(np.float64)
                                                   - posattn.rope(small.astype(np.float32))).max())))
        xs = rotating(lambda: rng.standard_normal((B, S, D), dtype=np.float32).astype(dtype), 2)
        positions = [rng.integers(0, 8000, size=(B, S)).astype(np.int32) for _ in range(2)]
        add_out = np.empty((B, S, D), dtype)
        for kind in ("sinusoidal", "integer", "normalized", "binary", "sin_only"):
            benches.append(Bench(
                f"posattn_{kind}_add_{suffix}", 2 * size * add_out.size, "GB/s",
                lambda r, s, fn=kind + "_add", xs=xs, out=add_out: getattr(posattn, fn)(xs[r % 2], positions[r % 2], out=out, **s),
                lambda r, fn=kind + "_add", xs=xs: getattr(posattn, fn)(xs[r % 2].astype(np.float32), positions[r % 2]),
                lambda s, fn=kind + "_add", x=small[0][0]: float(np.abs(
                    getattr(posattn, fn)(x, positions[0][0, :300], **s).astype(np.float64)
                    - getattr(posattn, fn)(x.astype(np.float32), positions[0][0, :300])).max())))
    return benches


def baseline(bench):
    """The autoscheduled build of the bench's kernel (manifest: Adams2019 unless the kernel names
    another), or None where this build has none (POSATTN_BASELINES=OFF)."""
    schedules = {k["function"]: k["schedule"] for k in posattn.kernels() if k["schedule"] != "hand"}
    mine = [f for f in schedules if bench.name.startswith(f)]
    return schedules[max(mine, key=len)] if mine else None


def relative_attention_benches(rng, sets, small, out):
    """Shaw (encoder, K = 64), Transformer-XL (causal segment) and DeBERTa-v3 (c2p + p2c, 256
    buckets) at B=1, H=8, L=2048, D=64 against their eager forms, which materialize the score and
    relative tensors as t2t and HF do. FLOPs count only q·k and p·v."""
    B, H, L, D = sets[0][0].shape
    benches, flops = [], 4.0 * B * H * L * L * D
    softmax = lambda s: (lambda e: e / e.sum(axis=-1, keepdims=True))(np.exp(s - s.max(axis=-1, keepdims=True)))
    causal_mask = np.tri(L, dtype=bool)

    K = 64
    rel_k, rel_v = (rng.standard_normal((2 * K + 1, D)).astype(np.float32) for _ in range(2))
    shaw = {"rel_k": rel_k, "rel_v": rel_v}
    idx = reference.shaw_index(L, L, K)

    def eager_shaw(q, k, v):  # t2t's _relative_attention_inner: [L, L, D] tables gathered, batched over rows
        scale = np.float32(1 / np.sqrt(D))
        rows = lambda x: x.reshape(B * H, L, -1).transpose(1, 0, 2)  # [L, B·H, ·]
        s = (q @ k.transpose(0, 1, 3, 2) + (rows(q) @ rel_k[idx].transpose(0, 2, 1)).transpose(1, 0, 2).reshape(B, H, L, L)) * scale
        w = softmax(s)
        return w @ v + (rows(w) @ rel_v[idx]).transpose(1, 0, 2).reshape(B, H, L, D)

    benches.append(Bench(
        "posattn_attn_shaw_f32", flops, "GFLOP/s",
        lambda r, s: posattn.attention(*sets[r % 3], shaw=shaw, out=out, **s),
        lambda r: eager_shaw(*sets[r % 3]),
        lambda s: float(np.abs(posattn.attention(*small, shaw=shaw, **s)
                               - reference.shaw_attention(*small, rel_k, rel_v)).max())))

    r = rng.standard_normal((H, L, D)).astype(np.float32)
    u, v_bias = (rng.standard_normal((H, D)).astype(np.float32) for _ in range(2))
    xl = {"r": r, "u": u, "v_bias": v_bias}
    r_descending = np.ascontiguousarray(r[:, ::-1])

    def eager_xl(q, k, v):  # HF Transformer-XL: AC + rel_shift(BD), masked, scaled after summing
        ac = (q + u[:, None]) @ k.transpose(0, 1, 3, 2)
        bd = (q + v_bias[:, None]) @ r_descending.transpose(0, 2, 1)
        bd = np.concatenate([np.zeros((B, H, L, 1), np.float32), bd], -1).reshape(B, H, L + 1, L)[:, :, 1:].reshape(B, H, L, L)
        s = np.where(causal_mask, (ac + bd) * np.float32(1 / np.sqrt(D)), np.float32(-np.inf))
        return softmax(s) @ v

    small_r = r[:, :small[0].shape[2]]
    benches.append(Bench(
        "posattn_attn_xl_f32_causal", flops * 0.5, "GFLOP/s",
        lambda r_, s: posattn.attention(*sets[r_ % 3], causal=True, transformer_xl=xl, out=out, **s),
        lambda r_: eager_xl(*sets[r_ % 3]),
        lambda s: float(np.abs(posattn.attention(*small, causal=True, **s,
                                                 transformer_xl={"r": small_r, "u": u, "v_bias": v_bias})
                               - reference.transformer_xl_attention(*small, small_r, u, v_bias)).max())))

    buckets, max_rel, hidden = 256, 512, H * D
    emb = rng.standard_normal((2 * buckets, hidden)).astype(np.float32)
    w_key, w_query = ((rng.standard_normal((H * D, hidden)) / np.sqrt(hidden)).astype(np.float32) for _ in range(2))
    b_key, b_query = (rng.standard_normal(H * D).astype(np.float32) for _ in range(2))
    deberta = dict(rel_embeddings=emb, w_key=w_key, b_key=b_key, w_query=w_query, b_query=b_query,
                   position_buckets=buckets, max_relative_positions=max_rel)
    rel = reference.deberta_bucket(np.arange(L)[:, None] - np.arange(L)[None, :], buckets, max_rel)
    c2p_pos = np.clip(rel + buckets, 0, 2 * buckets - 1)
    p2c_pos = np.clip(-rel + buckets, 0, 2 * buckets - 1)

    def eager_deberta(q, k, v):  # HF DeBERTa-v2 disentangled_attention_bias: gathers, p2c transposed
        heads = lambda x: x.reshape(2 * buckets, H, D).transpose(1, 0, 2)
        K_r, Q_r = heads(emb @ w_key.T + b_key), heads(emb @ w_query.T + b_query)
        scale = np.float32(1 / np.sqrt(3 * D))
        c2p = np.take_along_axis(q @ K_r.transpose(0, 2, 1), np.broadcast_to(c2p_pos, (B, H, L, L)), -1)
        p2c = np.take_along_axis(k @ Q_r.transpose(0, 2, 1), np.broadcast_to(p2c_pos, (B, H, L, L)), -1)
        return softmax((q @ k.transpose(0, 1, 3, 2) + c2p + p2c.transpose(0, 1, 3, 2)) * scale) @ v

    benches.append(Bench(
        "posattn_attn_deberta_f32", flops, "GFLOP/s",
        lambda r_, s: posattn.attention(*sets[r_ % 3], deberta=deberta, out=out, **s),
        lambda r_: eager_deberta(*sets[r_ % 3]),
        lambda s: float(np.abs(posattn.attention(*small, deberta=deberta, **s)
                               - reference.deberta_attention(*small, **deberta)).max())))
    return benches


def linear_benches(rng):
    """The projection DeBERTa runs on its relative embeddings (2·256 rows, hidden 768 → 768)."""
    N, E, O = 512, 768, 768
    xs = rotating(lambda: [rng.standard_normal((N, E), dtype=np.float32)], 3)
    w, b = rng.standard_normal((O, E), dtype=np.float32), rng.standard_normal(O, dtype=np.float32)
    out = np.empty((N, O), np.float32)
    return [Bench(
        "posattn_linear_f32", 2.0 * N * E * O, "GFLOP/s",
        lambda r, s: posattn.linear(xs[r % 3][0], w, b, out=out, **s),
        lambda r: xs[r % 3][0] @ w.T + b,
        lambda s: float(np.abs(posattn.linear(xs[0][0], w, b, **s) - (xs[0][0].astype(np.float64) @ w.T + b)).max()))]


def agreement(bench, schedule):
    """The autoscheduled build at the benchmark size (the sizes its schedule assumes) against the hand
    schedule: max |difference|, so that a baseline is only timed if it computes the same thing."""
    hand = np.array(bench.run(0, on("hand")))  # a copy (stacked for kernels with several outputs)
    return float(np.abs(np.array(bench.run(0, on(schedule))) - hand).max())


def all_benches(rng):
    return (encoding_benches(rng) + complex_order_benches(rng) + rope_benches(rng) + alibi_benches(rng)
            + linear_benches(rng) + floater_benches(rng) + attention_benches(rng) + storage_benches(rng))


class Resident:
    """posattn's calls with their float32 operands in device buffers of `memory` (tests/device_buffers.py),
    each uploaded once and reused, outputs left on the device: what a caller whose tensors live on the
    device runs, so that a call times the kernel without the runtime's copies from and to the host
    (attention's NaN/Inf scan of its operands, which reads them back to the host, is left out too)."""
    def __init__(self, memory):
        self.memory = memory
        self.buffers = {}  # id of a host array: (the array, kept alive; its DeviceArray)

    def upload(self, a):
        return a, posattn.DeviceArray(self.memory.buffer(np.ascontiguousarray(a)), a.shape)

    def wrap(self, fn):
        signature = inspect.signature(fn)

        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            to_device_operands(bound, self.upload, self.buffers)
            if "check_finite" in signature.parameters:  # its scan reads device operands back to the host
                bound.arguments["check_finite"] = False
            return fn(*bound.args, **bound.kwargs)
        return call

    @contextlib.contextmanager
    def patched(self):
        """posattn's functions that take device buffers run through wrap() inside the block."""
        originals = device_capable_functions()
        try:
            for name, fn in originals.items():
                setattr(posattn, name, self.wrap(fn))
            yield
        finally:
            for name, fn in originals.items():
                setattr(posattn, name, fn)
            self.memory.release()
            self.buffers = {}


@contextlib.contextmanager
def resident(device):
    """Inside the block, posattn's calls take their float32 operands as device buffers (Resident)
    where the device's API has them (cuda, opencl); elsewhere nothing changes."""
    if device not in APIS:
        yield
        return
    with Resident(APIS[device]()).patched():
        yield


def device_copy_bandwidth(memory, repeats):
    """Bytes read + written per second by the device's own copy of a buffer as large as an encoding tensor."""
    block = np.ones(int(np.prod(ENCODING_SHAPE)), np.float32)
    src, dst = memory.buffer(block), memory.buffer(block)
    try:
        return 2 * block.nbytes / median_time(lambda r: memory.copy(dst, src, block.nbytes), repeats)
    finally:
        memory.release()


def device_table(args, rng):
    """Every kernel on a GPU API: its error; its time with host arrays (the runtime's copies to and
    from the device included) and, on APIs that take device buffers, with its operands already on
    the device (the kernel's own time); its speed as a share of the device's copy bandwidth, and its
    speed-up over this host's CPU kernel and over NumPy. Kernels not built for the API are listed
    with the reason."""
    global DEVICE
    DEVICE = args.device
    try:  # (no driver, or a build without the API: the kernels then say so one by one)
        copy = device_copy_bandwidth(APIS[args.device](), args.repeats) if args.device in APIS else None
    except Exception as e:
        print(f"no device buffers on {args.device}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        copy = None
    print(f"device: {args.device}; host: {platform.processor() or platform.machine()}, {THREADS} CPU threads; "
          + (f"device copy {copy / 1e9:.0f} GB/s" if copy else "no device buffers on this API") + "\n")
    print("Speed and speed-ups are of the device-array time where there is one, else of the host-array time.\n")
    header = ("kernel", "max err vs f64", "ms, host arrays", "ms, device arrays", "speed", "of device copy",
              "vs host CPU", "vs numpy")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    rows = []
    for bench in all_benches(rng):
        if not selected(bench, args.only):
            continue
        name = f"{bench.name}.{args.device}"
        try:
            error = bench.verify(on("hand"))
        except Exception as e:  # not built for this API, or no such device: say so, never time it
            print(f"| {name} | not run: {str(e).splitlines()[0]} |" + " |" * (len(header) - 2), flush=True)
            continue
        t_host = median_time(lambda r: bench.run(r, on("hand")), args.repeats)
        t_device = None
        if copy:
            with resident(args.device):
                t_device = median_time(lambda r: bench.run(r, on("hand")), args.repeats)
        t = t_device or t_host
        t_cpu = median_time(lambda r: bench.run(r, on("hand", "cpu")), max(3, args.repeats // 3))
        t_numpy = median_time(bench.eager, max(3, args.repeats // 3), warmup=1)
        speed = bench.work / t / 1e9
        of_copy = bench.work / t / copy if copy and bench.unit == "GB/s" else None
        rows.append(dict(kernel=name, max_error=error, time_ms=t_host * 1e3,
                         device_arrays_ms=t_device and t_device * 1e3, speed=speed, unit=bench.unit,
                         of_device_copy=of_copy, speedup_vs_cpu=t_cpu / t, speedup_vs_numpy=t_numpy / t))
        print(f"| {name} | {error:.2e} | {t_host * 1e3:.2f} | " + (f"{t_device * 1e3:.3f}" if t_device else "—")
              + f" | {speed:.1f} {bench.unit} | " + (f"{of_copy:.0%}" if of_copy else "—")
              + f" | {t_cpu / t:.2f}x | {t_numpy / t:.1f}x |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(dict(device=args.device, device_copy_gbs=copy and copy / 1e9, kernels=rows),
                                        indent=2))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", type=pathlib.Path)
    parser.add_argument("--autoschedulers", action="store_true",
                        help="also time each kernel's autoscheduled baseline (make bench; needs POSATTN_BASELINES=ON)")
    parser.add_argument("--only", default="", help="run only the kernels whose name contains this text (or one "
                                                   "of these, comma-separated)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "opencl", "vulkan"],
                        help="run the kernels on this GPU API (scripts/gpu_check.sh) instead of the CPU")
    args = parser.parse_args()

    posattn.set_num_threads(THREADS)
    rng = np.random.default_rng()
    if args.device != "cpu":
        return device_table(args, rng)
    peak = _probes.fma_peak_gflops(THREADS)
    streams = Streams(int(np.prod(ENCODING_SHAPE)), ENCODING_SHAPE[-1])
    print(f"machine: {cpu_model()}, {THREADS} threads; measured FMA peak "
          f"{peak:.1f} GFLOP/s ({_probes.vector_isa}); memory streams over {streams.src.nbytes >> 20} MiB\n")

    rows = []
    header = ("kernel", "max err vs f64", "time ms", "speed", "of FMA peak / of copy", "of fill",
              "vs autoscheduler", "vs numpy", "autoscheduler max diff")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for bench in all_benches(rng):
        if not selected(bench, args.only):
            continue
        error = bench.verify(on("hand"))
        if bench.unit == "GB/s":
            ratio, to_fill, t = streams.ratios(bench, args.repeats)
        else:
            ratio, t = peak_ratio(bench, args.repeats)
            to_fill = None
        autoscheduler = baseline(bench) if args.autoschedulers else None
        diff = t_auto = None
        versus, diff_text = "not built" if args.autoschedulers else "(make bench)", "-"
        try:  # an autoscheduled build assumes sizes of at least its estimates: below them it may fail
            if autoscheduler:
                diff = agreement(bench, autoscheduler)
                t_auto = median_time(lambda r: bench.run(r, on(autoscheduler)), max(3, args.repeats // 3))
                versus, diff_text = f"{t_auto / t:.2f}x ({autoscheduler})", f"{diff:.1e}"
        except posattn.Error as e:
            diff = t_auto = None
            versus, diff_text = f"failed ({autoscheduler}: {str(e).rsplit('): ', 1)[-1][:70]})", "-"
        t_numpy = median_time(bench.eager, max(3, args.repeats // 3), warmup=1)
        speed = bench.work / t / 1e9
        row = dict(kernel=bench.name + ".x86", max_error=error, time_ms=t * 1e3, speed=speed, unit=bench.unit,
                   ratio=ratio, ratio_to_fill=to_fill if bench.fill_runs else None, autoscheduler=autoscheduler,
                   speedup_vs_autoscheduler=None if t_auto is None else t_auto / t, speedup_vs_numpy=t_numpy / t,
                   autoscheduler_max_diff=diff)
        rows.append(row)
        fill = f"{100 * row['ratio_to_fill']:.0f}%" if row["ratio_to_fill"] is not None else "-"
        print(f"| {row['kernel']} | {error:.2e} | {t * 1e3:.2f} | {speed:.1f} {bench.unit} | "
              f"{100 * ratio:.0f}% | {fill} | {versus} | {row['speedup_vs_numpy']:.1f}x | {diff_text} |", flush=True)
    for row in rows:
        if row["kernel"].startswith("posattn_floater"):
            print(floater_line(row))
    print("\nmax err: |kernel − float64 reference| on verification inputs (positions up to ±1e6). Speeds: median "
          "of repeats after warm-up, inputs rotated; GB/s counts the bytes a kernel reads + writes; attention "
          "GFLOP/s counts 4·B·H·Lq·Lk·D (causal: the visible half).")
    if args.json:  # (bench/to_markdown.py makes docs/bench/<machine>.md of it)
        run = dict(machine=cpu_model(), isa=_probes.vector_isa, threads=THREADS, fma_peak_gflops=peak,
                   date=time.strftime("%Y-%m-%d"), command=" ".join(["bench/bench.py", *sys.argv[1:]]))
        args.json.write_text(json.dumps(dict(run, kernels=rows), indent=2))


if __name__ == "__main__":
    main()
