"""Float64 NumPy references written from SPEC.md: the ground truth for tests and the showcase.

They favour clarity over speed: no tiling, the full score matrix, float64 throughout.
"""
import numpy as np


def sinusoidal_frequencies(d, base=10000.0, convention="vaswani"):
    """ω_i, i = 0 … d'/2−1, with d' = d rounded down to even (SPEC §1)."""
    pairs = d // 2
    i = np.arange(pairs, dtype=np.float64)
    if convention == "vaswani":
        exponent = 2.0 * i / (2 * pairs) if pairs else i
    elif convention == "t2t":
        exponent = i / max(pairs - 1, 1)
    else:
        raise ValueError(convention)
    return float(base) ** (-exponent)


def sinusoidal(positions, d, base=10000.0, layout="interleaved", convention="vaswani"):
    """PE[..., c] for integer positions; odd d gets a zero last column."""
    omega = sinusoidal_frequencies(d, base, convention)
    angle = np.asarray(positions, dtype=np.float64)[..., None] * omega
    pe = np.zeros(angle.shape[:-1] + (d,))
    pairs = len(omega)
    if layout == "interleaved":
        pe[..., 0:2 * pairs:2] = np.sin(angle)
        pe[..., 1:2 * pairs:2] = np.cos(angle)
    elif layout == "half":
        pe[..., :pairs] = np.sin(angle)
        pe[..., pairs:2 * pairs] = np.cos(angle)
    else:
        raise ValueError(layout)
    return pe


def learned(table, positions, offset=0):
    """table[positions + offset] (SPEC §2); raises outside the table."""
    rows = np.asarray(positions, dtype=np.int64) + offset
    table = np.asarray(table, dtype=np.float64)
    if rows.size and (rows.min() < 0 or rows.max() >= table.shape[0]):
        raise IndexError("position outside the table")
    return table[rows]


def attention(q, k, v, scale=None, causal=False, key_lengths=None):
    """softmax(scale·q·kᵀ + mask)·v with SPEC §0 conventions: causal bottom-right, GQA by
    repeating k/v heads, a row with no visible key is exactly 0."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    B, Hq, Lq, D = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    group = Hq // Hkv
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1.0 / np.sqrt(D) if scale is None else scale
    logits = scale * np.einsum("bhid,bhjd->bhij", q, k)
    i = np.arange(Lq)[:, None]
    j = np.arange(Lk)[None, :]
    visible = np.ones((B, 1, Lq, Lk), dtype=bool)
    if causal:
        visible &= (j <= i + (Lk - Lq))[None, None]
    if key_lengths is not None:
        visible &= (j[None, None] < np.asarray(key_lengths)[:, None, None, None])
    logits = np.where(visible, logits, -np.inf)
    row_max = logits.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    weights = np.where(visible, np.exp(logits - row_max), 0.0)
    total = weights.sum(axis=-1, keepdims=True)
    weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
    return np.einsum("bhij,bhjd->bhid", weights, v)
