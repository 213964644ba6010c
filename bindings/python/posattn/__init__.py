"""posattn: positional encodings and attention variants as AOT-compiled Halide kernels.

Inputs are NumPy arrays (any strides) or objects with ``__dlpack__``; outputs are NumPy arrays.
Integer position / length arrays of any integer dtype are accepted when every value fits int32.
Errors raise ``posattn.Error`` (a ``ValueError``) naming the argument and what was expected.
Every kernel call takes ``schedule=`` ("hand", or an autoscheduler baseline: see ``kernels()``) and
``device=`` ("cpu", "cuda", "opencl" or "vulkan"): arrays are host memory, which the runtime copies
to the device and the results back. On "cuda" and "opencl" every float32 operand may instead be a
``DeviceArray`` buffer the caller made in ``device_context(device)``, used in place (positions,
token ids, key lengths and slopes, which the runtime reads itself, stay host arrays).
"""
import numpy as np

from . import _posattn
from ._posattn import DeviceArray, Error, device_context, kernels, load_kernel, set_num_threads

__all__ = ["DeviceArray", "Error", "device_context", "alibi_bias", "alibi_slopes", "attention", "deberta_bucket", "linear", "t5_bucket", "complex_order", "complex_order_frequency_init", "floater", "binary", "binary_add", "integer", "integer_add", "kernels", "learned", "load_kernel",
           "learned_add", "normalized", "normalized_add", "rope", "rope_frequencies", "set_num_threads", "sin_only", "sin_only_add",
           "sinusoidal", "sinusoidal_add"]


def _array(a):
    if hasattr(a, "__dlpack__") and not isinstance(a, np.ndarray):
        return np.from_dlpack(a)
    return np.asarray(a)


def _operand(a):
    """An operand that may be device memory: a DeviceArray as it is, anything else as an array."""
    return a if isinstance(a, DeviceArray) else _array(a)


def _int32(a, api, name):
    a = _array(a)
    if a.dtype.kind in "iu" and a.dtype != np.int32:
        if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
            raise Error(f"posattn.{api}: argument '{name}' holds values outside int32")
        a = a.astype(np.int32)
    return a


def sinusoidal(positions, d, *, base=10000.0, layout="interleaved", convention="vaswani", out=None,
               schedule="hand", device="cpu"):
    """PE(positions) of width d (SPEC §1): positions [N] or [B, S] -> float32 [..., d]."""
    return _posattn.sinusoidal(_int32(positions, "sinusoidal", "positions"), d, base=base, layout=layout,
                               convention=convention, out=out, schedule=schedule, device=device)


def sinusoidal_add(x, positions, *, base=10000.0, layout="interleaved", convention="vaswani", out=None,
                   schedule="hand", device="cpu"):
    """x + PE(positions): x [B, S, D]; positions [B, S] or [S] (shared by every batch)."""
    return _posattn.sinusoidal_add(_operand(x), _int32(positions, "sinusoidal_add", "positions"), base=base,
                                   layout=layout, convention=convention, out=out, schedule=schedule, device=device)


def learned(table, positions, *, offset=0, out=None, schedule="hand", device="cpu"):
    """table[positions + offset] (SPEC §2); an index outside the table is an error."""
    return _posattn.learned(_operand(table), _int32(positions, "learned", "positions"), offset=offset, out=out,
                            schedule=schedule, device=device)


def learned_add(x, table, positions, *, offset=0, out=None, schedule="hand", device="cpu"):
    """x + table[positions + offset]: x [B, S, D]; positions [B, S] or [S]."""
    return _posattn.learned_add(_operand(x), _operand(table), _int32(positions, "learned_add", "positions"),
                                offset=offset, out=out, schedule=schedule, device=device)


def integer(positions, d, *, out=None, schedule="hand", device="cpu"):
    """PE = p on every channel (SPEC §3): positions [N] or [B, S] -> float32 [..., d]."""
    return _posattn.integer(_int32(positions, "integer", "positions"), d, out=out, schedule=schedule, device=device)


def integer_add(x, positions, *, out=None, schedule="hand", device="cpu"):
    """x + integer PE: x [B, S, D]; positions [B, S] or [S]."""
    return _posattn.integer_add(_operand(x), _int32(positions, "integer_add", "positions"), out=out, schedule=schedule, device=device)


def normalized(positions, d, *, length=None, mode="minus_one", out=None, schedule="hand", device="cpu"):
    """p/(L−1) ('minus_one', L = 1 gives 0) or p/L ('length') on every channel (SPEC §3), where L is
    `length`, or else the largest position + 1 of each sequence."""
    return _posattn.normalized(_int32(positions, "normalized", "positions"), d, length=length, mode=mode, out=out,
                               schedule=schedule, device=device)


def normalized_add(x, positions, *, length=None, mode="minus_one", out=None, schedule="hand", device="cpu"):
    """x + normalized PE: x [B, S, D]; positions [B, S] or [S]."""
    return _posattn.normalized_add(_operand(x), _int32(positions, "normalized_add", "positions"), length=length,
                                   mode=mode, out=out, schedule=schedule, device=device)


def binary(positions, d, *, signed=False, msb_first=False, out=None, schedule="hand", device="cpu"):
    """Channel c = bit c of p (bit d−1−c with msb_first), {0, 1} or {−1, +1} (SPEC §3); every
    position must satisfy 0 <= p < 2^d."""
    return _posattn.binary(_int32(positions, "binary", "positions"), d, signed=signed, msb_first=msb_first,
                           out=out, schedule=schedule, device=device)


def binary_add(x, positions, *, signed=False, msb_first=False, out=None, schedule="hand", device="cpu"):
    """x + binary PE: x [B, S, D]; positions [B, S] or [S]."""
    return _posattn.binary_add(_operand(x), _int32(positions, "binary_add", "positions"), signed=signed,
                               msb_first=msb_first, out=out, schedule=schedule, device=device)


def sin_only(positions, d, *, base=10000.0, out=None, schedule="hand", device="cpu"):
    """PE[c] = sin(p · base^(−c/d)), c = 0 … d−1 (SPEC §3)."""
    return _posattn.sin_only(_int32(positions, "sin_only", "positions"), d, base=base, out=out, schedule=schedule, device=device)


def sin_only_add(x, positions, *, base=10000.0, out=None, schedule="hand", device="cpu"):
    """x + sin-only PE: x [B, S, D]; positions [B, S] or [S]."""
    return _posattn.sin_only_add(_operand(x), _int32(positions, "sin_only_add", "positions"), base=base, out=out,
                                 schedule=schedule, device=device)


def rope_frequencies(rotary_dim, *, base=10000.0, scaling=None, seq_len=None):
    """(inv_freq float64 [rotary_dim/2], attention_factor) for RoPE (SPEC §6). scaling: an HF-style
    rope_scaling dict, {"type": linear | ntk | dynamic | yarn | llama3 | longrope, "factor": …, …};
    seq_len: the current length that dynamic and longrope read."""
    return _posattn.rope_frequencies(rotary_dim, base=base, scaling=scaling, seq_len=seq_len or 0)


def rope(x, positions=None, *, base=10000.0, layout="neox", rotary_dim=None, scaling=None, seq_len=None, out=None,
         schedule="hand", device="cpu"):
    """RoPE (SPEC §6) of x [B, H, L, D] -> float32 [B, H, L, D]; out=x rotates in place.

    positions [L] or [B, L] (default 0 … L−1); layout 'neox' (pairs c, r/2+c) or 'gptj' (2c, 2c+1);
    rotary_dim r (default D): channels r … D−1 pass through; scaling as in rope_frequencies, with
    seq_len defaulting to max(positions) + 1. On device="cuda" or "opencl", x and out may be
    posattn.DeviceArray buffers, used in place.
    """
    if positions is not None:
        positions = _int32(positions, "rope", "positions")
    return _posattn.rope(_operand(x), positions, base=base, layout=layout, rotary_dim=rotary_dim or 0,
                         scaling=scaling, seq_len=seq_len or 0, out=out, schedule=schedule, device=device)


def complex_order(token_ids, positions, amplitude, frequency, phase=None, *, real=None, imag=None, schedule="hand", device="cpu"):
    """Complex-order embedding (SPEC §4) -> (real, imag), each float32 [..., d]:
    amplitude[w]·(cos, sin)(frequency[w]·p + phase[w]). token_ids, positions [N] or [B, S];
    tables [V, d]; phase None as in the public code. A token id outside [0, V) is an error."""
    return _posattn.complex_order(_int32(token_ids, "complex_order", "token_ids"),
                                  _int32(positions, "complex_order", "positions"), _operand(amplitude),
                                  _operand(frequency), None if phase is None else _operand(phase), real=real, imag=imag,
                                  schedule=schedule, device=device)


def complex_order_frequency_init(vocab, d, kind="translation"):
    """float32 [vocab, d] frequency table as the public code initialises it (SPEC §4): 'translation'
    10000^(−2⌊c/2⌋/d) for every word (frozen), 'classification' w·10000^(−2c/d)."""
    return _posattn.complex_order_frequency_init(vocab, d, kind)


def floater(num_positions, p0, W1, b1, W2, b2, *, dt=0.01, substeps=5, method="rk4_38", out=None, schedule="hand", device="cpu"):
    """FLOATER (SPEC §5): float32 [num_positions, d] (p0 [d]) or [batch, num_positions, d] (p0
    [batch, d]); row n = p(n·dt) of dp/dt = W2·[ReLU(W1·[p; t] + b1); t] + b2, p(0) = p0, with
    `substeps` steps of `method` ('rk4_38' = torchdiffeq's 'rk4', 'rk4', 'midpoint', 'euler') per
    position. W1 [hidden, d+1], b1 [hidden], W2 [d, hidden+1], b2 [d]."""
    return _posattn.floater(num_positions, *(_operand(a) for a in (p0, W1, b1, W2, b2)), dt=dt, substeps=substeps,
                            method=method, out=out, schedule=schedule, device=device)


def alibi_slopes(heads):
    """ALiBi head slopes, float64 [heads] (SPEC §7); not sorted when heads is not a power of two."""
    return _posattn.alibi_slopes(heads)


def alibi_bias(slopes, Lq, Lk, *, form="relative", out=None, schedule="hand", device="cpu"):
    """float32 [H, Lq, Lk] ALiBi bias (SPEC §7) for query row r at absolute position r + Lk − Lq and
    key j: 'relative' −m(i−j), 'key_position' +m·j, 'symmetric' −m|i−j|. slopes [H], float64 or float32."""
    return _posattn.alibi_bias(_array(slopes), Lq, Lk, form=form, out=out, schedule=schedule, device=device)


def t5_bucket(rel, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket of each rel = key − query (SPEC §9), computed in float32 as torch does."""
    return _posattn.t5_bucket(np.asarray(rel, dtype=np.int64), bidirectional, num_buckets, max_distance)


def attention(q, k, v, *, scale=None, causal=False, key_lengths=None, window=0, alibi_slopes=None,
              alibi_form="relative", t5_table=None, t5_bidirectional=True, t5_max_distance=128, rope=None, shaw=None,
              transformer_xl=None, deberta=None, check_finite=True, out=None, schedule="hand", device="cpu"):
    """Fused attention: q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] -> [B, Hq, Lq, Dv].

    scale defaults to 1/sqrt(D); causal is bottom-right aligned; key_lengths [B] masks keys
    j >= key_lengths[b]; a row with no visible key is exactly zero. alibi_slopes [Hq] adds ALiBi's
    bias slope·offset in `alibi_form` ('relative', 'key_position', 'symmetric') after scaling.
    t5_table [num_buckets, Hq] adds T5's bias table[bucket(key − query), h] (SPEC §9); scale then
    defaults to 1, as in T5. rope = {"base", "layout", "rotary_dim", "scaling", "q_positions",
    "k_positions", "seq_len"} (all optional, as in posattn.rope) rotates q and k inside the kernel;
    positions default to keys 0 … Lk−1 and queries at the last Lq of them. window > 0 masks keys
    at p_i − j >= window (sliding window; p_i = i + Lk − Lq is query i's position).
    check_finite=False skips the scan of q, k and v for NaN/Inf (a decoding step's second read of
    its KV cache); a non-finite value then gives undefined output values, never a crash.
    On device="cuda" or "opencl", q, k, v and out may be posattn.DeviceArray buffers the caller
    made in posattn.device_context(device), used in place (out must then be given and is returned).

    Relative attention, each a dict (SPEC §8, §10, §11):
    shaw = {"rel_k": [2K+1, D] or [Hq, 2K+1, D], "rel_v": [2K+1, Dv] or [Hq, 2K+1, Dv]}: index
    clip(j − p_i, −K, K) + K, the scale covering q·a^K, values v_j + a^V.
    transformer_xl = {"r": [R, D] or [Hq, R, D] in ascending distance, "u", "v_bias": [Hq, D],
    "clamp_len": 0, "same_length": mem_len or 0}: ((q+u)·k + (q+v_bias)·r[p_i − j])·scale; memory
    first in k and v; a visible key at a negative distance is an error (use causal=True).
    deberta = {"rel_embeddings": [>= 2·span, hidden], "w_key", "b_key" (c2p), "w_query", "b_query"
    (p2c; torch Linear [Hq·D, hidden] and [Hq·D]), "position_buckets": -1, "max_relative_positions": -1,
    "p2c_index": "code" | "paper"}: a term is on when its weight is given; scale defaults to
    1/sqrt(D·(1 + terms)).
    """
    if rope is not None:
        rope = {key: (_int32(value, "attention", key) if key.endswith("positions") and value is not None else value)
                for key, value in rope.items()}
    if key_lengths is not None:
        key_lengths = _int32(key_lengths, "attention", "key_lengths")
    return _posattn.attention(_operand(q), _operand(k), _operand(v), scale=scale, causal=causal,
                              key_lengths=key_lengths, alibi_slopes=None if alibi_slopes is None else _array(alibi_slopes),
                              alibi_form=alibi_form, t5_table=None if t5_table is None else _array(t5_table),
                              t5_bidirectional=t5_bidirectional, t5_max_distance=t5_max_distance, rope=rope,
                              window=window, shaw=_arrays(shaw), transformer_xl=_arrays(transformer_xl),
                              deberta=_arrays(deberta), check_finite=check_finite, out=out, schedule=schedule,
                              device=device)


def _arrays(options):
    """A variant's dict with its array-like values as arrays."""
    if options is None:
        return None
    return {key: (_array(value) if hasattr(value, "__dlpack__") or isinstance(value, (list, tuple)) else value)
            for key, value in options.items()}


def linear(x, weight, bias=None, *, out=None, schedule="hand", device="cpu"):
    """torch's Linear: x [N, E], weight [O, E], bias [O] (None: 0) -> x·weightᵀ + bias, float32 [N, O]."""
    return _posattn.linear(_operand(x), _operand(weight), None if bias is None else _operand(bias), out=out,
                           schedule=schedule, device=device)


def deberta_bucket(delta, position_buckets, max_relative_positions=-1):
    """DeBERTa's relative position of each δ = query − key (SPEC §11): δ, or its log bucket (float32, ceil)."""
    return _posattn.deberta_bucket(np.asarray(delta, dtype=np.int64), position_buckets, max_relative_positions)
