"""A fuzzer of the public Python API: random valid and invalid calls of every public function.

Each call starts from a valid call of a random function (fresh random inputs of small random
shapes, its output poisoned) and applies 0–2 mutations from MUTATIONS: wrong ranks, dtypes and
types, zero, negative and huge sizes and scalars, reversed, padded and broadcast strides, outputs
that alias an input, NaN and Inf, wrong dict contents, unknown strings. The oracle:
- a call that fails raises a posattn.Error (ArgumentTypeError included) whose message starts with
  "posattn" and names an argument in quotes, and every array it was given, out included, is as it
  was (byte for byte);
- a call that succeeds, of a function with a float64 reference, gives the reference's values;
- nothing crashes or hangs: the calls run in batches in child processes, and a batch that dies or
  overruns its time is reported with the seed and the call it was running.

    python tests/fuzz.py --seed 1 --calls 1000            one batch, here (prints its counts)
    python tests/fuzz.py --campaign --calls 1000000       batches of 2000 in child processes

tests/test_fuzz.py runs a bounded slice of fresh seeds in the test command.
"""
import argparse
import inspect
import json
import os
import pathlib
import shlex
import subprocess
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from conftest import LIBRARY_DIR  # noqa: E402,F401 (puts the build's posattn on the path)
import posattn  # noqa: E402
from posattn import reference  # noqa: E402
from storage import STORAGE  # noqa: E402

F32 = np.float32


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(F32)


def ints(rng, *shape, low=0, high=64):
    return rng.integers(low, high, size=shape).astype(np.int32)


def rope_reference(x, positions=None, base=10000.0, layout="neox", rotary_dim=None):
    r = rotary_dim or x.shape[-1]
    inv, factor = posattn.rope_frequencies(r, base=base)
    p = np.arange(x.shape[2]) if positions is None else positions
    return reference.rope(x, p, inv, factor, layout, r)


# Valid calls: name -> make(rng) -> (kwargs, reference of the kwargs or None, atol, rtol). The
# reference sees the call's values (any strides); None: the harness checks its values instead.
def _encoding(kind, fused, tol=(1e-6, 2.0**-23)):
    def make(rng):
        B, S, d = (int(n) for n in rng.integers(1, 6, 3))
        kwargs = dict(positions=ints(rng, B, S, high=1000))
        options = {"binary": dict(signed=bool(rng.integers(2)), msb_first=bool(rng.integers(2))),
                   "normalized": dict(mode=str(rng.choice(["minus_one", "length"]))),
                   "sinusoidal": dict(layout=str(rng.choice(["interleaved", "half"])), base=float(rng.uniform(2, 1e4))),
                   "sin_only": dict(base=float(rng.uniform(2, 1e4)))}.get(kind, {})
        kwargs.update(options)
        if kind == "binary":
            d = int(rng.integers(10, 16))
        if fused:
            kwargs.update(x=f32(rng, B, S, d), out=np.full((B, S, d), np.nan, F32))
        else:
            kwargs.update(d=d, out=np.full((B, S, d), np.nan, F32))
        ref = getattr(reference, kind)

        def expected(positions, x=None, d=None, out=None, **options):
            width = x.shape[-1] if fused else d
            pe = ref(positions, width, **options)
            return x + pe if fused else pe
        return kwargs, expected, *tol
    return make


def _learned(fused):
    def make(rng):
        B, S, d, V = (int(n) for n in rng.integers(1, 6, 4))
        kwargs = dict(table=f32(rng, V + 3, d), positions=ints(rng, B, S, high=V), offset=int(rng.integers(0, 4)),
                      out=np.full((B, S, d), np.nan, F32))
        if fused:
            kwargs["x"] = f32(rng, B, S, d)

        def expected(table, positions, offset, out=None, x=None):
            rows = reference.learned(table, positions, offset)
            return rows if x is None else x + rows
        return kwargs, expected, 0.0, 2.0**-23
    return make


def _attention(rng):
    B, Hkv, Lq, Lk, D = (int(n) for n in rng.integers(1, 7, 5))
    Hq = Hkv * int(rng.integers(1, 4))
    kwargs = dict(q=f32(rng, B, Hq, Lq, D), k=f32(rng, B, Hkv, Lk, D), v=f32(rng, B, Hkv, Lk, D),
                  causal=bool(rng.integers(2)), window=int(rng.integers(0, 4)), out=np.full((B, Hq, Lq, D), np.nan, F32))
    if rng.integers(2):
        kwargs["key_lengths"] = ints(rng, B, high=Lk + 1)
    broadcast = lambda: tuple(n if rng.integers(2) else 1 for n in (B, Hq, Lq, Lk))[int(rng.integers(3)):]
    if rng.integers(4) == 0:
        kwargs["mask"] = rng.random(broadcast()) < 0.7
    if rng.integers(4) == 0:
        kwargs["bias"] = np.where(rng.random(shape := broadcast()) < 0.1, -np.inf, f32(rng, *shape)).astype(F32)
    if rng.integers(4) == 0:
        kwargs["key_starts"] = ints(rng, B, high=Lk + 1)
    if rng.integers(4) == 0:
        kwargs.update(q_segments=ints(rng, B, Lq, high=3), k_segments=ints(rng, B, Lk, high=3))
    if rng.integers(4) == 0:
        kwargs["query_lengths"] = ints(rng, B, high=Lq + 1)

    def expected(q, k, v, causal, window, out=None, **masks):
        return reference.attention(q, k, v, None, causal, window=window, **masks)
    variant = rng.integers(9)  # a variant's arguments (their values: the harness's cases)
    if variant == 1:
        kwargs["alibi_slopes"] = reference.alibi_slopes(Hq)
    elif variant == 2:
        kwargs["t5_table"] = f32(rng, 32, Hq)
    elif variant == 3:
        kwargs["rope"] = dict(base=500.0, layout="gptj")
    elif variant == 4:
        kwargs["shaw"] = dict(rel_k=f32(rng, 5, D), rel_v=f32(rng, 5, D))
    elif variant == 5:
        kwargs.update(causal=True, transformer_xl=dict(r=f32(rng, Lk, D), u=f32(rng, Hq, D), v_bias=f32(rng, Hq, D)))
    elif variant == 6:
        kwargs["deberta"] = dict(rel_embeddings=f32(rng, 20, 6), w_key=f32(rng, Hq * D, 6), max_relative_positions=10)
    elif variant == 8:  # a variant of one's own (custom): here posattn's ALiBi kernel, called by its arguments
        slopes = reference.alibi_slopes(Hq).astype(F32)
        kwargs["custom"] = dict(kernel="posattn_attn_alibi_f32", inputs=dict(slopes=slopes), scalars=dict(alibi_form=0))

        def expected(q, k, v, causal, window, out=None, custom=None, bias=None, **masks):
            alibi = reference.alibi_bias(slopes, q.shape[2], k.shape[2])[None]
            return reference.attention(q, k, v, None, causal, window=window, bias=alibi if bias is None else alibi + bias, **masks)
    return kwargs, expected if variant in (0, 7, 8) else None, 2e-5, 1e-5


def _rope(rng):
    B, H, L = (int(n) for n in rng.integers(1, 5, 3))
    D = 2 * int(rng.integers(1, 9))
    kwargs = dict(x=f32(rng, B, H, L, D), positions=ints(rng, L, high=5000), base=float(rng.uniform(10, 1e5)),
                  layout=str(rng.choice(["neox", "gptj"])), rotary_dim=2 * int(rng.integers(1, D // 2 + 1)),
                  out=np.full((B, H, L, D), np.nan, F32))

    def expected(x, positions, base, layout, rotary_dim, out=None):
        return rope_reference(x, positions, base, layout, rotary_dim)
    return kwargs, expected, 3e-6, 2.0**-22


def _alibi_bias(rng):
    H, Lq, Lk = (int(n) for n in rng.integers(1, 9, 3))
    kwargs = dict(slopes=reference.alibi_slopes(H), Lq=Lq, Lk=Lk, form=str(rng.choice(["relative", "key_position", "symmetric"])),
                  out=np.full((H, Lq, Lk), np.nan, F32))

    def expected(slopes, Lq, Lk, form, out=None):
        return reference.alibi_bias(slopes, Lq, Lk, form)
    return kwargs, expected, 0.0, 2.0**-23


def _linear(rng):
    N, E, O = (int(n) for n in rng.integers(1, 9, 3))
    kwargs = dict(x=f32(rng, N, E), weight=f32(rng, O, E), bias=f32(rng, O), out=np.full((N, O), np.nan, F32))

    def expected(x, weight, bias, out=None):
        return x.astype(np.float64) @ weight.astype(np.float64).T + bias
    return kwargs, expected, 1e-5, 1e-5


def _complex_order(rng):
    S, V, d = (int(n) for n in rng.integers(1, 7, 3))
    kwargs = dict(token_ids=ints(rng, S, high=V), positions=ints(rng, S, high=1000), amplitude=f32(rng, V, d),
                  frequency=f32(rng, V, d), phase=f32(rng, V, d), real=np.full((S, d), np.nan, F32),
                  imag=np.full((S, d), np.nan, F32))
    return kwargs, None, 0, 0


def _floater(rng):
    d, hidden = (int(n) for n in rng.integers(1, 6, 2))
    kwargs = dict(num_positions=int(rng.integers(0, 4)), p0=f32(rng, d), W1=f32(rng, hidden, d + 1), b1=f32(rng, hidden),
                  W2=f32(rng, d, hidden + 1), b2=f32(rng, d), substeps=int(rng.integers(1, 3)),
                  method=str(rng.choice(["rk4_38", "rk4", "midpoint", "euler"])))
    kwargs["out"] = np.full((kwargs["num_positions"], d), np.nan, F32)
    return kwargs, None, 0, 0


def _buckets(kind):
    def make(rng):
        delta = rng.integers(-300, 300, size=int(rng.integers(0, 9)))
        if kind == "t5":
            kwargs = dict(rel=delta, bidirectional=bool(rng.integers(2)), num_buckets=32, max_distance=128)
            return kwargs, lambda **a: reference.t5_bucket(**a), 0, 0
        kwargs = dict(delta=delta, position_buckets=16, max_relative_positions=64)
        return kwargs, lambda **a: reference.deberta_bucket(**a), 0, 0
    return make


SPECS = {
    **{kind: _encoding(kind, False) for kind in ("sinusoidal", "integer", "normalized", "binary", "sin_only")},
    **{f"{kind}_add": _encoding(kind, True) for kind in ("sinusoidal", "integer", "normalized", "binary", "sin_only")},
    "learned": _learned(False), "learned_add": _learned(True), "attention": _attention, "rope": _rope,
    "alibi_bias": _alibi_bias, "linear": _linear, "complex_order": _complex_order, "floater": _floater,
    "t5_bucket": _buckets("t5"), "deberta_bucket": _buckets("deberta"),
    "rope_frequencies": lambda rng: (dict(rotary_dim=2 * int(rng.integers(1, 9)), base=10000.0), None, 0, 0),
    "alibi_slopes": lambda rng: (dict(heads=int(rng.integers(1, 20))), None, 0, 0),
    "complex_order_frequency_init": lambda rng: (dict(vocab=int(rng.integers(0, 9)), d=int(rng.integers(0, 9))), None, 0, 0),
    "kernels": lambda rng: ({}, None, 0, 0),
    "device_context": lambda rng: (dict(device="cpu"), None, 0, 0),
    "load_kernel": lambda rng: (dict(path="/nonexistent.so", symbol="k", function="posattn_integer_f32", schedule="x"), None, 0, 0),
    "set_num_threads": lambda rng: (dict(threads=int(rng.integers(1, 3))), None, 0, 0),
    "set_output_cache": lambda rng: (dict(bytes=int(rng.integers(0, 1 << 31))), None, 0, 0),
}

# Functions whose float32 products (dot products, q·k) overflow for inputs past ~1e18: such calls
# are checked for everything but their values.
PRODUCTS = ("attention", "linear")
# Functions whose absolute error scales with an input's magnitude: RoPE's a·cos − b·sin.
SCALED_BY_INPUT = {"rope": "x"}

# Values of the wrong kind, sizes and numbers past every limit, and strings no option has.
STRANGE = [None, "1e4", 3.5, -1, 0, 2**31, -2**31 - 1, 2**62, 2**64, float("nan"), float("inf"), [1, 2], {"a": 1}, True,
           np.float64(2.5), np.int64(-7), object()]


def _arrays(kwargs):
    return [name for name, value in kwargs.items() if isinstance(value, np.ndarray)]


def _pick(rng, names):
    return names[int(rng.integers(len(names)))] if names else None


def m_rank(rng, kw):
    name = _pick(rng, _arrays(kw))
    if name:
        a = kw[name]
        kw[name] = a.reshape(a.shape[:-2] + (a.shape[-2] * a.shape[-1],)) if a.ndim > 1 and rng.integers(2) else a[..., None]


def m_dtype(rng, kw):
    name = _pick(rng, _arrays(kw))
    if name:
        kw[name] = kw[name].astype(rng.choice([np.float64, np.float16, ml_dtypes.bfloat16, np.int64, np.int8, np.uint32, np.bool_,
                                               np.complex64]))


def m_empty(rng, kw):
    name = _pick(rng, [n for n in _arrays(kw) if kw[n].ndim])
    if name:
        a = kw[name]
        axis = int(rng.integers(a.ndim))
        kw[name] = np.take(a, np.arange(0), axis=axis)


def m_scalar(rng, kw):
    name = _pick(rng, [n for n, v in kw.items() if not isinstance(v, (np.ndarray, dict))])
    if name:
        kw[name] = STRANGE[int(rng.integers(len(STRANGE)))]


def m_values(rng, kw):
    """NaN, Inf or extreme integers in one element of an array."""
    name = _pick(rng, [n for n in _arrays(kw) if kw[n].size and kw[n].dtype.kind in "fciu"])
    if name:
        a = kw[name].copy()
        values = [np.nan, np.inf, -np.inf, 1e38] if a.dtype.kind in "fc" else [np.iinfo(a.dtype).min, np.iinfo(a.dtype).max]
        a.flat[int(rng.integers(a.size))] = values[int(rng.integers(len(values)))]
        kw[name] = a


def m_strides(rng, kw):
    """The same values through a reversed, padded or broadcast (zero-stride) view."""
    name = _pick(rng, [n for n in _arrays(kw) if kw[n].ndim])
    if name:
        a = kw[name]
        how = rng.integers(3)
        if how == 0:
            big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
            view = big[(slice(None, None, -2),) * a.ndim]
        elif how == 1:
            big = np.zeros(a.shape[:-1] + (3 * a.shape[-1],), a.dtype)
            view = big[..., 1::3]
        else:  # one row broadcast over the first axis
            view = np.broadcast_to(a[:1], a.shape) if name not in ("out", "real", "imag") else a.copy()
            kw[name] = view
            return
        view[...] = a
        kw[name] = view


def m_alias(rng, kw):
    """An output that shares bytes with an input (or is one)."""
    outs = [n for n in ("out", "real", "imag") if n in kw and isinstance(kw[n], np.ndarray)]
    ins = [n for n in _arrays(kw) if n not in outs and kw[n].size and kw[n].flags.c_contiguous]
    out, source = _pick(rng, outs), _pick(rng, ins)
    if out and source:
        raw = kw[source].reshape(-1).view(np.uint8)
        need = kw[out].size * 4
        if raw.size >= need:
            kw[out] = raw[:need].view(F32).reshape(kw[out].shape)


def m_dict(rng, kw):
    name = _pick(rng, [n for n, v in kw.items() if isinstance(v, dict)])
    if name:
        d = dict(kw[name])
        key = _pick(rng, list(d)) if d else None
        how = rng.integers(3)
        if how == 0 or key is None:
            d["bogus"] = 1
        elif how == 1:
            d[key] = STRANGE[int(rng.integers(len(STRANGE)))]
        else:
            del d[key]
        kw[name] = d


def m_string(rng, kw, parameters):
    """A string argument (the schedule and device of a kernel call included) no option has."""
    name = _pick(rng, [n for n, v in kw.items() if isinstance(v, str)] + [n for n in ("schedule", "device") if n in parameters])
    if name:
        kw[name] = str(rng.choice(["", "bogus", "gpu", "HAND", "adams2019", "li2018", "opencl", "vulkan", "cuda", "\x00"]))


MUTATIONS = [m_rank, m_dtype, m_empty, m_scalar, m_values, m_strides, m_alias, m_dict, m_string]


def make_call(rng):
    """(function name, kwargs, reference, atol, rtol, names of the mutations applied)."""
    name = str(rng.choice(sorted(SPECS)))
    kwargs, expected, atol, rtol = SPECS[name](rng)
    parameters = inspect.signature(getattr(posattn, name)).parameters
    applied = []
    for _ in range(int(rng.choice([0, 1, 1, 2]))):
        mutation = MUTATIONS[int(rng.integers(len(MUTATIONS)))]
        mutation(rng, kwargs, *([parameters] if mutation is m_string else []))
        applied.append(mutation.__name__)
    return name, kwargs, expected, atol, rtol, applied


def _in_place(a, outputs):
    """Whether input a is one of the outputs, as the same view of the same memory (in place: the
    strides of axes of one element do not matter)."""
    def layout(x):
        return x.__array_interface__["data"][0], x.shape, [s for s, n in zip(x.strides, x.shape) if n > 1]
    return any(layout(o) == layout(a) for o in outputs)


def check_call(name, kwargs, expected, atol, rtol):
    """Runs one call against the oracle; returns "ok", "error" or a failure's description."""
    arrays = {k: v for k, v in kwargs.items() if isinstance(v, np.ndarray)}
    arrays.update({f"{k}.{kk}": vv for k, v in kwargs.items() if isinstance(v, dict)
                   for kk, vv in v.items() if isinstance(vv, np.ndarray)})
    before = {k: v.copy() for k, v in arrays.items()}
    try:
        result = getattr(posattn, name)(**kwargs)
    except posattn.Error as e:
        message = str(e)
        if not message.startswith("posattn") or "'" not in message:
            return f"an error that names no argument: {message!r}"
        for k, v in arrays.items():
            if not np.array_equal(v, before[k], equal_nan=True):
                return f"{k} was written by a failed call ({message!r})"
        return "error"
    except Exception as e:  # anything but a posattn.Error is a failure
        return f"{type(e).__name__} instead of posattn.Error: {e}"
    outputs = [arrays[k] for k in ("out", "real", "imag") if k in arrays]
    for k, v in arrays.items():
        if k not in ("out", "real", "imag") and not _in_place(v, outputs) and not np.array_equal(v, before[k], equal_nan=True):
            return f"input {k} was modified"
    if expected is not None and name in PRODUCTS and any(
            a.dtype.kind == "f" and a.size and np.nanmax(np.abs(a)) > 1e18 for k, a in before.items() if k != "out"):
        expected = None  # products past float32's range: undefined values (docs/api.md: check_finite), never a crash
    if expected is not None:
        got = result[0] if isinstance(result, tuple) else result
        try:  # of the values before the call (which may have written an input in place); a bool is
            # an int to Python and so to posattn's integer arguments
            want = expected(**{k: int(v) if posattn._KINDS.get(k) == "int" and isinstance(v, (bool, np.bool_)) else before.get(k, v)
                               for k, v in kwargs.items() if k not in ("schedule", "device")})
        except Exception as e:
            if np.size(got) == 0:  # (the reference takes no empty input everywhere)
                return "ok"
            return f"the reference refused a call posattn ran: {type(e).__name__}: {e}"
        storage = next((s for s in STORAGE if s.dtype == got.dtype), None)  # a float16 or bfloat16 result: one more rounding
        if storage:
            atol, rtol = atol + storage.subnormal, rtol + storage.roundoff
        got = np.asarray(got, dtype=np.float64)
        if got.shape != np.shape(want):
            return f"shape {got.shape}, expected {np.shape(want)}"
        if name in SCALED_BY_INPUT and before[SCALED_BY_INPUT[name]].size:  # (errors relative to |a| + |b|, not |result|)
            atol *= max(1.0, float(np.nanmax(np.abs(before[SCALED_BY_INPUT[name]]))))
        bound = atol + rtol * np.abs(want)
        # (a float64 value past float32's range is rightly float32's infinity)
        largest = float(ml_dtypes.finfo(storage.dtype).max) if storage else np.finfo(F32).max
        overflow = np.isinf(got) & (np.abs(want) > largest) & (np.sign(got) == np.sign(want))
        bad = ~((np.abs(got - want) <= bound) | (np.isnan(got) & np.isnan(want)) | (got == want) | overflow)
        if bad.any():
            return f"values off by up to {np.nanmax(np.abs(got - want)):.3g}"
    return "ok"


def run_batch(seed, calls, progress=None):
    """calls fuzzed calls from seed; returns (counts, failures). Writes each call's index to
    `progress` before running it, so that a parent can name the call of a crash."""
    rng = np.random.default_rng(seed)
    counts, failures = {"ok": 0, "error": 0}, []
    for index in range(calls):
        name, kwargs, expected, atol, rtol, applied = make_call(rng)
        if progress:
            pathlib.Path(progress).write_text(f"{index} {name} {applied}")
        outcome = check_call(name, kwargs, expected, atol, rtol)
        if outcome in counts:
            counts[outcome] += 1
        else:
            failures.append(f"seed {seed} call {index}: {name} {applied}: {outcome}")
    return counts, failures


def run_in_child(seed, calls, timeout):
    """A batch in a child process: (counts, failures), a crash or a hang being one failure."""
    progress = pathlib.Path(f"/tmp/posattn-fuzz-{os.getpid()}-{seed}")
    # (the ARM leg's interpreter runs under qemu: scripts/test_arm.sh says how to start it)
    python = shlex.split(os.environ.get("POSATTN_PYTHON_COMMAND", shlex.quote(sys.executable)))
    command = python + [__file__, "--seed", str(seed), "--calls", str(calls), "--progress", str(progress), "--json"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {}, [f"seed {seed}: no answer in {timeout} s, at call {progress.read_text()}"]
    finally:
        last = progress.read_text() if progress.exists() else "?"
        progress.unlink(missing_ok=True)
    if done.returncode != 0:
        return {}, [f"seed {seed}: the child died (exit {done.returncode}) at call {last}: {done.stderr[-2000:]}"]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["counts"], result["failures"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--campaign", action="store_true", help="batches of 2000 calls in child processes")
    parser.add_argument("--progress")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.campaign:
        start, totals, failures, batch = time.time(), {"ok": 0, "error": 0}, [], 0
        while sum(totals.values()) + len(failures) < args.calls:
            counts, failed = run_in_child(args.seed + batch, min(2000, args.calls - sum(totals.values())), 600)
            for k, v in counts.items():
                totals[k] += v
            failures += failed
            batch += 1
            print(f"{sum(totals.values())} calls ({totals['ok']} ok, {totals['error']} errors), {len(failures)} failures, "
                  f"{time.time() - start:.0f} s", flush=True)
        print("\n".join(failures))
        return 1 if failures else 0
    counts, failures = run_batch(args.seed, args.calls, args.progress)
    if args.json:
        print(json.dumps(dict(counts=counts, failures=failures)))
    else:
        print(f"seed {args.seed}: {counts}, {len(failures)} failures", *failures, sep="\n")
    return 1 if failures and not args.json else 0


if __name__ == "__main__":
    sys.exit(main())
