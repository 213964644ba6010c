"""posattn: positional encodings and attention variants as AOT-compiled Halide kernels.

Inputs are NumPy arrays (any strides) or objects with ``__dlpack__``; outputs are NumPy arrays.
Integer position / length arrays of any integer dtype are accepted when every value fits int32.
Errors raise ``posattn.Error`` (a ``ValueError``) naming the argument and what was expected.
"""
import numpy as np

from . import _posattn
from ._posattn import Error, kernels, set_num_threads

__all__ = ["Error", "attention", "kernels", "learned", "learned_add", "set_num_threads",
           "sinusoidal", "sinusoidal_add"]


def _array(a):
    if hasattr(a, "__dlpack__") and not isinstance(a, np.ndarray):
        return np.from_dlpack(a)
    return np.asarray(a)


def _int32(a, api, name):
    a = _array(a)
    if a.dtype.kind in "iu" and a.dtype != np.int32:
        if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
            raise Error(f"posattn.{api}: argument '{name}' holds values outside int32")
        a = a.astype(np.int32)
    return a


def sinusoidal(positions, d, *, base=10000.0, layout="interleaved", convention="vaswani", out=None,
               schedule="hand"):
    """PE(positions) of width d (SPEC §1): positions [N] or [B, S] -> float32 [..., d]."""
    return _posattn.sinusoidal(_int32(positions, "sinusoidal", "positions"), d, base=base, layout=layout,
                               convention=convention, out=out, schedule=schedule)


def sinusoidal_add(x, positions, *, base=10000.0, layout="interleaved", convention="vaswani", out=None,
                   schedule="hand"):
    """x + PE(positions): x [B, S, D]; positions [B, S] or [S] (shared by every batch)."""
    return _posattn.sinusoidal_add(_array(x), _int32(positions, "sinusoidal_add", "positions"), base=base,
                                   layout=layout, convention=convention, out=out, schedule=schedule)


def learned(table, positions, *, offset=0, out=None, schedule="hand"):
    """table[positions + offset] (SPEC §2); an index outside the table is an error."""
    return _posattn.learned(_array(table), _int32(positions, "learned", "positions"), offset=offset, out=out,
                            schedule=schedule)


def learned_add(x, table, positions, *, offset=0, out=None, schedule="hand"):
    """x + table[positions + offset]: x [B, S, D]; positions [B, S] or [S]."""
    return _posattn.learned_add(_array(x), _array(table), _int32(positions, "learned_add", "positions"),
                                offset=offset, out=out, schedule=schedule)


def attention(q, k, v, *, scale=None, causal=False, key_lengths=None, out=None, schedule="hand"):
    """Fused attention: q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] -> [B, Hq, Lq, Dv].

    scale defaults to 1/sqrt(D); causal is bottom-right aligned; key_lengths [B] masks keys
    j >= key_lengths[b]; a row with no visible key is exactly zero.
    """
    if key_lengths is not None:
        key_lengths = _int32(key_lengths, "attention", "key_lengths")
    return _posattn.attention(_array(q), _array(k), _array(v), scale=scale, causal=causal,
                              key_lengths=key_lengths, out=out, schedule=schedule)
