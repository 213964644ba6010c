"""Float64 NumPy references written from docs/contract.md: the ground truth for tests and the showcase.

They favour clarity over speed: no tiling, the full score matrix, float64 throughout.
"""
import math
import operator

import numpy as np


def sinusoidal_frequencies(d, base=10000.0, convention="vaswani"):
    """ω_i, i = 0 … d'/2−1, with d' = d rounded down to even (contract §1)."""
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
    """table[positions + offset] (contract §2); raises outside the table."""
    rows = np.asarray(positions, dtype=np.int64) + offset
    table = np.asarray(table, dtype=np.float64)
    if rows.size and (rows.min() < 0 or rows.max() >= table.shape[0]):
        raise IndexError("position outside the table")
    return table[rows]


def attention(q, k, v, scale=None, causal=False, key_lengths=None, bias=None, window=0,
              relative_scores=None, relative_values=None, mask=None, key_starts=None, q_segments=None,
              k_segments=None, query_lengths=None):
    """softmax(scale·(q·kᵀ + relative_scores) + bias + mask)·(v + relative_values) with contract §0
    conventions: causal bottom-right, GQA by repeating k/v heads, a row with no visible key is
    exactly 0; bias broadcasts to [B, Hq, Lq, Lk] and is not scaled (ALiBi, T5); relative_scores
    (same shape) is scaled (Shaw, Transformer-XL, DeBERTa); relative_values broadcasts to
    [B, Hq, Lq, Lk, Dv], the value of key j as query i sees it (Shaw). window > 0 masks keys at
    p_i − j >= window. mask (bool, True = may attend) broadcasts like bias; key_starts [B] masks
    keys j < key_starts[b]; a query sees only keys of its segment (q_segments [B, Lq], k_segments
    [B, Lk]); query rows i >= query_lengths[b] are 0."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    B, Hq, Lq, D = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    group = Hq // Hkv
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1.0 / np.sqrt(D) if scale is None else scale
    scores = np.einsum("bhid,bhjd->bhij", q, k)
    if relative_scores is not None:
        scores = scores + relative_scores
    logits = scale * scores
    if bias is not None:
        logits = logits + np.asarray(bias, dtype=np.float64)
    i = np.arange(Lq)[:, None] + (Lk - Lq)  # the query's position
    j = np.arange(Lk)[None, :]
    visible = np.ones((B, 1, Lq, Lk), dtype=bool)
    if causal:
        visible &= (j <= i)[None, None]
    if window:
        visible &= (i - j < window)[None, None]
    if key_lengths is not None:
        past = j[None, None] >= np.asarray(key_lengths)[:, None, None, None]  # [B, 1, 1, Lk]
        visible &= ~past
        v = np.where(past[..., 0, :, None], 0.0, v)  # a key past its batch's length is never read (NaN there too)
    if key_starts is not None:
        before = j[None, None] < np.asarray(key_starts)[:, None, None, None]
        visible &= ~before
        v = np.where(before[..., 0, :, None], 0.0, v)  # nor one before its batch's start (left padding)
    if q_segments is not None:
        visible &= (np.asarray(q_segments)[:, :, None] == np.asarray(k_segments)[:, None, :])[:, None]
    if query_lengths is not None:
        visible &= np.arange(Lq)[None, None, :, None] < np.asarray(query_lengths)[:, None, None, None]
    if mask is not None:
        visible = visible & np.asarray(mask, dtype=bool)
    visible = visible & (logits > -np.inf)  # a bias of -inf masks its key
    logits = np.where(visible, logits, -np.inf)
    row_max = logits.max(axis=-1, keepdims=True, initial=-np.inf)  # (no key at all: Lk = 0)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    weights = np.where(visible, np.exp(logits - row_max), 0.0)
    total = weights.sum(axis=-1, keepdims=True)
    weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
    out = np.einsum("bhij,bhjd->bhid", weights, v)
    if relative_values is not None:
        out = out + np.einsum("bhij,bhijd->bhid", weights, np.broadcast_to(relative_values, weights.shape + (v.shape[-1],)))
    return out


def _per_head(table, H):
    """A relative table [R, C] shared by every head, or [H, R, C], as [H, R, C] float64."""
    table = np.asarray(table, dtype=np.float64)
    return np.broadcast_to(table, (H,) + table.shape) if table.ndim == 2 else table


def shaw_index(Lq, Lk, K):
    """Shaw's table row clip(j − p_i, −K, K) + K of query row i (position p_i = i + Lk − Lq) and key j (contract §8)."""
    rel = np.arange(Lk)[None, :] - (np.arange(Lq)[:, None] + (Lk - Lq))
    return np.clip(rel, -K, K) + K


def shaw_attention(q, k, v, rel_k, rel_v, scale=None, **masks):
    """Shaw et al. (contract §8): logits (q_i·k_j + q_i·a^K_ij)·scale, outputs Σ_j α_ij (v_j + a^V_ij)."""
    q = np.asarray(q, dtype=np.float64)
    Hq, Lq, Lk = q.shape[1], q.shape[2], np.shape(k)[2]
    rel_k, rel_v = _per_head(rel_k, Hq), _per_head(rel_v, Hq)
    idx = shaw_index(Lq, Lk, rel_k.shape[1] // 2)
    scores = np.einsum("bhid,hijd->bhij", q, rel_k[:, idx])
    return attention(q, k, v, scale=scale, relative_scores=scores, relative_values=rel_v[None, :, idx], **masks)


def transformer_xl_attention(q, k, v, r, u, v_bias, clamp_len=0, same_length=0, causal=True, scale=None, **masks):
    """Transformer-XL (contract §10) with the explicit index: ((q_i+u)·k_j + (q_i+v_bias)·r[dist])·scale,
    dist = p_i − j (memory first), r ascending by distance, clamped to clamp_len; same_length
    masks keys at distance >= mem_len (= same_length)."""
    q = np.asarray(q, dtype=np.float64)
    Hq, Lq, Lk = q.shape[1], q.shape[2], np.shape(k)[2]
    r = _per_head(r, Hq)
    dist = (np.arange(Lq)[:, None] + (Lk - Lq)) - np.arange(Lk)[None, :]
    idx = np.clip(dist, 0, clamp_len if clamp_len > 0 else None)
    qv = q + np.asarray(v_bias, dtype=np.float64)[None, :, None, :]
    bd = np.einsum("bhid,hijd->bhij", qv, r[:, idx])
    qu = q + np.asarray(u, dtype=np.float64)[None, :, None, :]
    return attention(qu, k, v, scale=scale, causal=causal, window=same_length, relative_scores=bd, **masks)


def rel_shift(x):
    """Transformer-XL's _rel_shift, literally: pad a zero column on the left of [..., qlen, klen],
    view as [..., klen + 1, qlen], drop the first row, view back."""
    *lead, qlen, klen = x.shape
    padded = np.concatenate([np.zeros((*lead, qlen, 1)), x], axis=-1)
    return padded.reshape(*lead, klen + 1, qlen)[..., 1:, :].reshape(*lead, qlen, klen)


def transformer_xl_bd_literal(q, r, v_bias):
    """The BD term as HF/original code computes it: (q+v)·r over pos_seq = klen−1 … 0 (r taken
    descending), then rel_shift. Equal to the explicit index where j <= mlen + i."""
    q = np.asarray(q, dtype=np.float64)
    r_descending = _per_head(r, q.shape[1])[:, ::-1]
    raw = np.einsum("bhid,hcd->bhic", q + np.asarray(v_bias, dtype=np.float64)[None, :, None, :], r_descending)
    return rel_shift(raw)


def deberta_bucket(delta, position_buckets, max_relative_positions=-1):
    """DeBERTa's make_log_bucket_position of δ = query − key (contract §11), float32 with ceil as HF."""
    delta = np.asarray(delta, dtype=np.int64)
    if position_buckets <= 0:
        return delta
    max_position = 512 if max_relative_positions < 1 else max_relative_positions
    mid = position_buckets // 2
    sign = np.sign(delta)
    abs_pos = np.where((delta < mid) & (delta > -mid), mid - 1, np.abs(delta))
    log_pos = np.ceil(np.log(abs_pos.astype(np.float32) / np.float32(mid))
                      / np.log(np.float32((max_position - 1) / mid)) * np.float32(mid - 1)) + mid
    return np.where(abs_pos <= mid, delta, (log_pos * sign).astype(np.int64))


def _deberta_span(position_buckets, max_relative_positions):
    max_rel = 512 if max_relative_positions < 1 else max_relative_positions
    return position_buckets if position_buckets > 0 else max_rel


def _deberta_tables(rel_embeddings, w, b, span, H, D):
    """The projected relative table rel_embeddings[:2·span]·wᵀ + b as [H, 2·span, D]."""
    emb = np.asarray(rel_embeddings, dtype=np.float64)[: 2 * span]
    projected = emb @ np.asarray(w, dtype=np.float64).T + (0.0 if b is None else np.asarray(b, dtype=np.float64))
    return projected.reshape(2 * span, H, D).transpose(1, 0, 2)


def deberta_attention(q, k, v, rel_embeddings, w_key=None, b_key=None, w_query=None, b_query=None,
                      position_buckets=-1, max_relative_positions=-1, p2c_index="code", scale=None, **masks):
    """DeBERTa v2 disentangled attention (contract §11), closed form: c2p q_i·K_r[idx(i, j)], p2c
    k_j·Q_r[idx(i, j)] (HF/official) or Q_r[clamp(−bucket(i − j) + span)] (the paper), δ = i − j."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    B, H, Lq, D = q.shape
    k_heads = np.repeat(k, H // k.shape[1], axis=1)
    span = _deberta_span(position_buckets, max_relative_positions)
    rel = deberta_bucket(np.arange(Lq)[:, None] - np.arange(np.shape(k)[2])[None, :], position_buckets,
                         max_relative_positions)
    scores, terms = 0.0, 0
    if w_key is not None:
        K_r = _deberta_tables(rel_embeddings, w_key, b_key, span, H, D)
        scores = scores + np.einsum("bhid,hijd->bhij", q, K_r[:, np.clip(rel + span, 0, 2 * span - 1)])
        terms += 1
    if w_query is not None:
        Q_r = _deberta_tables(rel_embeddings, w_query, b_query, span, H, D)
        p2c_rel = rel if p2c_index == "code" else -rel
        scores = scores + np.einsum("bhjd,hijd->bhij", k_heads, Q_r[:, np.clip(p2c_rel + span, 0, 2 * span - 1)])
        terms += 1
    scale = 1.0 / np.sqrt(D * (1 + terms)) if scale is None else scale
    return attention(q, k, v, scale=scale, relative_scores=scores, **masks)


def deberta_scores_literal(q, k, rel_embeddings, w_key, b_key, w_query, b_query, position_buckets=-1,
                           max_relative_positions=-1):
    """c2p + p2c as HF's disentangled_attention_bias computes them for Lq = Lk: gather from
    q·K_rᵀ, and gather from k·Q_rᵀ with clamp(−r_pos + span) on [key, key], then transpose."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    B, H, L, D = q.shape
    span = _deberta_span(position_buckets, max_relative_positions)
    r_pos = deberta_bucket(np.arange(L)[:, None] - np.arange(L)[None, :], position_buckets, max_relative_positions)
    K_r = _deberta_tables(rel_embeddings, w_key, b_key, span, H, D)
    Q_r = _deberta_tables(rel_embeddings, w_query, b_query, span, H, D)
    c2p_pos = np.broadcast_to(np.clip(r_pos + span, 0, 2 * span - 1), (B, H, L, L))
    c2p = np.take_along_axis(np.einsum("bhid,hcd->bhic", q, K_r), c2p_pos, axis=-1)
    p2c_pos = np.broadcast_to(np.clip(-r_pos + span, 0, 2 * span - 1), (B, H, L, L))
    p2c = np.take_along_axis(np.einsum("bhjd,hcd->bhjc", k, Q_r), p2c_pos, axis=-1).swapaxes(-1, -2)
    return c2p + p2c


def integer(positions, d):
    """PE[..., c] = p for every channel (contract §3); unbounded."""
    p = np.asarray(positions, dtype=np.float64)
    return np.repeat(p[..., None], d, axis=-1)


def normalized(positions, d, length=None, mode="minus_one"):
    """p/(L−1) ('minus_one', L = 1 gives 0) or p/L ('length') in every channel (contract §3).
    positions [S] or [B, S]; L = length (an int or one per sequence, [B]), else max(p)+1 per sequence."""
    p = np.asarray(positions, dtype=np.float64)
    if length is None:
        L = p.max(axis=-1, keepdims=True) + 1
    else:
        L = np.asarray(length, dtype=np.float64)
        L = L[:, None] if L.ndim == 1 else L
    if np.any(L < 1):
        raise ValueError("normalized: sequence length must be >= 1")
    if mode == "minus_one":
        value = np.where(L > 1, p / np.maximum(L - 1, 1), 0.0)
    elif mode == "length":
        value = p / L
    else:
        raise ValueError(f"normalized: unknown mode {mode!r}")
    return np.repeat(value[..., None], d, axis=-1)


def binary(positions, d, signed=False, msb_first=False):
    """PE[..., b] = (p >> b) & 1, LSB first, or bit d−1−b with msb_first; signed maps {0,1} → {−1,+1}
    (contract §3). Requires 0 ≤ p < 2^d; bits are taken from Python ints, so any d works."""
    p = np.asarray(positions)
    values = [operator.index(v) for v in p.ravel().tolist()]
    if any(v < 0 or v >> d for v in values):
        raise ValueError(f"binary: positions must lie in [0, 2^{d})")
    bits = np.array([[(v >> b) & 1 for b in range(d)] for v in values], dtype=np.float64)
    bits = bits.reshape(p.shape + (d,))
    if msb_first:
        bits = bits[..., ::-1]
    return 2.0 * bits - 1.0 if signed else bits


def sin_only(positions, d, base=10000.0):
    """PE[..., i] = sin(p · base^(−i/d)), i = 0 … d−1 (contract §3)."""
    p = np.asarray(positions, dtype=np.float64)
    return np.sin(p[..., None] * float(base) ** (-np.arange(d) / d))


def complex_order(token_ids, positions, amplitude, frequency, phase=None):
    """(real, imag) of f(w,p)_c = r_{w,c}·exp(i(ω_{w,c}·p + θ_{w,c})), each [..., d] (contract §4);
    phase=None is the public code's θ = 0."""
    ids = np.asarray(token_ids, dtype=np.int64)
    r = np.asarray(amplitude, dtype=np.float64)
    omega = np.asarray(frequency, dtype=np.float64)
    theta = np.zeros_like(r) if phase is None else np.asarray(phase, dtype=np.float64)
    if r.ndim != 2 or omega.shape != r.shape or theta.shape != r.shape:
        raise ValueError("complex_order: amplitude, frequency and phase must be [V, d] tables")
    if ids.size and (ids.min() < 0 or ids.max() >= r.shape[0]):
        raise IndexError("complex_order: token id outside the vocabulary")
    angle = omega[ids] * np.asarray(positions, dtype=np.float64)[..., None] + theta[ids]
    return r[ids] * np.cos(angle), r[ids] * np.sin(angle)


def complex_order_frequency_init(vocab, d, kind="translation"):
    """ω table [vocab, d] (contract §4): 'translation' (Models.py, frozen) ω[w,c] = 10000^(−2⌊c/2⌋/d) for
    every word; 'classification' (FastText Complex_order.py, trainable) ω[w,c] = w·10000^(−2c/d)."""
    c = np.arange(d)
    if kind == "translation":
        row = 10000.0 ** (-2.0 * (c // 2) / d)
        return np.tile(row, (vocab, 1))
    if kind == "classification":
        return np.arange(vocab, dtype=np.float64)[:, None] * 10000.0 ** (-2.0 * c / d)
    raise ValueError(f"complex_order_frequency_init: unknown kind {kind!r}")


def ode_step(f, method, t, y, h):
    """One fixed step of size h from (t, y)."""
    if method == "euler":
        return y + h * f(t, y)
    if method == "midpoint":
        return y + h * f(t + h / 2, y + h / 2 * f(t, y))
    k1 = f(t, y)
    if method == "rk4":
        k2 = f(t + h / 2, y + h / 2 * k1)
        k3 = f(t + h / 2, y + h / 2 * k2)
        k4 = f(t + h, y + h * k3)
        return y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    # rk4_38: the same stages and weights as torchdiffeq rk_common.rk4_alt_step_func (checked against
    # its source): k2 = f(t+h/3, y+h·k1/3), k3 = f(t+2h/3, y+h(k2−k1/3)), k4 = f(t+h, y+h(k1−k2+k3)),
    # increment (k1 + 3(k2+k3) + k4)·h/8.
    k2 = f(t + h / 3, y + h * k1 / 3)
    k3 = f(t + 2 * h / 3, y + h * (k2 - k1 / 3))
    k4 = f(t + h, y + h * (k1 - k2 + k3))
    return y + h * (k1 + 3 * (k2 + k3) + k4) / 8


def floater(num_positions, p0, W1, b1, W2, b2, dt=0.01, substeps=5, method="rk4_38"):
    """p(n·dt) for n = 0 … num_positions−1 with dp/dt = W2·[ReLU(W1·[p; t] + b1); t] + b2, p(0) = p0
    (contract §5). p0 [d] or [batch, d]; W1 [hidden, d+1], W2 [d, hidden+1] (torch [out, in]).
    `substeps` fixed steps of dt/substeps per position at absolute times; returns [(batch,) N, d]."""
    p0 = np.asarray(p0, dtype=np.float64)
    W1, b1, W2, b2 = (np.asarray(a, dtype=np.float64) for a in (W1, b1, W2, b2))
    d, hidden = p0.shape[-1], W1.shape[0]
    if W1.shape != (hidden, d + 1) or b1.shape != (hidden,) or W2.shape != (d, hidden + 1) \
            or b2.shape != (d,):
        raise ValueError("floater: expected W1 [hidden, d+1], b1 [hidden], W2 [d, hidden+1], b2 [d]")
    if method not in ("rk4_38", "rk4", "midpoint", "euler"):
        raise ValueError(f"floater: unknown method {method!r}")
    if substeps < 1 or num_positions < 0:
        raise ValueError("floater: substeps must be >= 1 and num_positions >= 0")

    def field(t, p):
        t_col = np.full(p.shape[:-1] + (1,), t)
        hid = np.maximum(np.concatenate([p, t_col], axis=-1) @ W1.T + b1, 0.0)
        return np.concatenate([hid, t_col], axis=-1) @ W2.T + b2

    h = dt / substeps
    out = np.empty(p0.shape[:-1] + (num_positions, d))
    y = p0
    for n in range(num_positions):
        if n:
            for k in range(substeps):
                y = ode_step(field, method, ((n - 1) * substeps + k) * h, y, h)
        out[..., n, :] = y
    return out


def rope_inv_freq(rotary_dim, base=10000.0, scaling=None, seq_len=None):
    """(inv_freq [r/2], attention_factor) for RoPE (contract §6): inv_c = base^(−2c/r), then the scaling
    {'type': linear | ntk | dynamic | yarn | llama3 | longrope, …} as HF ROPE_INIT_FUNCTIONS."""
    r = rotary_dim
    if r <= 0 or r % 2:
        raise ValueError(f"rope_inv_freq: rotary_dim must be even and > 0, got {r}")
    exponent = np.arange(0, r, 2) / r
    inv = float(base) ** -exponent
    if scaling is None:
        return inv, 1.0
    kind = scaling.get("type")

    def need(key):
        if key not in scaling:
            raise ValueError(f"rope_inv_freq: scaling type {kind!r} needs {key!r}")
        return scaling[key]

    if kind == "linear":
        return inv / need("factor"), 1.0
    if kind in ("ntk", "dynamic"):
        if r <= 2:
            raise ValueError(f"rope_inv_freq: {kind} scaling needs rotary_dim > 2")
        factor = need("factor")
        if kind == "dynamic":
            L0 = need("original_max_position_embeddings")
            L = seq_len if seq_len is not None and seq_len > L0 else L0
            factor = factor * L / L0 - (factor - 1)
        return (float(base) * factor ** (r / (r - 2))) ** -exponent, 1.0
    if kind == "yarn":
        factor, L0 = need("factor"), need("original_max_position_embeddings")

        def get_mscale(scale, m=1):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        af = scaling.get("attention_factor")
        if af is None:
            ms, ms_all = scaling.get("mscale"), scaling.get("mscale_all_dim")
            af = get_mscale(factor, ms) / get_mscale(factor, ms_all) if ms and ms_all else get_mscale(factor)

        def corr(n_rot):
            return r * math.log(L0 / (2 * math.pi * n_rot)) / (2 * math.log(base))

        low, high = corr(scaling.get("beta_fast") or 32), corr(scaling.get("beta_slow") or 1)
        if scaling.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, r - 1)
        if low == high:
            high += 0.001
        gamma = np.clip((np.arange(r // 2) - low) / (high - low), 0.0, 1.0)
        return gamma * inv / factor + (1 - gamma) * inv, float(af)
    if kind == "llama3":
        factor, L0 = need("factor"), need("original_max_position_embeddings")
        lf, hf = need("low_freq_factor"), need("high_freq_factor")
        wavelen = 2 * math.pi / inv
        s = (L0 / wavelen - lf) / (hf - lf)
        smoothed = (1 - s) * inv / factor + s * inv
        return np.where(wavelen > L0 / lf, inv / factor, np.where(wavelen < L0 / hf, inv, smoothed)), 1.0
    if kind == "longrope":
        L0 = need("original_max_position_embeddings")
        if "factor" in scaling:
            factor = scaling["factor"]
        elif "max_position_embeddings" in scaling:
            factor = scaling["max_position_embeddings"] / L0
        else:
            raise ValueError("rope_inv_freq: scaling type 'longrope' needs 'factor' or "
                             "'max_position_embeddings'")
        key = "long_factor" if seq_len is not None and seq_len > L0 else "short_factor"
        ext = np.asarray(need(key), dtype=np.float64)
        if ext.shape != inv.shape:
            raise ValueError(f"rope_inv_freq: {key!r} must have rotary_dim/2 = {r // 2} entries")
        af = scaling.get("attention_factor")
        if af is None:
            af = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(L0))
        return inv / ext, float(af)
    raise ValueError(f"rope_inv_freq: unknown scaling type {kind!r}")


def rope(x, positions, inv_freq, attention_factor=1.0, layout="neox", rotary_dim=None):
    """Rotate pair c of x [B, H, L, D] by θ = p·inv_freq_c, times attention_factor (contract §6).
    positions [L] or [B, L]; pairs (x[c], x[c+r/2]) for 'neox', (x[2c], x[2c+1]) for 'gptj';
    channels ≥ rotary_dim pass through unchanged."""
    x = np.asarray(x, dtype=np.float64)
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    if r <= 0 or r % 2 or r > x.shape[-1]:
        raise ValueError(f"rope: rotary_dim must be even, > 0 and <= D, got {r}")
    inv = np.asarray(inv_freq, dtype=np.float64)
    if inv.shape != (r // 2,):
        raise ValueError(f"rope: inv_freq must have rotary_dim/2 = {r // 2} entries")
    if layout == "neox":
        ia, ib = np.arange(r // 2), np.arange(r // 2, r)
    elif layout == "gptj":
        ia, ib = np.arange(0, r, 2), np.arange(1, r, 2)
    else:
        raise ValueError(f"rope: unknown layout {layout!r}")
    p = np.asarray(positions, dtype=np.float64)
    theta = (p[:, None] if p.ndim == 2 else p)[..., None] * inv  # [L, r/2] or [B, 1, L, r/2]
    a, b = x[..., ia], x[..., ib]
    out = x.copy()
    out[..., ia] = attention_factor * (a * np.cos(theta) - b * np.sin(theta))
    out[..., ib] = attention_factor * (b * np.cos(theta) + a * np.sin(theta))
    return out


def alibi_slopes(n):
    """ALiBi head slopes (contract §7): (2^(−8/n))^(h+1) for a power of two n, else
    slopes(c) ++ slopes(2c)[0::2][:n−c] with c = 2^⌊log2 n⌋ (not sorted)."""
    if n < 1:
        raise ValueError(f"alibi_slopes: need n >= 1, got {n}")

    def power_of_two(k):
        return 2.0 ** (-8.0 * np.arange(1, k + 1) / k)

    c = 1 << (operator.index(n).bit_length() - 1)
    if c == n:
        return power_of_two(n)
    return np.concatenate([power_of_two(c), power_of_two(2 * c)[0::2][:n - c]])


def alibi_bias(slopes, Lq, Lk, form="relative"):
    """[H, Lq, Lk] bias for query row r at absolute position i = r + Lk − Lq and key j (contract §7):
    'relative' −m(i−j), 'key_position' +m·j, 'symmetric' −m|i−j|."""
    m = np.asarray(slopes, dtype=np.float64)[:, None, None]
    i = np.arange(Lq)[:, None] + (Lk - Lq)
    j = np.arange(Lk)[None, :]
    if form == "relative":
        offset = j - i
    elif form == "key_position":
        offset = np.broadcast_to(j, (Lq, Lk))
    elif form == "symmetric":
        offset = -np.abs(i - j)
    else:
        raise ValueError(f"alibi_bias: unknown form {form!r}")
    return m * offset


def t5_bucket(rel, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's relative bucket of rel = key − query (contract §9), float32 like torch's
    `_relative_position_bucket` (truncating)."""
    rel = np.asarray(rel, dtype=np.int64)
    bucket = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        bucket += (rel > 0) * num_buckets
        n = np.abs(rel)
    else:
        n = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    with np.errstate(divide="ignore", invalid="ignore"):  # n = 0 takes the small branch
        large = max_exact + (np.log(n.astype(np.float32) / np.float32(max_exact))
                             / np.float32(math.log(max_distance / max_exact))
                             * np.float32(num_buckets - max_exact)).astype(np.int64)
    return bucket + np.where(n < max_exact, n, np.minimum(large, num_buckets - 1))


def t5_bias(table, Lq, Lk, bidirectional=True, max_distance=128):
    """[H, Lq, Lk] bias table[bucket(key − query), h], query row r at absolute position r + Lk − Lq."""
    table = np.asarray(table, dtype=np.float64)
    rel = np.arange(Lk)[None, :] - (np.arange(Lq)[:, None] + (Lk - Lq))
    return np.moveaxis(table[t5_bucket(rel, bidirectional, table.shape[0], max_distance)], -1, 0)
