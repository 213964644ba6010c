"""posattn: positional encodings and attention variants as AOT-compiled Halide kernels.

Inputs are NumPy arrays (any strides) or host tensors of another library through DLPack (torch,
an ``nn.Parameter`` without the caller's ``.detach()`` too). Outputs are NumPy arrays, or that
library's tensors when a call's inputs include one (zero copy); ``out=`` may be such a tensor.
Integer position / length arrays of any integer dtype are accepted when every value fits int32.
Errors raise ``posattn.Error`` (a ``ValueError``) naming the argument and what was expected; a value
of the wrong Python type ``posattn.ArgumentTypeError`` (both a ``posattn.Error`` and a ``TypeError``).
Every kernel call takes ``schedule=`` ("hand", or an autoscheduler baseline: see ``kernels()``) and
``device=`` ("cpu", "cuda", "opencl" or "vulkan"): arrays are host memory, which the runtime copies
to the device and the results back. On "cuda" and "opencl" every float32 operand may instead be a
``DeviceArray`` buffer the caller made in ``device_context(device)``, used in place (positions,
token ids, key lengths and slopes, which the runtime reads itself, stay host arrays).
"""
import functools
import inspect
import numbers
import sys

import numpy as np

from . import _posattn
from ._posattn import ArgumentTypeError, DeviceArray, Error

_D = _posattn.DEFAULTS  # every call's defaults, from the C++ API's posattn::defaults (posattn.hpp)

__all__ = ["ArgumentTypeError", "DeviceArray", "Error", "device_context", "alibi_bias", "alibi_slopes", "attention",
           "deberta_bucket", "linear", "t5_bucket", "complex_order", "complex_order_frequency_init", "floater", "binary",
           "binary_add", "integer", "integer_add", "jit", "kernels", "learned", "load_kernel", "learned_add", "normalized",
           "normalized_add", "rope", "rope_frequencies", "set_num_threads", "set_output_cache", "sin_only", "sin_only_add", "sinusoidal",
           "sinusoidal_add"]

# The Python type every scalar argument of the public functions takes, by name (one name, one
# kind across the API). Checked only when the extension refuses a call's types, to name the
# argument (its own message lists the signature): the calls that succeed pay nothing for it.
_KINDS = {
    **dict.fromkeys(["d", "offset", "window", "substeps", "num_positions", "Lq", "Lk", "heads", "vocab", "threads",
                     "num_buckets", "max_distance", "t5_max_distance", "position_buckets", "max_relative_positions",
                     "rotary_dim", "seq_len", "bytes"], "int"),
    **dict.fromkeys(["length"], "int or None"),
    **dict.fromkeys(["base", "dt"], "number"),
    **dict.fromkeys(["scale"], "number or None"),
    **dict.fromkeys(["causal", "signed", "msb_first", "bidirectional", "t5_bidirectional", "check_finite"], "bool"),
    **dict.fromkeys(["layout", "convention", "mode", "method", "form", "alibi_form", "kind", "schedule", "device", "path",
                     "symbol", "function"], "str"),
    **dict.fromkeys(["scaling", "rope", "shaw", "transformer_xl", "deberta", "custom"], "dict or None"),
}
_EXPECTED = {"int": "an integer (int64)", "number": "a real number", "bool": "True or False", "str": "a string",
             "dict": "a dict"}


def _is(kind, value):
    if kind.endswith(" or None"):
        return value is None or _is(kind.removesuffix(" or None"), value)
    if kind == "bool":
        return isinstance(value, (bool, np.bool_))
    if kind == "int":
        return (isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
                and -2**63 <= int(value) < 2**63)
    if kind == "number":
        return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    return isinstance(value, {"str": str, "dict": dict}[kind])


def _type_error(api, name, value):
    kind = _KINDS[name]
    expected = _EXPECTED[kind.removesuffix(" or None")] + (" or None" if kind.endswith(" or None") else "")
    return ArgumentTypeError(f"posattn.{api}: argument '{name}' is {value!r:.80} ({type(value).__name__}); expected {expected}")


def _call(api, function, /, **kwargs):
    """function(**kwargs), its refusal of an argument's type raised as ArgumentTypeError naming it."""
    try:
        return function(**kwargs)
    except TypeError as e:
        raise _named(api, e, kwargs) from None


def _named(api, error, arguments):
    """The extension's refusal of an argument's type (a TypeError) as an ArgumentTypeError naming
    the first of `arguments` (name: value) of the wrong kind; any other error as it is."""
    if "incompatible function arguments" in str(error):
        for name, value in arguments.items():
            if name in _KINDS and not _is(_KINDS[name], value):
                return _type_error(api, name, value)
    return error


def _dict(options, api, name):
    """A variant's dict argument (None: not given)."""
    if options is not None and not isinstance(options, dict):
        raise _type_error(api, name, options)
    return options


def _bfloat16():
    import ml_dtypes  # (only where bfloat16 data is given)
    return ml_dtypes.bfloat16


def _array(a, api, name):
    if type(a) is np.ndarray:
        return a
    if hasattr(a, "__dlpack__"):
        if getattr(a, "requires_grad", False) and hasattr(a, "detach"):  # (torch exports no tensor that requires grad)
            a = a.detach()
        try:
            if str(getattr(a, "dtype", "")).endswith("bfloat16") and hasattr(a, "view"):  # NumPy's DLPack has no bfloat16
                return np.from_dlpack(a.view(_library(a).int16)).view(_bfloat16())
            return np.from_dlpack(a)
        except Exception as e:  # NumPy's refusal (bfloat16, another device)
            raise Error(f"posattn.{api}: argument '{name}' ({type(a).__name__} of dtype {getattr(a, 'dtype', '?')}) "
                        f"could not be read through DLPack ({e}); expected host float32, float16, bfloat16 or integer data") from None
    return np.asarray(a)


def _shape(a):
    """An operand's shape (a DeviceArray's too)."""
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def _operand(a, api, name):
    """An operand that may be device memory: a DeviceArray as it is, anything else as an array."""
    return a if isinstance(a, DeviceArray) else _array(a, api, name)


def _foreign(a):
    """Whether a is another library's tensor (read through DLPack)."""
    return type(a) is not np.ndarray and hasattr(a, "__dlpack__") and not isinstance(a, (np.ndarray, DeviceArray))


def _writable(tensor, api, name):
    """An output tensor of another library as a NumPy view of its memory."""
    if getattr(tensor, "requires_grad", False):  # (torch refuses out= for those too)
        raise Error(f"posattn.{api}: argument '{name}' requires grad; expected a tensor autograd does not track")
    view = _array(tensor, api, name)
    if not view.flags.writeable:
        raise Error(f"posattn.{api}: argument '{name}' is read-only; expected writable memory")
    return view


def _tensors(function):
    """function taking other libraries' tensors as outputs too, and returning its results as the
    tensors of the first input library it was given (its module's from_dlpack, zero copy)."""
    outputs = [name for name in ("out", "real", "imag") if name in inspect.signature(function).parameters]

    @functools.wraps(function)
    def call(*args, **kwargs):  # (on every call: no signature binding, only a look at each value)
        first = _first_foreign((*args, *kwargs.values()))
        if first is None:
            return function(*args, **kwargs)
        library = _library(first)
        callers = {name: kwargs[name] for name in outputs if _foreign(kwargs.get(name))}  # (keyword-only)
        kwargs.update({name: _writable(tensor, function.__name__, name) for name, tensor in callers.items()})
        result = function(*args, **kwargs)
        return _as_library(result, library, {id(kwargs[name]): tensor for name, tensor in callers.items()})

    return call


def _library(tensor):
    """The module of another library's tensor (torch for a torch.Tensor)."""
    return sys.modules.get(type(tensor).__module__.partition(".")[0])


def _first_foreign(values):
    """The first of values that is another library's tensor, or None (a plain loop: at decoding
    sizes a call takes µs, and filter() with a call per value cost twice as much)."""
    for value in values:
        if type(value) is not np.ndarray and _foreign(value):
            return value
    return None


def _as_library(result, library, callers):
    """result's arrays as library's tensors: an output the caller gave as the caller's own."""
    if isinstance(result, tuple):
        return tuple(_as_library(r, library, callers) for r in result)
    if not isinstance(result, np.ndarray):
        return result
    if id(result) in callers:
        return callers[id(result)]
    if result.dtype.name == "bfloat16" and hasattr(library, "bfloat16"):  # (through DLPack as int16: NumPy's has no bfloat16)
        return library.from_dlpack(result.view(np.int16)).view(library.bfloat16)
    return getattr(library, "from_dlpack", lambda a: a)(result)


def _int32(a, api, name, *outputs):
    """Integers as int32. A converted copy hides the caller's array from the runtime's checks, so
    an output (outputs: (name, array) pairs) that shares memory with it is refused here."""
    a = _array(a, api, name)
    if a.dtype.kind in "iu" and a.dtype != np.int32:
        if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
            raise Error(f"posattn.{api}: argument '{name}' holds values outside int32")
        for out_name, out in outputs:
            if isinstance(out, np.ndarray) and np.may_share_memory(out, a):
                raise Error(f"posattn.{api}: argument '{out_name}' overlaps '{name}'; expected them to be disjoint")
        a = a.astype(np.int32)
    return a


def kernels():
    """This build's kernels, one dict each: key, function, family (cpu family or GPU API), schedule,
    targets (the Halide targets compiled in, ","-joined: a CPU kernel's ISA levels)."""
    return _posattn.kernels()


def load_kernel(path, symbol, function, schedule=_D["schedule"], device=_D["device"]):
    """Adds a kernel compiled elsewhere (a shared library linked against libposattn, with
    <symbol>_argv and <symbol>_metadata) as `schedule` of `function` on `device`: a schedule of a
    kernel of this build (the tuner's candidates), or a kernel of one's own named outside posattn_
    (attention's custom variants)."""
    return _call("load_kernel", _posattn.load_kernel, path=path, symbol=symbol, function=function, schedule=schedule,
                 device=device)


def jit(function, *, params=None, schedule_params=None, device=_D["device"]):
    """Compiles `function` (a kernel of this build: kernels()) again at run time and adds it as a
    schedule of that function on `device`; returns the schedule's name, for any call's schedule=.

    params: generator params {name: value} over those the AOT kernel was compiled with, so that
    jit(function) is the AOT kernel itself; schedule_params: {field: value} replacing the AOT
    kernel's ({} for the schedule's defaults; docs/autotuning.md). The first call compiles (seconds, in a helper process: posattn's
    generator executable); later ones, in this process or another, load it from the disk cache
    (docs/api.md)."""
    if not isinstance(function, str):
        raise ArgumentTypeError(f"posattn.jit: argument 'function' must be a str, got {function!r}")
    texts = {name: _params_text(value, name) for name, value in (("params", params or {}),
                                                                  ("schedule_params", schedule_params or {}))}
    schedule = None if schedule_params is None else ",".join(f"{k}:{v}" for k, v in texts["schedule_params"].items())
    return _call("jit", _posattn.jit, function=function, params=texts["params"], schedule_params=schedule, device=device)


def _params_text(value, name):
    """{name: value} as the strings a generator takes; ArgumentTypeError naming `name` otherwise,
    Error for a name or value that would split the generator's "name=value" / "field:value,..."."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, (str, numbers.Real, bool, np.bool_))
                                              for k, v in value.items()):
        raise ArgumentTypeError(f"posattn.jit: argument '{name}' must be a dict of {{str: str, int, float or bool}}, "
                                f"got {value!r}")
    texts = {k: str(bool(v)).lower() if isinstance(v, (bool, np.bool_)) else str(v) for k, v in value.items()}
    for k, v in texts.items():
        if not k or any(c in k + v for c in "=:, \n"):
            raise Error(f"posattn.jit: argument '{name}': {k!r}: {v!r} holds one of '=', ':', ',', a space or a newline")
    return texts


def device_context(device):
    """(context, queue) as ints: the context posattn's kernels on 'cuda' or 'opencl' run in, where
    DeviceArray buffers are made, and its queue (OpenCL) or stream (CUDA)."""
    return _call("device_context", _posattn.device_context, device=device)


def set_num_threads(threads):
    """The number of threads the CPU kernels run on (Halide's thread pool)."""
    return _call("set_num_threads", _posattn.set_num_threads, threads=threads)


def set_output_cache(bytes):
    """The most bytes of freed output arrays posattn keeps for the next outputs of their sizes
    (blocks of 1 MiB and more; default 1 GiB; 0 keeps none): an allocating call then writes memory
    already mapped, at the speed of the same call with out=. Returns the previous limit."""
    return _call("set_output_cache", _posattn.set_output_cache, bytes=bytes)


@_tensors
def sinusoidal(positions, d, *, base=_D["base"], layout="interleaved", convention="vaswani", out=None, dtype=None,
               schedule=_D["schedule"], device=_D["device"]):
    """PE(positions) of width d (contract §1): positions [N] or [B, S] -> [..., d] of `dtype` (None:
    float32; float16, bfloat16: docs/contract.md "Storage types")."""
    return _call("sinusoidal", _posattn.sinusoidal, positions=_int32(positions, "sinusoidal", "positions", ("out", out)), d=d,
                 base=base, layout=layout, convention=convention, out=out, dtype=dtype, schedule=schedule, device=device)


@_tensors
def sinusoidal_add(x, positions, *, base=_D["base"], layout="interleaved", convention="vaswani", out=None,
                   schedule=_D["schedule"], device=_D["device"]):
    """x + PE(positions): x [B, S, D]; positions [B, S] or [S] (shared by every batch)."""
    api = "sinusoidal_add"
    return _call(api, _posattn.sinusoidal_add, x=_operand(x, api, "x"), positions=_int32(positions, api, "positions", ("out", out)),
                 base=base, layout=layout, convention=convention, out=out, schedule=schedule, device=device)


@_tensors
def learned(table, positions, *, offset=0, out=None, schedule=_D["schedule"], device=_D["device"]):
    """table[positions + offset] (contract §2); an index outside the table is an error."""
    api = "learned"
    return _call(api, _posattn.learned, table=_operand(table, api, "table"), positions=_int32(positions, api, "positions", ("out", out)),
                 offset=offset, out=out, schedule=schedule, device=device)


@_tensors
def learned_add(x, table, positions, *, offset=0, out=None, schedule=_D["schedule"], device=_D["device"]):
    """x + table[positions + offset]: x [B, S, D]; positions [B, S] or [S]."""
    api = "learned_add"
    return _call(api, _posattn.learned_add, x=_operand(x, api, "x"), table=_operand(table, api, "table"),
                 positions=_int32(positions, api, "positions", ("out", out)), offset=offset, out=out, schedule=schedule, device=device)


@_tensors
def integer(positions, d, *, out=None, dtype=None, schedule=_D["schedule"], device=_D["device"]):
    """PE = p on every channel (contract §3): positions [N] or [B, S] -> float32 [..., d]."""
    return _call("integer", _posattn.integer, positions=_int32(positions, "integer", "positions", ("out", out)), d=d, out=out, dtype=dtype,
                 schedule=schedule, device=device)


@_tensors
def integer_add(x, positions, *, out=None, schedule=_D["schedule"], device=_D["device"]):
    """x + integer PE: x [B, S, D]; positions [B, S] or [S]."""
    api = "integer_add"
    return _call(api, _posattn.integer_add, x=_operand(x, api, "x"), positions=_int32(positions, api, "positions", ("out", out)),
                 out=out, schedule=schedule, device=device)


@_tensors
def normalized(positions, d, *, length=None, mode="minus_one", out=None, dtype=None, schedule=_D["schedule"], device=_D["device"]):
    """p/(L−1) ('minus_one', L = 1 gives 0) or p/L ('length') on every channel (contract §3), where L is
    `length`, or else the largest position + 1 of each sequence."""
    return _call("normalized", _posattn.normalized, positions=_int32(positions, "normalized", "positions", ("out", out)), d=d,
                 length=length, mode=mode, out=out, dtype=dtype, schedule=schedule, device=device)


@_tensors
def normalized_add(x, positions, *, length=None, mode="minus_one", out=None, schedule=_D["schedule"], device=_D["device"]):
    """x + normalized PE: x [B, S, D]; positions [B, S] or [S]."""
    api = "normalized_add"
    return _call(api, _posattn.normalized_add, x=_operand(x, api, "x"), positions=_int32(positions, api, "positions", ("out", out)),
                 length=length, mode=mode, out=out, schedule=schedule, device=device)


@_tensors
def binary(positions, d, *, signed=False, msb_first=False, out=None, dtype=None, schedule=_D["schedule"], device=_D["device"]):
    """Channel c = bit c of p (bit d−1−c with msb_first), {0, 1} or {−1, +1} (contract §3); every
    position must satisfy 0 <= p < 2^d."""
    return _call("binary", _posattn.binary, positions=_int32(positions, "binary", "positions", ("out", out)), d=d, signed=signed,
                 msb_first=msb_first, out=out, dtype=dtype, schedule=schedule, device=device)


@_tensors
def binary_add(x, positions, *, signed=False, msb_first=False, out=None, schedule=_D["schedule"], device=_D["device"]):
    """x + binary PE: x [B, S, D]; positions [B, S] or [S]."""
    api = "binary_add"
    return _call(api, _posattn.binary_add, x=_operand(x, api, "x"), positions=_int32(positions, api, "positions", ("out", out)),
                 signed=signed, msb_first=msb_first, out=out, schedule=schedule, device=device)


@_tensors
def sin_only(positions, d, *, base=_D["base"], out=None, dtype=None, schedule=_D["schedule"], device=_D["device"]):
    """PE[c] = sin(p · base^(−c/d)), c = 0 … d−1 (contract §3)."""
    return _call("sin_only", _posattn.sin_only, positions=_int32(positions, "sin_only", "positions", ("out", out)), d=d, base=base,
                 out=out, dtype=dtype, schedule=schedule, device=device)


@_tensors
def sin_only_add(x, positions, *, base=_D["base"], out=None, schedule=_D["schedule"], device=_D["device"]):
    """x + sin-only PE: x [B, S, D]; positions [B, S] or [S]."""
    api = "sin_only_add"
    return _call(api, _posattn.sin_only_add, x=_operand(x, api, "x"), positions=_int32(positions, api, "positions", ("out", out)),
                 base=base, out=out, schedule=schedule, device=device)


def rope_frequencies(rotary_dim, *, base=_D["base"], scaling=None, seq_len=None):
    """(inv_freq float64 [rotary_dim/2], attention_factor) for RoPE (contract §6). scaling: an HF-style
    rope_scaling dict, {"type": linear | ntk | dynamic | yarn | llama3 | longrope, "factor": …, …};
    seq_len: the current length that dynamic and longrope read."""
    return _call("rope_frequencies", _posattn.rope_frequencies, rotary_dim=rotary_dim, base=base, scaling=scaling,
                 seq_len=_or_zero(seq_len))


def hf_rope_parameters(rope_parameters, head_dim, max_position_embeddings=None, api="rope"):
    """(base, rotary_dim, scaling) of an HF config's rope_parameters dict, taken as it is:
    rope_theta, rope_type ("default" or a scaling), partial_rotary_factor (rotary_dim =
    int(head_dim · factor), as HF) and the scaling's own keys; a YaRN or LongRoPE without 'factor'
    (or with None) gets max_position_embeddings / original_max_position_embeddings, as HF computes
    it from the model's config (max_position_embeddings: that config's, here or in the dict)."""
    params = dict(_dict(rope_parameters, api, "rope_parameters"))
    if "rope_theta" not in params:
        raise Error(f"posattn.{api}: argument 'rope_parameters' has no 'rope_theta'; expected HF's rope_parameters dict")
    base = params.pop("rope_theta")
    fraction = params.pop("partial_rotary_factor", 1.0)
    if not _is("number", fraction) or not 0 < fraction <= 1:
        raise Error(f"posattn.{api}: argument 'rope_parameters' has partial_rotary_factor {fraction!r}; expected 0 < factor <= 1")
    rotary_dim = int(head_dim * fraction)
    rope_type = params.pop("rope_type", params.pop("type", "default"))
    if max_position_embeddings is not None:
        params.setdefault("max_position_embeddings", max_position_embeddings)
    if rope_type in ("yarn", "longrope") and params.get("factor") is None:
        if "max_position_embeddings" not in params or "original_max_position_embeddings" not in params:
            raise Error(f"posattn.{api}: argument 'rope_parameters' is {rope_type} without 'factor'; expected "
                        "'original_max_position_embeddings' and the model's 'max_position_embeddings' (HF's factor: their ratio)")
        params["factor"] = params["max_position_embeddings"] / params["original_max_position_embeddings"]
    if rope_type != "longrope":  # (only LongRoPE reads the model's length)
        params.pop("max_position_embeddings", None)
    params = {key: value for key, value in params.items() if value is not None}
    return base, rotary_dim, (None if rope_type == "default" else dict(params, type=rope_type))


@_tensors
def rope(x, positions=None, *, base=_D["base"], layout="neox", rotary_dim=None, scaling=None, seq_len=None, out=None,
         schedule=_D["schedule"], device=_D["device"], rope_parameters=None):
    """RoPE (contract §6) of x [B, H, L, D] -> float32 [B, H, L, D]; out=x rotates in place.

    positions [L] or [B, L] (default 0 … L−1); layout 'neox' (pairs c, r/2+c) or 'gptj' (2c, 2c+1);
    rotary_dim r (default D): channels r … D−1 pass through; scaling as in rope_frequencies, with
    seq_len defaulting to max(positions) + 1. On device="cuda" or "opencl", x and out may be
    posattn.DeviceArray buffers, used in place. rope_parameters: an HF config's dict in place of
    base, rotary_dim and scaling (hf_rope_parameters).
    """
    if rope_parameters is not None:
        base, rotary_dim, scaling = hf_rope_parameters(rope_parameters, _shape(x)[-1])
    if positions is not None:
        positions = _int32(positions, "rope", "positions", ("out", out))
    return _call("rope", _posattn.rope, x=_operand(x, "rope", "x"), positions=positions, base=base, layout=layout,
                 rotary_dim=_or_zero(rotary_dim), scaling=scaling, seq_len=_or_zero(seq_len), out=out, schedule=schedule,
                 device=device)


@_tensors
def complex_order(token_ids, positions, amplitude, frequency, phase=None, *, real=None, imag=None, schedule=_D["schedule"], device=_D["device"]):
    """Complex-order embedding (contract §4) -> (real, imag), each float32 [..., d]:
    amplitude[w]·(cos, sin)(frequency[w]·p + phase[w]). token_ids, positions [N] or [B, S];
    tables [V, d]; phase None as in the public code. A token id outside [0, V) is an error."""
    api = "complex_order"
    return _call(api, _posattn.complex_order, token_ids=_int32(token_ids, api, "token_ids", ("real", real), ("imag", imag)),
                 positions=_int32(positions, api, "positions", ("real", real), ("imag", imag)), amplitude=_operand(amplitude, api, "amplitude"),
                 frequency=_operand(frequency, api, "frequency"), phase=None if phase is None else _operand(phase, api, "phase"),
                 real=real, imag=imag, schedule=schedule, device=device)


def complex_order_frequency_init(vocab, d, kind="translation"):
    """float32 [vocab, d] frequency table as the public code initialises it (contract §4): 'translation'
    10000^(−2⌊c/2⌋/d) for every word (frozen), 'classification' w·10000^(−2c/d)."""
    return _call("complex_order_frequency_init", _posattn.complex_order_frequency_init, vocab=vocab, d=d, kind=kind)


@_tensors
def floater(num_positions, p0, W1, b1, W2, b2, *, dt=_D["floater_dt"], substeps=_D["floater_substeps"], method="rk4_38", out=None, schedule=_D["schedule"], device=_D["device"]):
    """FLOATER (contract §5): float32 [num_positions, d] (p0 [d]) or [batch, num_positions, d] (p0
    [batch, d]); row n = p(n·dt) of dp/dt = W2·[ReLU(W1·[p; t] + b1); t] + b2, p(0) = p0, with
    `substeps` steps of `method` ('rk4_38' = torchdiffeq's 'rk4', 'rk4', 'midpoint', 'euler') per
    position. W1 [hidden, d+1], b1 [hidden], W2 [d, hidden+1], b2 [d]."""
    tensors = {name: _operand(a, "floater", name) for name, a in dict(p0=p0, W1=W1, b1=b1, W2=W2, b2=b2).items()}
    return _call("floater", _posattn.floater, num_positions=num_positions, **tensors, dt=dt, substeps=substeps,
                 method=method, out=out, schedule=schedule, device=device)


def alibi_slopes(heads):
    """ALiBi head slopes, float64 [heads] (contract §7); not sorted when heads is not a power of two."""
    return _call("alibi_slopes", _posattn.alibi_slopes, heads=heads)


@_tensors
def alibi_bias(slopes, Lq, Lk, *, form="relative", out=None, schedule=_D["schedule"], device=_D["device"]):
    """float32 [H, Lq, Lk] ALiBi bias (contract §7) for query row r at absolute position r + Lk − Lq and
    key j: 'relative' −m(i−j), 'key_position' +m·j, 'symmetric' −m|i−j|. slopes [H], float64 or float32."""
    return _call("alibi_bias", _posattn.alibi_bias, slopes=_array(slopes, "alibi_bias", "slopes"), Lq=Lq, Lk=Lk, form=form,
                 out=out, schedule=schedule, device=device)


@_tensors
def t5_bucket(rel, bidirectional=_D["t5_bidirectional"], num_buckets=_D["t5_num_buckets"], max_distance=_D["t5_max_distance"]):
    """T5's bucket of each rel = key − query (contract §9), computed in float32 as torch does."""
    return _call("t5_bucket", _posattn.t5_bucket, rel=_int64(rel, "t5_bucket", "rel"), bidirectional=bidirectional,
                 num_buckets=num_buckets, max_distance=max_distance)


@_tensors
def attention(q, k, v, *, scale=None, causal=False, key_lengths=None, window=0, mask=None, bias=None, key_starts=None,
              q_segments=None, k_segments=None, query_lengths=None, alibi_slopes=None, alibi_form="relative",
              t5_table=None, t5_bidirectional=_D["t5_bidirectional"], t5_max_distance=_D["t5_max_distance"], rope=None, shaw=None, transformer_xl=None,
              deberta=None, custom=None, check_finite=True, out=None, schedule=_D["schedule"], device=_D["device"]):
    """Fused attention: q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] -> [B, Hq, Lq, Dv].

    scale defaults to 1/sqrt(D); causal is bottom-right aligned; key_lengths [B] masks keys
    j >= key_lengths[b]; a row with no visible key is exactly zero. alibi_slopes [Hq] adds ALiBi's
    bias slope·offset in `alibi_form` ('relative', 'key_position', 'symmetric') after scaling.
    t5_table [num_buckets, Hq] adds T5's bias table[bucket(key − query), h] (contract §9); scale then
    defaults to 1, as in T5. rope = {"base", "layout", "rotary_dim", "scaling", "q_positions",
    "k_positions", "seq_len"} (all optional, as in posattn.rope) rotates q and k inside the kernel;
    positions default to keys 0 … Lk−1 and queries at the last Lq of them. window > 0 masks keys
    at p_i − j >= window (sliding window; p_i = i + Lk − Lq is query i's position).
    mask (bool) and bias (float32) broadcast to [B, Hq, Lq, Lk] (rank 2 to 4): torch SDPA's boolean
    attn_mask (True = may attend) and its float one (added to the scaled logits; -inf masks).
    key_starts [B] masks keys j < key_starts[b] (left padding; RoPE's default positions then count
    from each batch's first valid key). q_segments [B, Lq] and k_segments [B, Lk] (packed
    sequences): a query sees only the keys of its own segment. query_lengths [B]: query rows
    i >= query_lengths[b] are 0.
    check_finite=False skips the check of q, k and v for NaN/Inf (a scan before the kernel; a CPU
    decoding step's kernel shows them in its output instead); a non-finite value then gives
    undefined output values, never a crash.
    On device="cuda" or "opencl", q, k, v and out may be posattn.DeviceArray buffers the caller
    made in posattn.device_context(device), used in place (out must then be given and is returned).

    Relative attention, each a dict (contract §8, §10, §11):
    shaw = {"rel_k": [2K+1, D] or [Hq, 2K+1, D], "rel_v": [2K+1, Dv] or [Hq, 2K+1, Dv]}: index
    clip(j − p_i, −K, K) + K, the scale covering q·a^K, values v_j + a^V.
    transformer_xl = {"r": [R, D] or [Hq, R, D] in ascending distance ("r_order": "descending": HF's
    order, row R − 1 − d for distance d), "u", "v_bias": [Hq, D], "clamp_len": 0, "same_length": mem_len or 0}: ((q+u)·k + (q+v_bias)·r[p_i − j])·scale; memory
    first in k and v; a visible key at a negative distance is an error (use causal=True).
    deberta = {"rel_embeddings": [>= 2·span, hidden], "w_key", "b_key" (c2p), "w_query", "b_query"
    (p2c; torch Linear [Hq·D, hidden] and [Hq·D]), "position_buckets": -1, "max_relative_positions": -1,
    "p2c_index": "code" | "paper"}: a term is on when its weight is given; scale defaults to
    1/sqrt(D·(1 + terms)).

    custom = {"kernel": name, "inputs": {name: array}, "scalars": {name: number}}: a variant of
    one's own, declared on posattn's attention generator (docs/architecture.md, "A variant out of
    tree") and added with load_kernel; its inputs by the kernel's argument names.
    """
    api, nd, written = "attention", np.ndarray, ("out", out)
    if rope is not None:
        rope = _attention_rope(rope, q, out)
    # The arguments positionally, in the extension's order (a keyword costs pybind11 a string
    # lookup), each converted inline where given (a helper call per argument, even for None, cost
    # ~2 µs a call in all).
    try:
        return _posattn.attention(
            q if type(q) is nd else _operand(q, api, "q"), k if type(k) is nd else _operand(k, api, "k"),
            v if type(v) is nd else _operand(v, api, "v"), scale, causal,
            None if key_lengths is None else _int32(key_lengths, api, "key_lengths", written),
            None if key_starts is None else _int32(key_starts, api, "key_starts", written),
            None if q_segments is None else _int32(q_segments, api, "q_segments", written),
            None if k_segments is None else _int32(k_segments, api, "k_segments", written),
            None if query_lengths is None else _int32(query_lengths, api, "query_lengths", written),
            None if mask is None else _array(mask, api, "mask"), None if bias is None else _operand(bias, api, "bias"),
            None if alibi_slopes is None else _array(alibi_slopes, api, "alibi_slopes"), alibi_form,
            None if t5_table is None else _array(t5_table, api, "t5_table"), t5_bidirectional, t5_max_distance, rope,
            window, None if shaw is None else _arrays(shaw, "shaw"),
            None if transformer_xl is None else _arrays(transformer_xl, "transformer_xl"),
            None if deberta is None else _arrays(deberta, "deberta"), None if custom is None else _custom(custom),
            check_finite, out, schedule, device)
    except TypeError as e:
        raise _named(api, e, locals()) from None


def _attention_rope(rope, q, out):
    """attention's rope dict as the extension takes it: HF's rope_parameters (with the model's
    max_position_embeddings) as base, rotary_dim and scaling; positions as int32."""
    api = "attention"
    rope = _dict(rope, api, "rope")
    if "rope_parameters" in rope:
        rope = dict(rope)
        base, rotary_dim, scaling = hf_rope_parameters(rope.pop("rope_parameters"), _shape(q)[-1],
                                                       rope.pop("max_position_embeddings", None), api)
        rope.update(base=base, rotary_dim=rotary_dim, scaling=scaling)
    return {key: (_int32(value, api, key, ("out", out)) if key.endswith("positions") and value is not None else value)
            for key, value in rope.items()}


def _arrays(options, name):
    """A variant's dict with its array-like values as arrays."""
    if _dict(options, "attention", name) is None:
        return None
    return {key: (_array(value, "attention", f"{name}.{key}") if hasattr(value, "__dlpack__") or isinstance(value, (list, tuple))
                  else value) for key, value in options.items()}


def _custom(custom):
    """attention's custom dict with its inputs as arrays."""
    custom = _dict(custom, "attention", "custom")
    if isinstance(custom.get("inputs"), dict):
        custom = dict(custom, inputs=_arrays(custom["inputs"], "custom.inputs"))
    return custom


def _or_zero(value):
    """An optional count as the extension takes it: 0 for None (the default)."""
    return 0 if value is None else value


def _int64(values, api, name):
    """Integers as int64 ([] too), or an Error naming the argument."""
    a = _array(values, api, name)
    integers = a.dtype.kind in "iu" or (a.size == 0 and a.dtype.kind == "f")
    if not integers or (a.dtype.kind == "u" and a.size and a.max() > np.iinfo(np.int64).max):
        raise Error(f"posattn.{api}: argument '{name}' has dtype {a.dtype}{' with values past int64' if integers else ''}; "
                    "expected int64 integers")
    return a.astype(np.int64)


@_tensors
def linear(x, weight, bias=None, *, out=None, schedule=_D["schedule"], device=_D["device"]):
    """torch's Linear: x [N, E], weight [O, E], bias [O] (None: 0) -> x·weightᵀ + bias, float32 [N, O]."""
    return _call("linear", _posattn.linear, x=_operand(x, "linear", "x"), weight=_operand(weight, "linear", "weight"),
                 bias=None if bias is None else _operand(bias, "linear", "bias"), out=out, schedule=schedule, device=device)


@_tensors
def deberta_bucket(delta, position_buckets, max_relative_positions=_D["deberta_max_relative_positions"]):
    """DeBERTa's relative position of each δ = query − key (contract §11): δ, or its log bucket (float32, ceil)."""
    return _call("deberta_bucket", _posattn.deberta_bucket, delta=_int64(delta, "deberta_bucket", "delta"),
                 position_buckets=position_buckets, max_relative_positions=max_relative_positions)
