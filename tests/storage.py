"""Storage-type twins of the harness's cases (docs/contract.md "Storage types").

A float32 case, run as its float16 or bfloat16 twin, draws its random floats rounded to the type
(so every input it makes and its float64 reference hold the rounded values); posattn's functions
are wrapped for the run to pass each storage operand (q, k, v, x, a learned table, linear's
operands) as an array of the type, and `out` as a poisoned array of the type laid out like the
case's own, whose values are widened into the case's out afterwards. The twin's bound is the
float32 kernel's plus one rounding to the type: its unit roundoff relative to the value, and for
float16 half its smallest subnormal step absolute (below 2^-14 its spacing is fixed). A
"bf16_f32" twin keeps the case's float32 out: the float32 kernel's bound alone.
"""
import contextlib
import dataclasses
import inspect

import ml_dtypes
import numpy as np

import posattn
from harness import Case


@dataclasses.dataclass(frozen=True)
class Storage:
    suffix: str         # the kernel name's dtype axis
    dtype: object       # the NumPy dtype of the inputs
    roundoff: float     # unit roundoff of out's type: relative error of its one rounding
    subnormal: float    # absolute error of that rounding below the normal range
    out: object = None  # out's NumPy dtype where not dtype (float32: rounded as the float32 kernel)


F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
STORAGE = [Storage("f16", F16, 2.0**-11, 2.0**-25), Storage("bf16", BF16, 2.0**-8, 0.0),
           Storage("f16_f32", F16, 0.0, 0.0, np.dtype(np.float32)), Storage("bf16_f32", BF16, 0.0, 0.0, np.dtype(np.float32))]

# posattn's functions with storage operands (besides out), by argument name.
OPERANDS = {"attention": ("q", "k", "v"), "rope": ("x",), "learned": ("table",), "learned_add": ("x", "table"),
            "linear": ("x", "weight", "bias"), "sinusoidal": (), "integer": (), "normalized": (), "binary": (),
            "sin_only": (), **{f"{kind}_add": ("x",) for kind in ("sinusoidal", "integer", "normalized", "binary", "sin_only")}}


class RoundedRng:
    """rng whose float draws are rounded to `dtype` (as float64: representable in float32 too)."""

    def __init__(self, rng, dtype):
        self._rng, self._dtype = rng, dtype

    def __getattr__(self, name):
        return getattr(self._rng, name)

    def _rounded(self, values):
        return np.asarray(values, np.float32).astype(self._dtype).astype(np.float64)

    def standard_normal(self, *args, **kwargs):
        return self._rounded(self._rng.standard_normal(*args, **kwargs))

    def uniform(self, *args, **kwargs):
        return self._rounded(self._rng.uniform(*args, **kwargs))


def _like(a, dtype, fill=None):
    """a's values (or `fill`) in an array of dtype with a's layout: its axis order, and an inner
    stride of two elements where a has one that is not 1."""
    inner_strided = a.ndim and a.shape[-1] > 1 and a.strides[-1] != a.itemsize
    if inner_strided:
        view = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype)[..., ::2]
    else:
        view = np.empty_like(a, dtype=dtype, order="K")
    view[...] = a if fill is None else fill
    return view


def _stored(a, storage, name):
    """Float32 operand a as storage's dtype: exactly its values (the twin's draws are rounded)."""
    converted = _like(a, storage.dtype)
    widened = converted.astype(np.float32)
    assert np.array_equal(widened, a, equal_nan=True), f"{name}: the case made values {storage.suffix} cannot hold"
    return converted


# Their signatures, read before any test wraps them (tests/reversed_views.py's wrappers take *args).
SIGNATURES = {name: inspect.signature(getattr(posattn, name)) for name in OPERANDS}


def _wrapped(name, function, storage):
    operands, signature = OPERANDS[name], SIGNATURES[name]

    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        given = bound.arguments
        out = given.get("out")
        originals = {name: given[name] for name in operands if isinstance(given.get(name), np.ndarray)}
        for name, a in originals.items():
            given[name] = _stored(a, storage, name)
        if not isinstance(out, np.ndarray):
            return function(*bound.args, **bound.kwargs)
        if storage.out is not None:  # out as the case made it
            return function(*bound.args, **bound.kwargs)
        in_place = next((name for name, a in originals.items() if a is out), None)  # (rope's out=x)
        given["out"] = given[in_place] if in_place else _like(out, storage.dtype, np.nan)
        function(*bound.args, **bound.kwargs)
        out[...] = given["out"].astype(np.float32)
        return out

    return call


@contextlib.contextmanager
def storage_api(storage):
    """posattn's functions wrapped for storage's twins (restored after)."""
    originals = {name: getattr(posattn, name) for name in OPERANDS}
    try:
        for name, function in originals.items():
            setattr(posattn, name, _wrapped(name, function, storage))
        yield
    finally:
        for name, function in originals.items():
            setattr(posattn, name, function)


def overflowed(actual, expected, dtype):
    """actual and expected with the values past dtype's range set aside (0), where actual must be
    the infinity of expected's sign: those at least its largest value plus half its spacing there."""
    info = ml_dtypes.finfo(dtype)
    past = np.abs(expected) >= float(info.max) + float(info.eps) * 2.0 ** (info.maxexp - 2)
    assert np.array_equal(actual[past], np.sign(expected[past]) * np.inf), "a value past the type's range is not ±inf"
    return np.where(past, 0, actual), np.where(past, 0, expected)


def twin(case, storage):
    """case's twin for storage: its kernel's instance of that dtype, the same name."""
    def run(rng, call):
        with storage_api(storage):
            actual, expected, atol, rtol, before, after = case.run(RoundedRng(rng, storage.dtype), call)
        if storage.out is None:
            actual, expected = overflowed(actual, expected, storage.dtype)
        return actual, expected, atol + storage.subnormal, rtol + storage.roundoff, before, after
    return Case(case.function.replace("_f32", "_" + storage.suffix, 1), case.name, run)


# Twins per kernel and type: the float32 kernel's cases spread evenly, up to this many (all of them
# would add ~2x the harness's time on every backend, where the twins share the float32 kernels'
# schedules and differ only in loads and stores).
TWINS_PER_KERNEL = 8


def twins(cases, built):
    """The twins of the cases whose kernel has an instance of each storage type in `built`."""
    by_kernel = {}
    for case in cases:
        by_kernel.setdefault(case.function, []).append(case)
    chosen = [c for group in by_kernel.values() for c in group[::-(-len(group) // TWINS_PER_KERNEL)]]
    return [twin(case, s) for s in STORAGE for case in chosen if case.function.replace("_f32", "_" + s.suffix, 1) in built]
