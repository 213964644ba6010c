"""The contract's properties (docs/contract.md), checked on the kernels' own outputs."""
import platform

import numpy as np
import pytest

import posattn
from posattn import reference


@pytest.mark.parametrize("convention", ["vaswani", "t2t"])
def test_sinusoid_dot_product_depends_only_on_offset(rng, convention):
    d, offsets = 64, [0, 1, 7, 100, 2500]
    omega = reference.sinusoidal_frequencies(d, convention=convention)
    starts = rng.integers(-10**5, 10**5, size=50).astype(np.int32)
    for k in offsets:
        a = posattn.sinusoidal(starts, d, convention=convention).astype(np.float64)
        b = posattn.sinusoidal(starts + k, d, convention=convention).astype(np.float64)
        dots = (a * b).sum(axis=1)
        np.testing.assert_allclose(dots, np.cos(k * omega).sum(), atol=2e-5)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_sinusoid_shift_is_a_position_independent_rotation(rng, layout):
    d, k = 32, 37
    omega = reference.sinusoidal_frequencies(d)
    pairs = d // 2
    # M_k acts on each (sin, cos) pair as a rotation by k·ω_i.
    sin_idx = np.arange(0, d, 2) if layout == "interleaved" else np.arange(pairs)
    cos_idx = sin_idx + 1 if layout == "interleaved" else np.arange(pairs, d)
    M = np.zeros((d, d))
    c, s = np.cos(k * omega), np.sin(k * omega)
    M[sin_idx, sin_idx], M[sin_idx, cos_idx] = c, s      # sin(a+b) = sin a cos b + cos a sin b
    M[cos_idx, cos_idx], M[cos_idx, sin_idx] = c, -s     # cos(a+b) = cos a cos b − sin a sin b
    p = rng.integers(-10**4, 10**4, size=40).astype(np.int32)
    pe_p = posattn.sinusoidal(p, d, layout=layout).astype(np.float64)
    pe_pk = posattn.sinusoidal(p + k, d, layout=layout).astype(np.float64)
    np.testing.assert_allclose(pe_p @ M.T, pe_pk, atol=4e-6)


def test_sinusoid_layouts_differ_by_a_fixed_permutation(rng):
    d = 48
    p = rng.integers(-10**6, 10**6, size=(3, 17)).astype(np.int32)
    interleaved = posattn.sinusoidal(p, d, layout="interleaved")
    half = posattn.sinusoidal(p, d, layout="half")
    perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
    # The same values up to the last bit: the two layouts run different loop nests, where the
    # compiler may fuse the polynomial's multiply-adds differently.
    np.testing.assert_allclose(half, interleaved[..., perm], rtol=0, atol=2.0**-23)


def test_sinusoid_and_rope_are_exact_at_position_zero():
    """sin 0 = 0 and cos 0 = 1 exactly (generators/trig.h sin_cos_of_turns takes out the nearest
    quarter turn, so r = 0 there): position 0 evaluated directly (one row) and from the position
    tables (2000 rows over a narrow range), and RoPE at position 0 is the identity bit for bit."""
    d = 64
    expected = np.tile(np.array([0.0, 1.0], np.float32), d // 2)
    direct = posattn.sinusoidal(np.zeros(1, np.int32), d)
    np.testing.assert_array_equal(direct[0], expected)
    positions = np.arange(2000, dtype=np.int32) % 300
    np.testing.assert_array_equal(posattn.sinusoidal(positions, d)[positions == 0], np.tile(expected, (7, 1)))
    assert posattn.sin_only(np.zeros(1, np.int32), d)[0].tolist() == [0.0] * d
    x = np.random.default_rng(3).standard_normal((1, 2, 1, d)).astype(np.float32)
    np.testing.assert_array_equal(posattn.rope(x, np.zeros((1, 1), np.int32)), x)


def test_sinusoid_odd_width_appends_a_zero_column(rng):
    p = rng.integers(0, 1000, size=20).astype(np.int32)
    odd = posattn.sinusoidal(p, 33)
    np.testing.assert_array_equal(odd[:, 32], 0.0)
    np.testing.assert_array_equal(odd[:, :32], posattn.sinusoidal(p, 32))


@pytest.mark.parametrize("encoding", ["sinusoidal", "sin_only"])
@pytest.mark.parametrize("lowest", [-3000, 2**31 - 6000, -2**31])
def test_trig_tables_of_split_positions_are_used_and_agree_with_direct_evaluation(rng, encoding, lowest):
    """2000 rows over 6000 positions read sin/cos from tables of the positions' high and low bits
    (generators/trig.h PositionSplit); a call of one row evaluates them directly. Both are within the
    kernels' tolerance of float64, and they differ in the last bits somewhere, which shows that the
    tables ran."""
    fn, d = getattr(posattn, encoding), 64
    positions = (lowest + rng.integers(0, 6000, size=2000)).astype(np.int32)
    from_tables = fn(positions, d)
    direct = np.stack([fn(positions[i:i + 1], d)[0] for i in range(0, 2000, 10)])
    expected = getattr(reference, encoding)(positions[::10], d)
    np.testing.assert_allclose(from_tables[::10], expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(direct, expected, rtol=0, atol=1e-6)
    assert (from_tables[::10] != direct).any()


@pytest.mark.parametrize("layout", ["neox", "gptj"])
def test_rope_preserves_norms_and_position_zero_is_identity(rng, layout):
    x = rng.standard_normal((2, 3, 40, 64)).astype(np.float32)
    positions = rng.integers(-10**6, 10**6, size=(2, 40)).astype(np.int32)
    positions[:, 0] = 0
    out = posattn.rope(x, positions, layout=layout)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-6)
    np.testing.assert_array_equal(out[:, :, 0], x[:, :, 0])


@pytest.mark.parametrize("layout", ["neox", "gptj"])
def test_rope_dot_products_depend_only_on_the_offset(rng, layout):
    D, k = 64, 13
    q = np.repeat(rng.standard_normal((1, 1, 1, D)).astype(np.float32), 30, axis=2)
    key = np.repeat(rng.standard_normal((1, 1, 1, D)).astype(np.float32), 30, axis=2)
    m = rng.integers(-10**5, 10**5, size=30).astype(np.int32)
    dots = (posattn.rope(q, m, layout=layout).astype(np.float64)
            * posattn.rope(key, m - k, layout=layout).astype(np.float64)).sum(-1)
    np.testing.assert_allclose(dots, dots.flat[0], atol=1e-4)


def test_rope_layouts_differ_by_a_fixed_channel_permutation(rng):
    D, r = 48, 32
    x = rng.standard_normal((1, 2, 11, D)).astype(np.float32)
    positions = rng.integers(0, 5000, size=11).astype(np.int32)
    perm = np.concatenate([np.arange(0, r, 2), np.arange(1, r, 2), np.arange(r, D)])  # gptj channel → neox
    neox = posattn.rope(x[..., perm], positions, layout="neox", rotary_dim=r)
    gptj = posattn.rope(x, positions, layout="gptj", rotary_dim=r)
    np.testing.assert_allclose(neox, gptj[..., perm], atol=2.0**-22)


def test_rope_yarn_and_llama3_worked_numbers():
    """contract §6: YaRN r=128, base 1e4, L0=4096, factor 8 gives low=20, high=46, af=1.2079; llama3
    base 5e5, r=128, L0=8192, factors 8/1/4 keeps 29 pairs, smooths 6 and divides 29."""
    plain, _ = posattn.rope_frequencies(128)
    inv, af = posattn.rope_frequencies(128, scaling={"type": "yarn", "factor": 8.0,
                                                    "original_max_position_embeddings": 4096})
    assert round(af, 4) == 1.2079
    kept, divided = np.isclose(inv, plain, rtol=1e-15), np.isclose(inv, plain / 8, rtol=1e-15)
    assert kept[:21].all() and not kept[21:].any() and divided[46:].all() and not divided[:46].any()
    plain, _ = posattn.rope_frequencies(128, base=5e5)
    inv, af = posattn.rope_frequencies(128, base=5e5, scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                               "high_freq_factor": 4.0,
                                                               "original_max_position_embeddings": 8192})
    kept, divided = np.isclose(inv, plain, rtol=1e-15), np.isclose(inv, plain / 8, rtol=1e-15)
    assert (kept.sum(), (~kept & ~divided).sum(), divided.sum(), af) == (29, 6, 29, 1.0)


def test_rope_dynamic_scaling_reads_the_current_length(rng):
    scaling = {"type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 32}
    x = rng.standard_normal((1, 1, 8, 16)).astype(np.float32)
    short = posattn.rope(x, np.arange(8, dtype=np.int32), scaling=scaling)  # max position + 1 <= L0: unscaled
    np.testing.assert_array_equal(short, posattn.rope(x, np.arange(8, dtype=np.int32)))
    far = np.arange(100, 108, dtype=np.int32)
    inv, _ = reference.rope_inv_freq(16, scaling=scaling, seq_len=108)
    np.testing.assert_allclose(posattn.rope(x, far, scaling=scaling), reference.rope(x, far, inv), atol=3e-6)
    np.testing.assert_allclose(posattn.rope(x, far, scaling=scaling, seq_len=200),
                               reference.rope(x, far, reference.rope_inv_freq(16, scaling=scaling, seq_len=200)[0]),
                               atol=3e-6)


def test_rope_frequencies_are_each_calls_own():
    """The runtime keeps each thread's last b^(−2c/r): calls alternating r and b (ntk changes b) get their own."""
    ntk = {"type": "ntk", "factor": 2.0}
    for r, base, scaling in [(16, 1e4, None), (16, 5e5, None), (8, 1e4, None), (16, 1e4, ntk), (16, 1e4, None),
                             (64, 5e5, None), (16, 5e5, None)]:
        inv, _ = posattn.rope_frequencies(r, base=base, scaling=scaling)
        np.testing.assert_allclose(inv, reference.rope_inv_freq(r, base=base, scaling=scaling)[0], rtol=1e-15)


def test_trig_encoding_frequencies_are_each_calls_own(rng):
    """The runtime keeps each thread's last per-channel frequencies (sinusoid) and turns (sin-only):
    calls alternating d, base and convention get their own (t2t's d = 2 and 4 share a step)."""
    positions = rng.integers(-5000, 5000, size=(2, 9)).astype(np.int32)
    for d, base, convention in [(2, 1e4, "t2t"), (4, 1e4, "t2t"), (2, 1e4, "t2t"), (64, 1e4, "vaswani"),
                                (64, 500.0, "vaswani"), (64, 1e4, "t2t"), (33, 1e4, "vaswani"), (64, 1e4, "vaswani")]:
        np.testing.assert_allclose(posattn.sinusoidal(positions, d, base=base, convention=convention),
                                   reference.sinusoidal(positions, d, base, convention=convention), atol=1e-6)
        np.testing.assert_allclose(posattn.sin_only(positions, d, base=base), reference.sin_only(positions, d, base),
                                   atol=1e-6)


def test_complex_order_modulus_is_the_amplitude_and_shift_is_a_rotation(rng):
    """contract §4: |f(w, p)| = |r_w| for every p, and f(w, p+k) = f(w, p)·e^{iω_w k}."""
    V, d, k = 20, 16, 9
    amplitude = rng.standard_normal((V, d)).astype(np.float32)
    frequency = posattn.complex_order_frequency_init(V, d, "classification")
    ids = rng.integers(0, V, size=30).astype(np.int32)
    p = rng.integers(1, 10**4, size=30).astype(np.int32)
    real, imag = posattn.complex_order(ids, p, amplitude, frequency)
    f = real.astype(np.float64) + 1j * imag
    np.testing.assert_allclose(np.abs(f), np.abs(amplitude[ids]), rtol=1e-6, atol=1e-7)
    real_k, imag_k = posattn.complex_order(ids, p + k, amplitude, frequency)
    np.testing.assert_allclose(real_k + 1j * imag_k, f * np.exp(1j * frequency[ids].astype(np.float64) * k), atol=5e-6)


@pytest.mark.parametrize("method", ["rk4_38", "rk4", "midpoint", "euler"])
def test_floater_constant_field_gives_a_straight_line(rng, method):
    """contract §5: with W1 = W2 = 0 the field is b2, so p_n = p0 + b2·n·dt."""
    d, hidden, N = 12, 7, 30
    p0, b2 = rng.standard_normal(d).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    out = posattn.floater(N, p0, np.zeros((hidden, d + 1), np.float32), rng.standard_normal(hidden).astype(np.float32),
                          np.zeros((d, hidden + 1), np.float32), b2, dt=0.05, method=method)
    expected = p0 + b2 * (0.05 * np.arange(N))[:, None]
    # Each of the N·5 float32 steps rounds by at most an ulp of |p| (2^-23·max|p|), in the worst
    # case all in one direction.
    np.testing.assert_allclose(out, expected, atol=N * 5 * 2.0**-23 * np.abs(expected).max())


def test_floater_rotation_field_reproduces_the_interleaved_sinusoid():
    """contract §5: h = A·p with A_pair = [[0, ω], [−ω, 0]], p0 = [0, 1] per pair and dt = 1 gives
    p_n = (sin nω, cos nω): sinusoidal PE. A linear field through ReLU: W1 = [I; −I], W2 = [A, −A]."""
    d, N = 16, 12
    omega = reference.sinusoidal_frequencies(d)
    A = np.zeros((d, d))
    A[0::2, 1::2] = np.diag(omega)
    A[1::2, 0::2] = -np.diag(omega)
    W1 = np.zeros((2 * d, d + 1), np.float32)
    W1[:d, :d], W1[d:, :d] = np.eye(d), -np.eye(d)
    W2 = np.zeros((d, 2 * d + 1), np.float32)
    W2[:, :d], W2[:, d:2 * d] = A, -A
    p0 = np.tile([0.0, 1.0], d // 2).astype(np.float32)
    out = posattn.floater(N, p0, W1, np.zeros(2 * d, np.float32), W2, np.zeros(d, np.float32), dt=1.0, substeps=50)
    np.testing.assert_allclose(out, reference.sinusoidal(np.arange(N), d), atol=2e-5)


def test_alibi_slopes_worked_numbers():
    """contract §7: 8 heads 1/2 … 1/256; 12 heads append 0.7071 … 0.0884 (unsorted); 3 heads 1/16, 1/256, 1/4."""
    np.testing.assert_array_equal(posattn.alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    np.testing.assert_allclose(posattn.alibi_slopes(12)[8:], [0.7071, 0.3536, 0.1768, 0.0884], atol=5e-5)
    np.testing.assert_array_equal(posattn.alibi_slopes(12)[:8], 2.0 ** -np.arange(1, 9))
    np.testing.assert_array_equal(posattn.alibi_slopes(3), [1 / 16, 1 / 256, 1 / 4])


def test_alibi_key_position_form_gives_the_relative_softmax(rng):
    """'key_position' differs from 'relative' by a per-row constant m·i: the same softmax."""
    slopes, Lq, Lk = posattn.alibi_slopes(6), 9, 31
    logits = rng.standard_normal((6, Lq, Lk))
    def softmax(bias):
        z = logits + bias
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    relative = posattn.alibi_bias(slopes, Lq, Lk).astype(np.float64)
    key_position = posattn.alibi_bias(slopes, Lq, Lk, form="key_position").astype(np.float64)
    row_shift = key_position - relative
    np.testing.assert_allclose(row_shift, row_shift[..., :1].repeat(Lk, -1), rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(softmax(relative), softmax(key_position), atol=1e-5)


def test_alibi_symmetric_equals_relative_on_the_causal_part():
    slopes, Lq, Lk = posattn.alibi_slopes(4), 7, 12
    visible = np.arange(Lk)[None, :] <= np.arange(Lq)[:, None] + (Lk - Lq)
    relative = posattn.alibi_bias(slopes, Lq, Lk)
    symmetric = posattn.alibi_bias(slopes, Lq, Lk, form="symmetric")
    np.testing.assert_array_equal(relative[:, visible], symmetric[:, visible])
    assert (symmetric[:, ~visible] < relative[:, ~visible]).all()


def test_alibi_attention_with_zero_slopes_is_plain_attention(rng):
    q, k, v = _qkv(rng, 1, 4, 2, 20, 45, 32)
    zero = posattn.attention(q, k, v, causal=True, alibi_slopes=np.zeros(4))
    np.testing.assert_allclose(zero, posattn.attention(q, k, v, causal=True), atol=1e-6)


def test_alibi_attention_key_position_form_equals_relative(rng):
    """The two forms differ by a per-row constant, which the softmax removes (contract §7)."""
    q, k, v = _qkv(rng, 2, 4, 4, 15, 40, 16)
    slopes = posattn.alibi_slopes(4)
    relative = posattn.attention(q, k, v, causal=True, alibi_slopes=slopes)
    key_position = posattn.attention(q, k, v, causal=True, alibi_slopes=slopes, alibi_form="key_position")
    np.testing.assert_allclose(relative, key_position, atol=2e-5)


def test_t5_buckets_worked_values():
    """contract §9: 32 buckets, max distance 128; exact-integer boundaries at n = 16, 32, 64, 128."""
    rel = [-200, -128, -100, -64, -32, -16, -12, -8, -7, -1, 1, 7, 8, 12, 16, 32, 64, 128]
    assert list(posattn.t5_bucket(rel)) == [15, 15, 15, 14, 12, 10, 9, 8, 7, 1, 17, 23, 24, 25, 26, 28, 30, 31]
    rel = [-200, -100, -64, -32, -16, -12, -8, -1]
    assert list(posattn.t5_bucket(rel, bidirectional=False)) == [31, 30, 26, 21, 16, 12, 8, 1]
    assert (posattn.t5_bucket(np.arange(0, 500), bidirectional=False) == 0).all()  # the future: bucket 0
    everything = np.arange(-5000, 5000)
    for bidirectional in (True, False):
        for buckets, distance in ((32, 128), (64, 256), (8, 20)):
            np.testing.assert_array_equal(posattn.t5_bucket(everything, bidirectional, buckets, distance),
                                          reference.t5_bucket(everything, bidirectional, buckets, distance))


def test_t5_attention_with_a_zero_table_is_plain_attention_at_scale_one(rng):
    q, k, v = _qkv(rng, 1, 4, 2, 20, 45, 32)
    zero = posattn.attention(q, k, v, causal=True, t5_table=np.zeros((32, 4), np.float32))
    np.testing.assert_allclose(zero, posattn.attention(q, k, v, causal=True, scale=1.0), atol=1e-6)


def test_shaw_with_zero_tables_is_plain_attention_and_a_constant_value_row_adds_itself(rng):
    q, k, v = _qkv(rng, 2, 4, 2, 20, 45, 32)
    plain = posattn.attention(q, k, v, causal=True)
    zero = np.zeros((9, 32), np.float32)
    np.testing.assert_allclose(posattn.attention(q, k, v, causal=True, shaw=dict(rel_k=zero, rel_v=zero)), plain, atol=1e-6)
    row = rng.standard_normal(32).astype(np.float32)  # every distance's a^V is `row`: the weights sum to 1
    shifted = posattn.attention(q, k, v, causal=True, shaw=dict(rel_k=zero, rel_v=np.tile(row, (9, 1))))
    np.testing.assert_allclose(shifted, plain + row, atol=2e-5)


def test_shaw_distances_beyond_k_share_the_edge_rows(rng):
    """Only clip(j − p_i, −K, K) matters: with K ≥ L every pair has its own row, and a K beyond
    the longest distance changes nothing once the edge rows are repeated."""
    q, k, v = _qkv(rng, 1, 2, 2, 9, 9, 16)
    rel_k, rel_v = rng.standard_normal((2, 9, 16)).astype(np.float32)
    wide_k = np.concatenate([np.repeat(rel_k[:1], 6, 0), rel_k, np.repeat(rel_k[-1:], 6, 0)])
    wide_v = np.concatenate([np.repeat(rel_v[:1], 6, 0), rel_v, np.repeat(rel_v[-1:], 6, 0)])
    narrow = posattn.attention(q, k, v, shaw=dict(rel_k=rel_k, rel_v=rel_v))
    np.testing.assert_allclose(posattn.attention(q, k, v, shaw=dict(rel_k=wide_k, rel_v=wide_v)), narrow, atol=2e-6)


def test_transformer_xl_explicit_index_equals_the_literal_rel_shift_where_visible(rng):
    q = rng.standard_normal((2, 3, 7, 8))
    r, v_bias = rng.standard_normal((3, 19, 8)), rng.standard_normal((3, 8))
    for Lk in (7, 12, 19):  # memory of 0, 5, 12
        literal = reference.transformer_xl_bd_literal(q, r[:, :Lk], v_bias)
        dist = (np.arange(7)[:, None] + Lk - 7) - np.arange(Lk)[None, :]
        explicit = np.einsum("bhid,hijd->bhij", q + v_bias[None, :, None], r[:, np.clip(dist, 0, None)])
        visible = dist >= 0
        np.testing.assert_allclose(literal[..., visible], explicit[..., visible], atol=1e-12)
        assert not np.allclose(literal[..., ~visible], explicit[..., ~visible])  # the part the mask removes


def test_transformer_xl_reductions(rng):
    """Zero u, v and r give plain causal attention; same_length is a window of mem_len; rows of r
    past clamp_len are never read."""
    q, k, v = _qkv(rng, 2, 4, 2, 20, 45, 32)
    zeros = dict(r=np.zeros((45, 32), np.float32), u=np.zeros((4, 32), np.float32), v_bias=np.zeros((4, 32), np.float32))
    np.testing.assert_allclose(posattn.attention(q, k, v, causal=True, transformer_xl=zeros),
                               posattn.attention(q, k, v, causal=True), atol=1e-6)
    xl = dict(r=rng.standard_normal((4, 45, 32)).astype(np.float32), u=rng.standard_normal((4, 32)).astype(np.float32),
              v_bias=rng.standard_normal((4, 32)).astype(np.float32))
    same = posattn.attention(q, k, v, causal=True, transformer_xl={**xl, "same_length": 30})
    np.testing.assert_array_equal(same, posattn.attention(q, k, v, causal=True, window=30, transformer_xl=xl))
    clamped = posattn.attention(q, k, v, causal=True, transformer_xl={**xl, "clamp_len": 10})
    far = xl["r"].copy()
    far[:, 11:] = rng.standard_normal(far[:, 11:].shape)
    np.testing.assert_array_equal(clamped, posattn.attention(q, k, v, causal=True,
                                                             transformer_xl={**xl, "r": far, "clamp_len": 10}))


def test_deberta_buckets_worked_values():
    """contract §11 with 256 buckets and 512 positions; odd, monotone, the identity up to mid."""
    delta = np.array([140, 200, 300, 511, 600, 1000])
    assert list(posattn.deberta_bucket(delta, 256, 512)) == [137, 169, 207, 255, 270, 317]
    assert list(posattn.deberta_bucket(-delta, 256, 512)) == [-137, -169, -207, -255, -270, -317]
    everything = np.arange(-5000, 5000)
    np.testing.assert_array_equal(posattn.deberta_bucket(everything[4872:5129], 256, 512), everything[4872:5129])
    for buckets, max_rel in ((256, 512), (16, 64), (8, 40), (-1, 512)):
        mine = posattn.deberta_bucket(everything, buckets, max_rel)
        np.testing.assert_array_equal(mine, reference.deberta_bucket(everything, buckets, max_rel))
        assert (np.diff(mine) >= 0).all()


def test_deberta_closed_form_equals_the_literal_gather_and_transpose(rng):
    B, H, L, D, hidden, span = 2, 3, 40, 8, 12, 16
    q, k = rng.standard_normal((2, B, H, L, D))
    emb = rng.standard_normal((2 * span, hidden))
    w_key, w_query = rng.standard_normal((2, H * D, hidden))
    b_key, b_query = rng.standard_normal((2, H * D))
    literal = reference.deberta_scores_literal(q, k, emb, w_key, b_key, w_query, b_query, 8, 64)
    rel = reference.deberta_bucket(np.arange(L)[:, None] - np.arange(L)[None, :], 8, 64)
    idx = np.clip(rel + 8, 0, 15)
    K_r = (emb[:16] @ w_key.T + b_key).reshape(16, H, D).transpose(1, 0, 2)
    Q_r = (emb[:16] @ w_query.T + b_query).reshape(16, H, D).transpose(1, 0, 2)
    closed = np.einsum("bhid,hijd->bhij", q, K_r[:, idx]) + np.einsum("bhjd,hijd->bhij", k, Q_r[:, idx])
    np.testing.assert_allclose(literal, closed, atol=1e-10)
    # The kernel against the literal scores.
    q32, k32, v32 = (x.astype(np.float32) for x in (q, k, rng.standard_normal((B, H, L, D))))
    out = posattn.attention(q32, k32, v32, deberta=dict(
        rel_embeddings=emb.astype(np.float32), w_key=w_key.astype(np.float32), b_key=b_key.astype(np.float32),
        w_query=w_query.astype(np.float32), b_query=b_query.astype(np.float32), position_buckets=8,
        max_relative_positions=64))
    expected = reference.attention(q32, k32, v32, scale=1 / np.sqrt(3 * D), relative_scores=literal)
    np.testing.assert_allclose(out, expected, atol=2e-5, rtol=1e-5)


def test_deberta_with_zero_projections_is_plain_attention_at_its_scale(rng):
    q, k, v = _qkv(rng, 2, 4, 4, 20, 20, 16)
    zero_w, zero_b = np.zeros((64, 10), np.float32), np.zeros(64, np.float32)
    emb = rng.standard_normal((24, 10)).astype(np.float32)
    both = dict(rel_embeddings=emb, w_key=zero_w, b_key=zero_b, w_query=zero_w, b_query=zero_b, max_relative_positions=12)
    np.testing.assert_allclose(posattn.attention(q, k, v, deberta=both),
                               posattn.attention(q, k, v, scale=1 / np.sqrt(3 * 16)), atol=1e-6)
    one = dict(rel_embeddings=emb, w_key=zero_w, max_relative_positions=12)  # c2p only: 1/sqrt(2D)
    np.testing.assert_allclose(posattn.attention(q, k, v, deberta=one),
                               posattn.attention(q, k, v, scale=1 / np.sqrt(2 * 16)), atol=1e-6)


def test_sliding_window(rng):
    """A window of Lk or more masks nothing; a causal window of 1 sees only the query's own key."""
    q, k, v = _qkv(rng, 2, 4, 2, 20, 45, 32)
    np.testing.assert_array_equal(posattn.attention(q, k, v, causal=True, window=45), posattn.attention(q, k, v, causal=True))
    own = posattn.attention(q, k, v, causal=True, window=1)
    np.testing.assert_allclose(own, np.repeat(v, 2, axis=1)[:, :, 25:], atol=1e-6)


@pytest.mark.parametrize("layout", ["neox", "gptj"])
def test_rope_attention_depends_only_on_relative_positions(rng, layout):
    """Shifting every q and k position by the same amount leaves RoPE attention unchanged."""
    q, k, v = _qkv(rng, 1, 4, 2, 12, 30, 32)
    kp = np.arange(30, dtype=np.int32)
    near = posattn.attention(q, k, v, causal=True, rope=dict(layout=layout, q_positions=kp[18:], k_positions=kp))
    far = posattn.attention(q, k, v, causal=True,
                            rope=dict(layout=layout, q_positions=kp[18:] + 5000, k_positions=kp + 5000))
    np.testing.assert_allclose(near, far, atol=2e-5)


def test_empty_outputs_are_fine(rng):
    """Zero-sized calls return empty results (NumPy gives empty arrays zero strides)."""
    assert posattn.rope(np.zeros((1, 2, 0, 8), np.float32)).shape == (1, 2, 0, 8)
    assert posattn.sinusoidal(np.zeros(0, np.int32), 8).shape == (0, 8)
    assert posattn.integer(np.zeros((2, 0), np.int32), 4).shape == (2, 0, 4)
    assert posattn.sin_only(np.zeros((2, 0), np.int32), 4).shape == (2, 0, 4)  # no rows: no position range
    assert posattn.sin_only(np.arange(6, dtype=np.int32).reshape(2, 3), 0).shape == (2, 3, 0)
    assert posattn.alibi_bias(posattn.alibi_slopes(4), 0, 5).shape == (4, 0, 5)
    assert posattn.attention(*(np.zeros((1, 2, 0, 8), np.float32),) * 3).shape == (1, 2, 0, 8)
    W1, W2 = np.ones((2, 4), np.float32), np.ones((3, 3), np.float32)
    assert posattn.floater(0, np.ones(3, np.float32), W1, np.ones(2, np.float32), W2, np.ones(3, np.float32)).shape == (0, 3)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_sinusoid_add_in_place_on_a_strided_odd_width_view(rng, layout):
    """The odd last channel passes x through, also when x is out and packed for the kernel."""
    x = rng.standard_normal((2, 5, 14)).astype(np.float32)[:, :, ::2]  # D = 7, channel stride 2
    positions = rng.integers(0, 1000, size=(2, 5)).astype(np.int32)
    expected = x.astype(np.float64) + reference.sinusoidal(positions, 7, layout=layout)
    posattn.sinusoidal_add(x, positions, layout=layout, out=x)
    np.testing.assert_allclose(x, expected, atol=1e-6)


def test_complex_order_writes_into_the_parts_of_a_complex_array(rng):
    """real and imag may interleave (a complex64 array's .real and .imag): disjoint elements."""
    V, d = 9, 6
    ids, pos = rng.integers(0, V, size=(2, 7)).astype(np.int32), rng.integers(1, 99, size=(2, 7)).astype(np.int32)
    amplitude, frequency = rng.standard_normal((V, d)).astype(np.float32), rng.random((V, d)).astype(np.float32)
    f = np.zeros((2, 7, d), np.complex64)
    posattn.complex_order(ids, pos, amplitude, frequency, real=f.real, imag=f.imag)
    real, imag = reference.complex_order(ids, pos, amplitude, frequency)
    np.testing.assert_allclose(f, real + 1j * imag, atol=2e-6)


def _qkv(rng, B, Hq, Hkv, Lq, Lk, D):
    return (rng.standard_normal((B, Hq, Lq, D)).astype(np.float32),
            rng.standard_normal((B, Hkv, Lk, D)).astype(np.float32),
            rng.standard_normal((B, Hkv, Lk, D)).astype(np.float32))


def test_causal_alignment_with_fewer_queries_than_keys(rng):
    """Queries are the last Lq key positions: a short causal call equals the tail of the full one."""
    B, H, Lk, Lq, D = 2, 3, 70, 9, 32
    q_full, k, v = _qkv(rng, B, H, H, Lk, Lk, D)
    full = posattn.attention(q_full, k, v, causal=True)
    tail = posattn.attention(q_full[:, :, -Lq:], k, v, causal=True)
    np.testing.assert_allclose(tail, full[:, :, -Lq:], atol=1e-6, rtol=1e-6)
    # ... and differs from top-left alignment, where query i sees keys 0..i.
    top_left = reference.attention(q_full[:, :, -Lq:], k[:, :, :Lq], v[:, :, :Lq], causal=True)
    assert np.abs(tail - top_left).max() > 1e-2


def test_fully_masked_rows_are_exact_zeros(rng):
    B, H, Lq, Lk, D = 3, 2, 12, 8, 16
    q, k, v = _qkv(rng, B, H, H, Lq, Lk, D)
    out = posattn.attention(q, k, v, causal=True, key_lengths=np.array([8, 0, 5], np.int32))
    # Lq > Lk: rows i < Lq − Lk see no key; batch 1 has no key at all.
    assert (out[:, :, :Lq - Lk] == 0.0).all()
    assert (out[1] == 0.0).all()
    assert (np.abs(out[0, :, Lq - Lk:]).sum(axis=-1) > 0).all()
    assert np.isfinite(out).all()


@pytest.mark.parametrize("Hkv", [1, 2])
def test_gqa_equals_repeated_kv(rng, Hkv):
    B, Hq, Lq, Lk, D = 2, 6, 19, 41, 32
    q, k, v = _qkv(rng, B, Hq, Hkv, Lq, Lk, D)
    grouped = posattn.attention(q, k, v, causal=True)
    repeated = posattn.attention(q, np.repeat(k, Hq // Hkv, axis=1), np.repeat(v, Hq // Hkv, axis=1), causal=True)
    np.testing.assert_array_equal(grouped, repeated)


def test_key_lengths_equal_truncated_keys(rng):
    B, H, Lq, Lk, D = 1, 2, 13, 300, 16
    q, k, v = _qkv(rng, B, H, H, Lq, Lk, D)
    n = 157
    padded = posattn.attention(q, k, v, key_lengths=np.array([n], np.int32))
    truncated = posattn.attention(q, np.ascontiguousarray(k[:, :, :n]), np.ascontiguousarray(v[:, :, :n]))
    np.testing.assert_allclose(padded, truncated, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("Lk", [7, 300])
def test_keys_outside_the_batch_range_never_reach_the_result(rng, Lk):
    """NaN in the keys and values before key_starts and from key_lengths on (left and right padding)
    stays out of every row, the empty rows (query_lengths 0, an empty key range) included (a fuzz
    seed found the reference multiplying them by zero weights)."""
    B, H, Lq, D = 4, 2, 5, 16
    q, k, v = _qkv(rng, B, H, H, Lq, Lk, D)
    starts, lengths = np.array([3, 0, 4, 3], np.int32), np.array([Lk, Lk - 2, 2, Lk], np.int32)
    for b in range(B):
        for x in (k, v):
            x[b, :, :starts[b]] = np.nan
            x[b, :, lengths[b]:] = np.nan
    masks = dict(key_starts=starts, key_lengths=lengths, query_lengths=np.array([5, 5, 5, 0], np.int32))
    try:
        out = posattn.attention(q, k, v, **masks)
    except posattn.Error as e:  # (a family whose NaN check scans the whole cache refuses it: ARM)
        assert "argument 'k' contains NaN" in str(e) and platform.machine() != "x86_64", e
        return
    assert np.isfinite(out).all() and not out[2:].any()  # batch 2 sees no key, batch 3 no query row
    np.testing.assert_allclose(out, reference.attention(q, k, v, **masks), atol=2e-6, rtol=0)


def test_softmax_is_stable_for_large_logits(rng):
    B, H, L, D = 1, 2, 50, 16
    q, k, v = _qkv(rng, B, H, H, L, L, D)
    q *= 300.0  # logits in the thousands: exp would overflow without the running max
    out = posattn.attention(q, k, v)
    expected = reference.attention(q, k, v)
    # A float32 logit is off by up to ~|logit|·eps, and its weight by as much relatively.
    logits = np.abs(np.einsum("bhid,bhjd->bhij", q.astype(np.float64), k) / np.sqrt(D)).max()
    bound = 4 * logits * np.finfo(np.float32).eps
    np.testing.assert_allclose(out, expected, atol=bound, rtol=bound)


def test_results_do_not_depend_on_thread_count(rng):
    q, k, v = _qkv(rng, 1, 4, 4, 70, 70, 32)
    try:
        posattn.set_num_threads(1)
        one = posattn.attention(q, k, v, causal=True)
        posattn.set_num_threads(2)
        two = posattn.attention(q, k, v, causal=True)
    finally:
        posattn.set_num_threads(0)
    np.testing.assert_array_equal(one, two)


def test_concurrent_calls_match_sequential(rng):
    """Kernels run with the GIL released; calls from several threads at once give the same
    results as one after another (no shared mutable state in the runtime)."""
    import concurrent.futures
    inputs = [_qkv(rng, 1, 2, 2, 33, 47, 16) for _ in range(6)]
    sequential = [posattn.attention(*qkv, causal=True) for qkv in inputs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        concurrent_results = list(pool.map(lambda qkv: posattn.attention(*qkv, causal=True), inputs))
    for a, b in zip(sequential, concurrent_results):
        np.testing.assert_array_equal(a, b)


def test_reused_scratch_blocks_carry_nothing_between_calls(rng):
    """Scratch blocks of 1 MiB or more (here DeBERTa's per-call key products, ~2 MiB) are kept and
    reused by the next call: each of several calls with fresh inputs still equals its reference."""
    buckets, max_rel, hidden = 256, 512, 24
    for _ in range(3):
        q, k, v = _qkv(rng, 1, 4, 4, 300, 300, 32)
        emb = rng.standard_normal((2 * buckets, hidden)).astype(np.float32)
        w_key, w_query = (rng.standard_normal((4 * 32, hidden)).astype(np.float32) / 5 for _ in range(2))
        options = dict(w_key=w_key, w_query=w_query, position_buckets=buckets, max_relative_positions=max_rel)
        out = posattn.attention(q, k, v, deberta=dict(rel_embeddings=emb, **options))
        np.testing.assert_allclose(out, reference.deberta_attention(q, k, v, emb, **options), atol=2e-5, rtol=1e-5)


def test_attention_check_finite_false_skips_the_scan_only(rng):
    """check_finite=False: the same kernel, the same result, without the NaN/Inf scan of q, k and v
    (a decoding step's second read of its KV cache); a non-finite value is then the caller's."""
    q = rng.standard_normal((1, 8, 1, 32)).astype(np.float32)
    k, v = (rng.standard_normal((1, 2, 300, 32)).astype(np.float32) for _ in range(2))
    checked = posattn.attention(q, k, v, causal=True)
    np.testing.assert_array_equal(posattn.attention(q, k, v, causal=True, check_finite=False), checked)
    v[0, 1, 17, 5] = np.inf
    before = v.copy()
    with pytest.raises(posattn.Error, match="'v' contains NaN or Inf"):
        posattn.attention(q, k, v, causal=True)
    out = posattn.attention(q, k, v, causal=True, check_finite=False)
    np.testing.assert_array_equal(v, before)
    np.testing.assert_array_equal(out[:, :4], checked[:, :4])  # q heads of KV head 0 never read it


@pytest.mark.parametrize("Hq, Lq, causal, window", [(8, 1, True, 0), (2, 30, True, 0), (2, 30, False, 80), (2, 30, True, 60)])
def test_plain_attention_reads_no_key_past_each_batchs_key_length(rng, Hq, Lq, causal, window):
    """A static KV cache: what keys past a batch's length hold, even NaN, is not in the result (the
    runtime runs the first max(key_lengths) keys, positions kept; a key block partly past a
    batch's keys reads their scores masked and, for values, the batch's last key), also with an
    encoding, whose terms read every key."""
    q = rng.standard_normal((2, Hq, Lq, 32)).astype(np.float32)
    k, v = (rng.standard_normal((2, 2, 400, 32)).astype(np.float32) for _ in range(2))
    lengths = np.array([330, 120], np.int32)
    expected = reference.attention(q, k, v, None, causal, lengths, window=window)
    for b, n in enumerate(lengths):
        k[b, :, n:], v[b, :, n:] = np.nan, np.nan
    out = posattn.attention(q, k, v, causal=causal, key_lengths=lengths, window=window, check_finite=False)
    np.testing.assert_allclose(out, expected, atol=2e-5, rtol=1e-5)
    alibi = posattn.attention(q, k, v, causal=causal, key_lengths=lengths, window=window, check_finite=False,
                              alibi_slopes=np.zeros(Hq, np.float32))
    np.testing.assert_allclose(alibi, expected, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("Hq", [8, 2])  # GQA folded into the rows of a tile, and one row per head
def test_a_decoding_step_checks_the_values_its_rows_read(rng, Hq):
    """The default check on a CPU decoding step (on x86, whose kernel reads the KV cache once and
    shows any NaN or Inf it read in its output; elsewhere a scan of the keys first): NaN past a
    batch's key length (a static cache) is no error and not in the result; NaN, +inf or -inf in a
    key a row sees is an error naming k or v, with out untouched."""
    q = rng.standard_normal((2, Hq, 1, 32)).astype(np.float32)
    k, v = (rng.standard_normal((2, 2, 400, 32)).astype(np.float32) for _ in range(2))
    lengths = np.array([330, 120], np.int32)
    expected = reference.attention(q, k, v, None, True, lengths)
    if platform.machine() in ("x86_64", "AMD64"):  # (a scan first refuses them, as a prefill call)
        for b, n in enumerate(lengths):
            k[b, :, n:], v[b, :, n:] = np.nan, np.nan
    np.testing.assert_allclose(posattn.attention(q, k, v, causal=True, key_lengths=lengths), expected, atol=2e-5, rtol=1e-5)
    for name, value in (("k", np.nan), ("k", np.inf), ("k", -np.inf), ("v", np.nan), ("v", -np.inf)):
        bad = dict(k=k.copy(), v=v.copy())
        bad[name][1, 1, 60, 7] = value
        out = np.full(q.shape, 7.0, np.float32)
        with pytest.raises(posattn.Error, match=f"'{name}' contains NaN or Inf"):
            posattn.attention(q, bad["k"], bad["v"], causal=True, key_lengths=lengths, out=out)
        assert (out == 7.0).all()


def test_dlpack_inputs(rng):
    class OnlyDLPack:  # exposes nothing but the DLPack protocol
        def __init__(self, array):
            self._array = array

        def __dlpack__(self, **kwargs):
            return self._array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    q, k, v = _qkv(rng, 1, 2, 2, 9, 11, 8)
    np.testing.assert_array_equal(posattn.attention(OnlyDLPack(q), OnlyDLPack(k), OnlyDLPack(v)),
                                  posattn.attention(q, k, v))
    p = rng.integers(0, 100, size=7).astype(np.int32)
    np.testing.assert_array_equal(posattn.sinusoidal(OnlyDLPack(p), 6), posattn.sinusoidal(p, 6))
