"""The float64 references against the contract's worked numbers (docs/contract.md) and properties (§3–§7). Pure NumPy."""
import importlib.util
import math
import pathlib

import numpy as np
import pytest

# Loaded from the source tree by path: the build copies reference.py into build/python only when it
# runs, and this file needs no compiled module.
_SOURCE = pathlib.Path(__file__).resolve().parents[1] / "bindings" / "python" / "posattn" / "reference.py"
_spec = importlib.util.spec_from_file_location("posattn_reference_source", _SOURCE)
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---- §3 folk encodings ----

def test_integer_repeats_the_position(rng):
    p = rng.integers(-1000, 1000, size=(3, 7))
    pe = reference.integer(p, 5)
    assert pe.shape == (3, 7, 5) and pe.dtype == np.float64
    np.testing.assert_array_equal(pe, np.repeat(p[..., None], 5, axis=-1))


def test_normalized_modes_and_lengths(rng):
    S = int(rng.integers(2, 40))
    p = rng.permutation(S)
    np.testing.assert_allclose(reference.normalized(p, 3)[..., 0], p / (S - 1))
    np.testing.assert_allclose(reference.normalized(p, 3, mode="length")[..., 0], p / S)
    np.testing.assert_array_equal(reference.normalized([0], 4), np.zeros((1, 4)))  # L = 1 gives 0
    lengths = rng.integers(S, 3 * S, size=2)
    batch = np.stack([p, p])
    got = reference.normalized(batch, 2, length=lengths)[..., 0]
    np.testing.assert_allclose(got, batch / (lengths[:, None] - 1))
    # Per-sequence default L = max(p)+1: the same position gets different codes (by construction).
    short = np.stack([np.arange(S), np.minimum(np.arange(S), 1)])
    np.testing.assert_allclose(reference.normalized(short, 1)[:, 1, 0], [1 / (S - 1), 1.0])
    with pytest.raises(ValueError):
        reference.normalized(p, 3, length=0)
    with pytest.raises(ValueError):
        reference.normalized(p, 3, mode="half")


def test_binary_bits_sign_and_order(rng):
    d = int(rng.integers(1, 20))
    p = rng.integers(0, 2**d, size=30)
    bits = (p[:, None] >> np.arange(d)) & 1
    np.testing.assert_array_equal(reference.binary(p, d), bits)
    np.testing.assert_array_equal(reference.binary(p, d, signed=True), 2 * bits - 1)
    np.testing.assert_array_equal(reference.binary(p, d, msb_first=True), bits[:, ::-1])


def test_binary_wide_d_uses_exact_integers(rng):
    p = [int(v) for v in rng.integers(0, 2**63 - 1, size=5, dtype=np.int64)] + [2**63 - 1, 2**69 + 5]
    pe = reference.binary(p, 70)
    assert [sum(int(b) << i for i, b in enumerate(row)) for row in pe] == p


@pytest.mark.parametrize("bad", [-1, "2^d"])
def test_binary_rejects_out_of_range(bad):
    for d in (5, 64, 70):
        with pytest.raises(ValueError):
            reference.binary([0, 2**d if bad == "2^d" else bad], d)


def test_sin_only(rng):
    d = int(rng.integers(2, 64))
    np.testing.assert_array_equal(reference.sin_only(0, d), np.zeros(d))
    p = rng.uniform(-100, 100)
    np.testing.assert_allclose(reference.sin_only(p, d), np.sin(p * 10000.0 ** (-np.arange(d) / d)))
    # No cosine partner: dot products are not offset-only.
    k = 3
    dots = [reference.sin_only(q, d) @ reference.sin_only(q + k, d) for q in (0, 1)]
    assert dots[0] == 0 and abs(dots[1]) > 1e-3


# ---- §4 complex order ----

def complex_tables(rng, V, d):
    return rng.normal(size=(V, d)), rng.uniform(0, 1, size=(V, d)), rng.uniform(-np.pi, np.pi, size=(V, d))


def test_complex_order_modulus_and_shift(rng):
    V, d = 11, 6
    amplitude, frequency, phase = complex_tables(rng, V, d)
    ids = rng.integers(0, V, size=(2, 9))
    pos = rng.integers(1, 50, size=(2, 9))
    k = int(rng.integers(1, 20))
    re, im = reference.complex_order(ids, pos, amplitude, frequency, phase)
    np.testing.assert_allclose(np.hypot(re, im), np.abs(amplitude[ids]), rtol=1e-13)
    re_k, im_k = reference.complex_order(ids, pos + k, amplitude, frequency, phase)
    np.testing.assert_allclose(re_k + 1j * im_k, (re + 1j * im) * np.exp(1j * frequency[ids] * k), atol=1e-12)
    # phase=None is the public code's θ = 0.
    np.testing.assert_array_equal(reference.complex_order(ids, pos, amplitude, frequency),
                                  reference.complex_order(ids, pos, amplitude, frequency, np.zeros((V, d))))


def test_complex_order_rejects_unknown_tokens(rng):
    tables = complex_tables(rng, 4, 3)
    for bad in (-1, 4):
        with pytest.raises(IndexError):
            reference.complex_order([0, bad], [1, 2], *tables)


def test_complex_order_frequency_init():
    V, d = 7, 10
    pairs = 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    translation = reference.complex_order_frequency_init(V, d)
    np.testing.assert_allclose(translation, np.tile(np.repeat(pairs, 2), (V, 1)), rtol=1e-15)
    classification = reference.complex_order_frequency_init(V, d, kind="classification")
    np.testing.assert_allclose(classification, np.arange(V)[:, None] * 10000.0 ** (-2.0 * np.arange(d) / d))


# ---- §5 FLOATER ----

METHODS = ["rk4_38", "rk4", "midpoint", "euler"]


@pytest.mark.parametrize("method", METHODS)
def test_floater_constant_field(rng, method):
    d, hidden, N = 6, 9, 13
    dt, substeps = rng.uniform(0.005, 0.5), int(rng.integers(1, 7))
    p0, b2 = rng.normal(size=(3, d)), rng.normal(size=d)
    W1, b1 = rng.normal(size=(hidden, d + 1)), rng.normal(size=hidden)  # W2 = 0 leaves h = b2
    got = reference.floater(N, p0, W1, b1, np.zeros((d, hidden + 1)), b2, dt, substeps, method)
    t = np.arange(N)[:, None] * dt
    np.testing.assert_allclose(got, p0[:, None, :] + b2 * t, atol=1e-12)
    assert np.array_equal(got[:, 0], p0)


@pytest.mark.parametrize("method", METHODS)
def test_floater_time_input_is_absolute(rng, method):
    # W1 = 0: h = c + w·t with c = W2_hidden·ReLU(b1) + b2 and w the time column of W2, so
    # p(t) = p0 + c·t + w·t²/2. rk4_38, rk4 and midpoint are exact for a field linear in t; Euler's
    # left sums give p0 + c·t + w·(t² − t·h)/2 with h = dt/substeps.
    d, hidden, N = 5, 4, 9
    dt, substeps = rng.uniform(0.01, 0.3), int(rng.integers(1, 6))
    p0, b1, b2 = rng.normal(size=d), rng.normal(size=hidden), rng.normal(size=d)
    W2 = rng.normal(size=(d, hidden + 1))
    got = reference.floater(N, p0, np.zeros((hidden, d + 1)), b1, W2, b2, dt, substeps, method)
    c, w = W2[:, :hidden] @ np.maximum(b1, 0) + b2, W2[:, hidden]
    t = np.arange(N)[:, None] * dt
    quadratic = t**2 - (t * dt / substeps if method == "euler" else 0)
    np.testing.assert_allclose(got, p0 + c * t + w * quadratic / 2, atol=1e-12)


# Butcher tableaus (c, a, b); rk4_38 is torchdiffeq's _RK38_TABLEAU / rk4_alt_step_func.
TABLEAUS = {
    "rk4_38": ([0, 1 / 3, 2 / 3, 1], [[], [1 / 3], [-1 / 3, 1], [1, -1, 1]], [1 / 8, 3 / 8, 3 / 8, 1 / 8]),
    "rk4": ([0, 1 / 2, 1 / 2, 1], [[], [1 / 2], [0, 1 / 2], [0, 0, 1]], [1 / 6, 1 / 3, 1 / 3, 1 / 6]),
    "midpoint": ([0, 1 / 2], [[], [1 / 2]], [0, 1]),
    "euler": ([0], [[]], [1]),
}


def xavier_floater_weights(rng, d, hidden):
    lim = math.sqrt(6 / (d + 1 + hidden))
    return (rng.uniform(-lim, lim, size=(hidden, d + 1)), rng.uniform(-0.1, 0.1, size=hidden),
            rng.uniform(-lim, lim, size=(d, hidden + 1)), rng.uniform(-0.1, 0.1, size=d))


@pytest.mark.parametrize("method", METHODS)
def test_floater_follows_the_tableau(rng, method):
    d, hidden, N, substeps, dt = 4, 7, 4, 3, rng.uniform(0.05, 0.5)
    W1, b1, W2, b2 = xavier_floater_weights(rng, d, hidden)
    p0 = rng.uniform(-1, 1, size=d)

    def f(t, p):
        return W2 @ np.append(np.maximum(W1 @ np.append(p, t) + b1, 0), t) + b2

    c, a, b = TABLEAUS[method]
    h, y, rows = dt / substeps, p0, [p0]
    for step in range((N - 1) * substeps):
        k = []
        for ci, ai in zip(c, a):
            k.append(f(step * h + ci * h, y + h * sum(aij * kj for aij, kj in zip(ai, k))))
        y = y + h * sum(bi * ki for bi, ki in zip(b, k))
        if (step + 1) % substeps == 0:
            rows.append(y)
    got = reference.floater(N, p0, W1, b1, W2, b2, dt, substeps, method)
    np.testing.assert_allclose(got, rows, atol=1e-14, rtol=1e-13)


def test_floater_default_agrees_with_fine_classic_rk4(rng):
    # contract §5: with ReLU kinks, rk4_38 at dt/5 matches a 50-step classic RK4 to about 1e-7.
    d, N = 16, 64
    weights = xavier_floater_weights(rng, d, d)
    p0 = rng.uniform(-1, 1, size=(3, d))
    np.testing.assert_allclose(reference.floater(N, p0, *weights),
                               reference.floater(N, p0, *weights, substeps=50, method="rk4"), atol=5e-7)


# Global error on the rotation with T = N−1 = 11, h = dt/substeps = 0.01 and ω ≤ 1, from the
# methods' stability functions: rk4/rk4_38 phase error (ωh)^5/120 per step → T·h^4/120 ≈ 9e-10;
# midpoint phase error (ωh)^3/6 per step → T·h²/6 ≈ 1.8e-4; Euler's amplitude grows by
# √(1+(ωh)²) per step → e^{T·h/2} − 1 ≈ 0.057. Each tolerance is about twice that.
ROTATION_TOL = {"rk4_38": 2e-9, "rk4": 2e-9, "midpoint": 4e-4, "euler": 0.12}


@pytest.mark.parametrize("method", METHODS)
def test_floater_rotation_field_is_the_sinusoid(method):
    # Hidden width 2d, W1 = [I; −I], W2 = [A, −A]: ReLU(p) − ReLU(−p) = p, so h = A·p with A's
    # pair blocks [[0, ω], [−ω, 0]]; p0 = [0, 1] per pair gives (sin ωt, cos ωt), and dt = 1.
    d, N = 16, 12
    omega = reference.sinusoidal_frequencies(d)
    A = np.zeros((d, d))
    even = np.arange(0, d, 2)
    A[even, even + 1], A[even + 1, even] = omega, -omega
    eye = np.eye(d)
    W1 = np.hstack([np.vstack([eye, -eye]), np.zeros((2 * d, 1))])
    W2 = np.hstack([A, -A, np.zeros((d, 1))])
    p0 = np.tile([0.0, 1.0], d // 2)
    got = reference.floater(N, p0, W1, np.zeros(2 * d), W2, np.zeros(d), dt=1.0, substeps=100, method=method)
    np.testing.assert_allclose(got, reference.sinusoidal(np.arange(N), d), atol=ROTATION_TOL[method], rtol=0)


# ---- §6 RoPE ----

def test_yarn_worked_numbers():
    r = 128
    plain, _ = reference.rope_inv_freq(r)
    inv, af = reference.rope_inv_freq(r, 1e4, {"type": "yarn", "factor": 8, "original_max_position_embeddings": 4096})
    assert round(af, 4) == 1.2079
    np.testing.assert_array_equal(inv[:21], plain[:21])     # c ≤ low = 20 kept
    np.testing.assert_array_equal(inv[46:], plain[46:] / 8)  # c ≥ high = 46 interpolated
    gamma = (np.arange(21, 46) - 20) / 26
    np.testing.assert_allclose(inv[21:46], plain[21:46] * (1 - gamma + gamma / 8), rtol=1e-15)


def test_yarn_options():
    base = {"type": "yarn", "factor": 8, "original_max_position_embeddings": 4096}
    assert reference.rope_inv_freq(128, scaling={**base, "mscale": 0.7, "mscale_all_dim": 0.7})[1] == 1.0
    assert reference.rope_inv_freq(128, scaling={**base, "attention_factor": 0.5})[1] == 0.5
    plain, _ = reference.rope_inv_freq(128)
    # Untruncated bounds are 20.94 and 45.03: pair 20 is still kept, pair 45 is nearly /8.
    inv, _ = reference.rope_inv_freq(128, scaling={**base, "truncate": False})
    assert inv[20] == plain[20] and inv[21] < plain[21] and inv[45] < plain[45] / 7.9


def test_llama3_worked_numbers():
    plain, _ = reference.rope_inv_freq(128, 5e5)
    scaling = {"type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
               "original_max_position_embeddings": 8192}
    inv, af = reference.rope_inv_freq(128, 5e5, scaling)
    kept, divided = inv == plain, inv == plain / 8
    smoothed = (inv < plain) & (inv > plain / 8)
    assert (kept.sum(), smoothed.sum(), divided.sum(), af) == (29, 6, 29, 1.0)


def test_simple_scalings(rng):
    r, base, factor = 2 * int(rng.integers(2, 64)), rng.uniform(1e3, 1e6), rng.uniform(1.5, 16)
    plain, _ = reference.rope_inv_freq(r, base)
    c = np.arange(r // 2)
    linear, _ = reference.rope_inv_freq(r, base, {"type": "linear", "factor": factor})
    np.testing.assert_allclose(linear, plain / factor)
    ntk, _ = reference.rope_inv_freq(r, base, {"type": "ntk", "factor": factor})
    np.testing.assert_allclose(ntk, (base * factor ** (r / (r - 2))) ** (-2 * c / r))
    dynamic = {"type": "dynamic", "factor": factor, "original_max_position_embeddings": 2048}
    for seq_len in (None, 100, 2048):  # at or below L0: the default frequencies
        np.testing.assert_allclose(reference.rope_inv_freq(r, base, dynamic, seq_len)[0], plain, rtol=1e-14)
    stretched = factor * 6000 / 2048 - (factor - 1)
    np.testing.assert_allclose(reference.rope_inv_freq(r, base, dynamic, 6000)[0],
                               reference.rope_inv_freq(r, base, {"type": "ntk", "factor": stretched})[0])


def test_longrope(rng):
    r, L0 = 16, 4096
    short, long = rng.uniform(1, 2, size=r // 2), rng.uniform(2, 40, size=r // 2)
    scaling = {"type": "longrope", "short_factor": list(short), "long_factor": list(long),
               "original_max_position_embeddings": L0, "max_position_embeddings": 4 * L0}
    plain, _ = reference.rope_inv_freq(r)
    inv, af = reference.rope_inv_freq(r, scaling=scaling, seq_len=L0)
    np.testing.assert_allclose(inv, plain / short)
    assert af == pytest.approx(math.sqrt(1 + math.log(4) / math.log(L0)), rel=1e-15)
    np.testing.assert_allclose(reference.rope_inv_freq(r, scaling=scaling, seq_len=L0 + 1)[0], plain / long)
    assert reference.rope_inv_freq(r, scaling={**scaling, "factor": 1.0})[1] == 1.0


@pytest.mark.parametrize("rotary_dim, scaling", [
    (0, None), (7, None),
    (8, {"type": "ntk_by_parts", "factor": 2}), (8, {"factor": 2}),
    (8, {"type": "linear"}), (8, {"type": "dynamic", "factor": 2}),
    (8, {"type": "yarn", "factor": 2}),
    (8, {"type": "llama3", "factor": 8, "low_freq_factor": 1, "original_max_position_embeddings": 8192}),
    (8, {"type": "longrope", "short_factor": [1] * 4, "long_factor": [1] * 4,
         "original_max_position_embeddings": 64}),
    (8, {"type": "longrope", "short_factor": [1] * 3, "long_factor": [1] * 4, "factor": 2,
         "original_max_position_embeddings": 64}),
])
def test_rope_inv_freq_rejects(rotary_dim, scaling):
    with pytest.raises(ValueError):
        reference.rope_inv_freq(rotary_dim, scaling=scaling)


@pytest.mark.parametrize("layout", ["neox", "gptj"])
def test_rope_norm_identity_and_relative_dot(rng, layout):
    D = 2 * int(rng.integers(2, 33))
    inv, _ = reference.rope_inv_freq(D, 1e4, {"type": "yarn", "factor": 4, "original_max_position_embeddings": 256})
    x = rng.normal(size=(2, 3, 5, D))
    pos = rng.integers(0, 10**4, size=5)
    out = reference.rope(x, pos, inv, layout=layout)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-13)
    np.testing.assert_array_equal(reference.rope(x, np.zeros(5), inv, layout=layout), x)
    q, k = rng.normal(size=(2, 1, 1, 1, D))
    m, n, s = rng.integers(-10**4, 10**4, size=3)

    def dot(a, b):
        return (reference.rope(q, [a], inv, layout=layout) * reference.rope(k, [b], inv, layout=layout)).sum()

    assert dot(m, n) == pytest.approx(dot(m + s, n + s), abs=1e-9)


def test_rope_layouts_differ_by_a_fixed_permutation(rng):
    r, D = 12, 15
    inv = rng.uniform(0, 1, size=r // 2)
    x = rng.normal(size=(1, 2, 6, D))
    pos = rng.integers(0, 500, size=(1, 6))
    # neox pair c = (c, c + r/2) holds the gptj pair (2c, 2c+1).
    perm = np.concatenate([np.arange(0, r, 2), np.arange(1, r, 2), np.arange(r, D)])
    np.testing.assert_allclose(reference.rope(x[..., perm], pos, inv, layout="neox", rotary_dim=r),
                               reference.rope(x, pos, inv, layout="gptj", rotary_dim=r)[..., perm], atol=1e-14)


def test_rope_partial_rotary_and_attention_factor(rng):
    B, L, D, r = 2, 4, 10, 6
    inv, af = rng.uniform(0, 1, size=r // 2), rng.uniform(0.5, 2)
    x = rng.normal(size=(B, 3, L, D))
    pos = rng.integers(0, 100, size=(B, L))
    out = reference.rope(x, pos, inv, af, rotary_dim=r)
    np.testing.assert_array_equal(out[..., r:], x[..., r:])
    np.testing.assert_allclose(np.linalg.norm(out[..., :r], axis=-1), af * np.linalg.norm(x[..., :r], axis=-1))
    for b in range(B):  # positions [B, L] act per sequence
        np.testing.assert_array_equal(out[b], reference.rope(x[b:b + 1], pos[b], inv, af, rotary_dim=r)[0])


# ---- §7 ALiBi ----

def test_alibi_slopes_worked_numbers():
    np.testing.assert_array_equal(reference.alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    twelve = reference.alibi_slopes(12)
    np.testing.assert_array_equal(twelve[:8], 2.0 ** -np.arange(1, 9))
    np.testing.assert_array_equal(np.round(twelve[8:], 4), [0.7071, 0.3536, 0.1768, 0.0884])
    np.testing.assert_array_equal(reference.alibi_slopes(3), [1 / 16, 1 / 256, 1 / 4])


def test_alibi_forms(rng):
    H = int(rng.integers(1, 17))
    Lk = int(rng.integers(2, 40))
    Lq = int(rng.integers(1, Lk + 1))
    slopes = reference.alibi_slopes(H)
    relative, key_position, symmetric = (reference.alibi_bias(slopes, Lq, Lk, form)
                                         for form in ("relative", "key_position", "symmetric"))
    assert relative.shape == (H, Lq, Lk)
    i = np.arange(Lq)[:, None] + Lk - Lq
    j = np.arange(Lk)[None, :]
    np.testing.assert_allclose(key_position, slopes[:, None, None] * np.broadcast_to(j, (Lq, Lk)))
    # key_position − relative = m·i: one constant per row, so the softmax is identical, masked or not.
    np.testing.assert_allclose(key_position - relative, np.broadcast_to(slopes[:, None, None] * i, relative.shape))
    logits = rng.normal(size=(H, Lq, Lk))
    np.testing.assert_allclose(softmax(logits + key_position), softmax(logits + relative), rtol=1e-12)
    causal = np.where(j <= i, 0.0, -np.inf)
    np.testing.assert_allclose(softmax(logits + key_position + causal), softmax(logits + relative + causal),
                               rtol=1e-12)
    # symmetric equals relative where the causal mask lets a query see the key, and not beyond.
    visible = np.broadcast_to(j <= i, relative.shape)
    np.testing.assert_array_equal(symmetric[visible], relative[visible])
    assert np.all(symmetric[~visible] < relative[~visible])
