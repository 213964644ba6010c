"""The C ABI (posattn.h) through ctypes: status codes, last-error messages, results, and checks
that happen before any memory is touched (NULL data, sizes that overflow)."""
import ctypes

import ml_dtypes
import numpy as np
import pytest

from conftest import BASELINES, LIBRARY_DIR, manifest
from posattn import reference

lib = ctypes.CDLL(str(LIBRARY_DIR / "libposattn.so"))
OK, INVALID, UNSUPPORTED, KERNEL, INTERNAL = range(5)
F32, F64, I32, I64, BOOL, F16, BF16 = range(7)


HOST, DEVICE = range(2)


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("memory", ctypes.c_int32)]


def tensor(a, data=None, shape=None):
    """A posattn_tensor viewing NumPy array a (shape and strides kept alive on the struct)."""
    dtype = {np.dtype(np.float32): F32, np.dtype(np.float64): F64, np.dtype(np.int32): I32,
             np.dtype(np.int64): I64, np.dtype(bool): BOOL, np.dtype(np.float16): F16,
             np.dtype(ml_dtypes.bfloat16): BF16}[a.dtype]
    shape = a.shape if shape is None else shape
    t = Tensor(a.ctypes.data if data is None else data, dtype, len(shape))
    t._shape = (ctypes.c_int64 * len(shape))(*shape)
    t._strides = (ctypes.c_int64 * len(shape))(*[s // a.itemsize for s in a.strides] + [1] * (len(shape) - a.ndim))
    t.shape, t.strides = t._shape, t._strides
    return t


lib.posattn_last_error.restype = ctypes.c_char_p
for name in ("posattn_sinusoidal", "posattn_learned", "posattn_attention", "posattn_integer", "posattn_normalized",
             "posattn_binary", "posattn_binary_add", "posattn_sin_only", "posattn_rope", "posattn_rope_frequencies",
             "posattn_alibi_slopes", "posattn_alibi_bias", "posattn_complex_order",
             "posattn_complex_order_frequency_init", "posattn_floater",
             "posattn_attention_alibi", "posattn_attention_t5", "posattn_t5_bucket",
             "posattn_attention_rope", "posattn_attention_shaw", "posattn_attention_transformer_xl",
             "posattn_attention_deberta", "posattn_deberta_bucket", "posattn_linear", "posattn_attention_custom",
             "posattn_add_kernel", "posattn_load_kernel"):
    getattr(lib, name).restype = ctypes.c_int


def last_error():
    return lib.posattn_last_error().decode()


def test_sinusoidal_matches_reference(rng):
    positions = rng.integers(-1000, 1000, size=(3, 11)).astype(np.int32)
    out = np.full((3, 11, 20), np.nan, np.float32)
    status = lib.posattn_sinusoidal(ctypes.byref(tensor(positions)), ctypes.byref(tensor(out)),
                                    ctypes.c_double(10000.0), 1, 1)
    assert status == OK, last_error()
    np.testing.assert_allclose(out, reference.sinusoidal(positions, 20, layout="half", convention="t2t"), atol=1e-6)
    assert last_error() == ""


def test_attention_matches_reference_with_explicit_scale(rng):
    q = rng.standard_normal((1, 4, 7, 16)).astype(np.float32)
    k = rng.standard_normal((1, 2, 9, 16)).astype(np.float32)
    v = rng.standard_normal((1, 2, 9, 16)).astype(np.float32)
    lengths = np.array([6], np.int32)
    out = np.full(q.shape, np.nan, np.float32)
    options = attention_options(causal=1, key_lengths=lengths)
    options.has_scale, options.scale = 1, 0.2
    status = lib.posattn_attention(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), ctypes.byref(options))
    assert status == OK, last_error()
    np.testing.assert_allclose(out, reference.attention(q, k, v, 0.2, True, lengths), atol=2e-5)


def test_bfloat16_attention_and_a_mixed_dtype_refused(rng):
    q, k, v = (rng.standard_normal(shape).astype(np.float32).astype(ml_dtypes.bfloat16)
               for shape in ((1, 4, 7, 16), (1, 2, 9, 16), (1, 2, 9, 16)))
    out = np.full(q.shape, np.nan, ml_dtypes.bfloat16)
    options = attention_options(causal=1)
    assert lib.posattn_attention(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), ctypes.byref(options)) == OK, last_error()
    expected = reference.attention(q, k, v, None, True)
    assert (np.abs(out.astype(np.float64) - expected) <= 2e-5 + (1e-5 + 2.0**-8) * np.abs(expected)).all()
    mixed = np.full(q.shape, 7.0, np.float16)
    assert lib.posattn_attention(*(ctypes.byref(tensor(a)) for a in (q, k, v, mixed)), ctypes.byref(options)) == INVALID
    assert "argument 'out' has dtype float16; expected bfloat16" in last_error() and (mixed == 7.0).all()


def test_simple_encodings_match_reference(rng):
    positions = rng.integers(0, 2**12, size=(2, 9)).astype(np.int32)
    x = rng.standard_normal((2, 9, 13)).astype(np.float32)
    out = np.full((2, 9, 13), np.nan, np.float32)
    calls = [
        (lib.posattn_integer, (), reference.integer(positions, 13)),
        (lib.posattn_normalized, (ctypes.c_int64(0), 1), reference.normalized(positions, 13, mode="length")),
        (lib.posattn_binary, (1, 0), reference.binary(positions, 13, signed=True)),
        (lib.posattn_sin_only, (ctypes.c_double(500.0),), reference.sin_only(positions, 13, 500.0)),
    ]
    for fn, options, expected in calls:
        out[...] = np.nan
        assert fn(ctypes.byref(tensor(positions)), ctypes.byref(tensor(out)), *options) == OK, last_error()
        np.testing.assert_allclose(out, expected, rtol=2**-23, atol=1e-6)
    assert lib.posattn_binary_add(*(ctypes.byref(tensor(a)) for a in (x, positions, out)), 0, 1) == OK, last_error()
    np.testing.assert_allclose(out, x + reference.binary(positions, 13, msb_first=True), rtol=2**-24)
    assert lib.posattn_normalized(ctypes.byref(tensor(positions)), ctypes.byref(tensor(out)), ctypes.c_int64(0), 5) == INVALID
    assert "'mode'" in last_error()


class RopeScaling(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("factor", ctypes.c_double),
                ("original_max_position_embeddings", ctypes.c_int64), ("max_position_embeddings", ctypes.c_int64),
                ("beta_fast", ctypes.c_double), ("beta_slow", ctypes.c_double), ("truncate", ctypes.c_int32),
                ("mscale", ctypes.c_double), ("mscale_all_dim", ctypes.c_double),
                ("attention_factor", ctypes.c_double), ("low_freq_factor", ctypes.c_double),
                ("high_freq_factor", ctypes.c_double), ("short_factor", ctypes.POINTER(ctypes.c_double)),
                ("long_factor", ctypes.POINTER(ctypes.c_double)), ("factor_count", ctypes.c_int64)]


def test_rope_in_place_with_yarn_matches_reference(rng):
    x = rng.standard_normal((2, 3, 11, 32)).astype(np.float32)
    positions = rng.integers(0, 10**5, size=11).astype(np.int32)
    scaling = RopeScaling()
    lib.posattn_rope_scaling_init(ctypes.byref(scaling), 4)
    scaling.factor, scaling.original_max_position_embeddings = 4.0, 512
    inv = (ctypes.c_double * 12)()
    af = ctypes.c_double()
    assert lib.posattn_rope_frequencies(ctypes.c_int64(24), ctypes.c_double(1e4), ctypes.byref(scaling),
                                        ctypes.c_int64(0), inv, ctypes.byref(af)) == OK, last_error()
    ref_inv, ref_af = reference.rope_inv_freq(24, scaling={"type": "yarn", "factor": 4.0,
                                                           "original_max_position_embeddings": 512})
    np.testing.assert_allclose(np.array(inv), ref_inv, rtol=1e-15)
    assert af.value == pytest.approx(ref_af, rel=1e-15)
    expected = reference.rope(x, positions, ref_inv, ref_af, "gptj", 24)
    xt = tensor(x)
    assert lib.posattn_rope(ctypes.byref(xt), ctypes.byref(xt), ctypes.byref(tensor(positions)), ctypes.c_double(1e4),
                            1, ctypes.c_int64(24), ctypes.byref(scaling), ctypes.c_int64(0)) == OK, last_error()
    np.testing.assert_allclose(x, expected, atol=4e-6)
    scaling.type = 9
    assert lib.posattn_rope(ctypes.byref(xt), ctypes.byref(xt), None, ctypes.c_double(1e4), 0, ctypes.c_int64(0),
                            ctypes.byref(scaling), ctypes.c_int64(0)) == INVALID
    assert "'scaling.type'" in last_error()


def test_complex_order_with_phase(rng):
    V, d = 9, 6
    freq = np.zeros((V, d), np.float32)
    assert lib.posattn_complex_order_frequency_init(ctypes.byref(tensor(freq)), 1) == OK, last_error()
    np.testing.assert_allclose(freq, reference.complex_order_frequency_init(V, d, "classification"), rtol=2**-24)
    ids, pos = rng.integers(0, V, size=(2, 5)).astype(np.int32), rng.integers(1, 500, size=(2, 5)).astype(np.int32)
    amp, phase = rng.standard_normal((V, d)).astype(np.float32), rng.standard_normal((V, d)).astype(np.float32)
    real, imag = np.full((2, 5, d), np.nan, np.float32), np.full((2, 5, d), np.nan, np.float32)
    assert lib.posattn_complex_order(*(ctypes.byref(tensor(a)) for a in (ids, pos, amp, freq, phase, real, imag))) == OK, \
        last_error()
    expected = reference.complex_order(ids, pos, amp, freq, phase)
    np.testing.assert_allclose(real, expected[0], atol=5e-6)
    np.testing.assert_allclose(imag, expected[1], atol=5e-6)
    ids[0, 0] = V
    assert lib.posattn_complex_order(*(ctypes.byref(tensor(a)) for a in (ids, pos, amp, freq)), None,
                                     ctypes.byref(tensor(real)), ctypes.byref(tensor(imag))) == INVALID
    assert "'token_ids'" in last_error()


def test_floater_midpoint(rng):
    d, hidden, N = 6, 9, 8
    p0 = rng.standard_normal((2, d)).astype(np.float32)
    W1, b1 = rng.standard_normal((hidden, d + 1)).astype(np.float32), rng.standard_normal(hidden).astype(np.float32)
    W2, b2 = rng.standard_normal((d, hidden + 1)).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    out = np.full((2, N, d), np.nan, np.float32)
    args = [ctypes.byref(tensor(a)) for a in (p0, W1, b1, W2, b2, out)]
    assert lib.posattn_floater(*args, ctypes.c_double(0.05), ctypes.c_int64(4), 2) == OK, last_error()
    np.testing.assert_allclose(out, reference.floater(N, p0, W1, b1, W2, b2, 0.05, 4, "midpoint"), atol=1e-5)
    assert lib.posattn_floater(*args, ctypes.c_double(0.05), ctypes.c_int64(4), 7) == INVALID
    assert "'method'" in last_error()


def test_alibi_slopes_and_bias(rng):
    slopes = (ctypes.c_double * 12)()
    assert lib.posattn_alibi_slopes(ctypes.c_int64(12), slopes) == OK, last_error()
    m = np.array(slopes)
    np.testing.assert_array_equal(m, reference.alibi_slopes(12))
    out = np.full((12, 5, 9), np.nan, np.float32)
    assert lib.posattn_alibi_bias(ctypes.byref(tensor(m)), ctypes.byref(tensor(out)), 2) == OK, last_error()
    np.testing.assert_allclose(out, reference.alibi_bias(m, 5, 9, "symmetric"), rtol=2**-24)
    assert lib.posattn_alibi_bias(ctypes.byref(tensor(m)), ctypes.byref(tensor(out)), 3) == INVALID
    assert "'form'" in last_error()


def test_alibi_attention(rng):
    q = rng.standard_normal((1, 4, 7, 16)).astype(np.float32)
    k = rng.standard_normal((1, 2, 9, 16)).astype(np.float32)
    v = rng.standard_normal((1, 2, 9, 16)).astype(np.float32)
    slopes = reference.alibi_slopes(4)
    out = np.full(q.shape, np.nan, np.float32)
    status = lib.posattn_attention_alibi(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), ctypes.byref(attention_options(causal=1)),
                                         ctypes.byref(tensor(slopes)), 2)
    assert status == OK, last_error()
    expected = reference.attention(q, k, v, causal=True, bias=reference.alibi_bias(slopes, 7, 9, "symmetric")[None])
    np.testing.assert_allclose(out, expected, atol=2e-5)


def test_t5_attention_and_buckets(rng):
    q = rng.standard_normal((1, 4, 7, 16)).astype(np.float32)
    k = rng.standard_normal((1, 2, 9, 16)).astype(np.float32)
    v = rng.standard_normal((1, 2, 9, 16)).astype(np.float32)
    table = rng.standard_normal((32, 4)).astype(np.float32)
    out = np.full(q.shape, np.nan, np.float32)
    status = lib.posattn_attention_t5(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), ctypes.byref(attention_options(causal=1)),
                                      ctypes.byref(tensor(table)), 0, ctypes.c_int64(128))
    assert status == OK, last_error()
    expected = reference.attention(q, k, v, 1.0, True, bias=reference.t5_bias(table, 7, 9, False)[None])
    np.testing.assert_allclose(out, expected, atol=2e-5)
    bucket = ctypes.c_int64()
    assert lib.posattn_t5_bucket(ctypes.c_int64(-100), 0, ctypes.c_int64(32), ctypes.c_int64(128), ctypes.byref(bucket)) == OK
    assert bucket.value == 30
    assert lib.posattn_t5_bucket(ctypes.c_int64(5), 1, ctypes.c_int64(2), ctypes.c_int64(128), ctypes.byref(bucket)) == INVALID
    assert "'num_buckets' = 2" in last_error()


MASK_FIELDS = ("key_starts", "q_segments", "k_segments", "query_lengths", "mask", "bias")


class AttentionOptions(ctypes.Structure):
    _fields_ = [("has_scale", ctypes.c_int32), ("scale", ctypes.c_double), ("causal", ctypes.c_int32),
                ("key_lengths", ctypes.POINTER(Tensor)), ("window", ctypes.c_int64), ("unchecked_values", ctypes.c_int32),
                *[(name, ctypes.POINTER(Tensor)) for name in MASK_FIELDS]]


def attention_options(causal=0, window=0, key_lengths=None, unchecked_values=0, **masks):
    o = AttentionOptions()
    lib.posattn_attention_options_init(ctypes.byref(o))
    assert (o.has_scale, o.causal, o.window, bool(o.key_lengths), o.unchecked_values) == (0, 0, 0, False, 0)
    assert not any(getattr(o, name) for name in MASK_FIELDS)
    o.causal, o.window, o.unchecked_values = causal, window, unchecked_values
    o._tensors = {name: tensor(a) for name, a in dict(masks, key_lengths=key_lengths).items() if a is not None}
    for name, t in o._tensors.items():
        setattr(o, name, ctypes.pointer(t))
    return o


def _qkv(rng, Hq=4, Hkv=2, Lq=7, Lk=9, D=16):
    return [rng.standard_normal(shape).astype(np.float32) for shape in ((1, Hq, Lq, D), (1, Hkv, Lk, D), (1, Hkv, Lk, D))]


def test_masked_and_rope_attention(rng):
    q, k, v = _qkv(rng)
    out = np.full(q.shape, np.nan, np.float32)
    options = attention_options(causal=1, window=3, key_lengths=np.array([8], np.int32))
    assert lib.posattn_attention(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), ctypes.byref(options)) == OK, last_error()
    np.testing.assert_allclose(out, reference.attention(q, k, v, None, True, [8], window=3), atol=2e-5)
    positions = rng.integers(0, 1000, size=9).astype(np.int32)
    status = lib.posattn_attention_rope(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), None, ctypes.c_double(1e4),
                                        1, ctypes.c_int64(8), None, ctypes.byref(tensor(positions[2:])),
                                        ctypes.byref(tensor(positions)), ctypes.c_int64(0))
    assert status == OK, last_error()
    inv, af = reference.rope_inv_freq(8)
    expected = reference.attention(reference.rope(q, positions[2:], inv, af, "gptj", 8),
                                   reference.rope(k, positions, inv, af, "gptj", 8), v)
    np.testing.assert_allclose(out, expected, atol=2e-5)
    assert lib.posattn_attention_rope(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), None, ctypes.c_double(1e4),
                                      5, ctypes.c_int64(0), None, None, None, ctypes.c_int64(0)) == INVALID
    assert "'layout' is 5" in last_error()


def test_custom_attention_calls_a_kernel_by_its_argument_names(rng):
    """posattn_attention_custom on posattn's own ALiBi kernel: the alibi call's bits; bad counts,
    NULL names and names in posattn's space refused, naming the argument, out untouched."""
    q, k, v = _qkv(rng)
    slopes = reference.alibi_slopes(4).astype(np.float32)
    args = [ctypes.byref(tensor(a)) for a in (q, k, v)]
    options = ctypes.byref(attention_options(causal=1))
    names = (ctypes.c_char_p * 1)(b"slopes")
    inputs = (Tensor * 1)(tensor(slopes))
    scalar_names, scalars = (ctypes.c_char_p * 1)(b"alibi_form"), (ctypes.c_double * 1)(0.0)

    def custom(out, kernel=b"posattn_attn_alibi_f32", input_count=1, input_names=names, scalar_count=1, names_of_scalars=scalar_names):
        return lib.posattn_attention_custom(*args, ctypes.byref(tensor(out)), options, kernel, input_count, input_names, inputs,
                                            scalar_count, names_of_scalars, scalars)
    out, expected = np.full(q.shape, np.nan, np.float32), np.full(q.shape, np.nan, np.float32)
    assert custom(out) == OK, last_error()
    assert lib.posattn_attention_alibi(*args, ctypes.byref(tensor(expected)), options, ctypes.byref(tensor(slopes)), 0) == OK
    np.testing.assert_array_equal(out, expected)
    out[...] = np.nan
    for change, message in [(dict(kernel=None), "'kernel' is NULL"), (dict(input_count=-1), "'inputs': -1 given"),
                            (dict(input_names=None), "'inputs': 1 given, with a NULL array"),
                            (dict(scalar_count=0), "'custom.scalars' has no 'alibi_form'"),
                            (dict(names_of_scalars=(ctypes.c_char_p * 1)(None)), "'scalar_names' is NULL")]:
        assert custom(out, **change) == INVALID and message in last_error(), (change, last_error())
        assert np.isnan(out).all()
    assert lib.posattn_load_kernel(None, b"k", b"kerple_attention") == INVALID and "'path' is NULL" in last_error()
    assert lib.posattn_load_kernel(b"/nonexistent.so", b"k", b"kerple_attention") == INVALID and "'path'" in last_error()
    assert lib.posattn_add_kernel(b"posattn_kerple", None, None) == INVALID and "'function' is 'posattn_kerple'" in last_error()
    assert lib.posattn_add_kernel(b"kerple_attention", None, None) == INVALID and "'argv' is null" in last_error()


def test_unchecked_values_skip_the_scan_for_non_finite_values(rng):
    q, k, v = _qkv(rng)
    k[0, 1, 4, 3] = np.nan
    out = np.zeros(q.shape, np.float32)
    args = [ctypes.byref(tensor(a)) for a in (q, k, v, out)]
    assert lib.posattn_attention(*args, ctypes.byref(attention_options())) == INVALID
    assert "'k' contains NaN or Inf" in last_error() and not out.any()
    assert lib.posattn_attention(*args, ctypes.byref(attention_options(unchecked_values=1))) == OK, last_error()
    # The q heads of KV head 0 never read the NaN: they are exact; those of KV head 1 are undefined.
    np.testing.assert_allclose(out[:, :2], reference.attention(q[:, :2], k[:, :1], v[:, :1]), atol=2e-5)


def test_relative_attention_variants(rng):
    q, k, v = _qkv(rng)
    out = np.full(q.shape, np.nan, np.float32)
    args = [ctypes.byref(tensor(a)) for a in (q, k, v, out)]
    rel_k, rel_v = (rng.standard_normal((4, 5, 16)).astype(np.float32) for _ in range(2))
    assert lib.posattn_attention_shaw(*args, None, ctypes.byref(tensor(rel_k)), ctypes.byref(tensor(rel_v))) == OK, last_error()
    np.testing.assert_allclose(out, reference.shaw_attention(q, k, v, rel_k, rel_v), atol=2e-5)

    r = rng.standard_normal((9, 16)).astype(np.float32)
    u, v_bias = (rng.standard_normal((4, 16)).astype(np.float32) for _ in range(2))
    causal = attention_options(causal=1)
    assert lib.posattn_attention_transformer_xl(*args, ctypes.byref(causal), ctypes.byref(tensor(r)), ctypes.byref(tensor(u)),
                                                ctypes.byref(tensor(v_bias)), ctypes.c_int64(4), ctypes.c_int64(0)) == OK, last_error()
    np.testing.assert_allclose(out, reference.transformer_xl_attention(q, k, v, r, u, v_bias, clamp_len=4), atol=2e-5)
    assert lib.posattn_attention_transformer_xl(*args, None, ctypes.byref(tensor(r)), ctypes.byref(tensor(u)),
                                                ctypes.byref(tensor(v_bias)), ctypes.c_int64(0), ctypes.c_int64(0)) == INVALID
    assert "negative distance" in last_error()

    emb = rng.standard_normal((20, 12)).astype(np.float32)
    w = rng.standard_normal((64, 12)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    status = lib.posattn_attention_deberta(*args, None, ctypes.byref(tensor(emb)), ctypes.byref(tensor(w)), None,
                                           ctypes.byref(tensor(w)), ctypes.byref(tensor(b)), ctypes.c_int64(-1),
                                           ctypes.c_int64(10), 1)
    assert status == OK, last_error()
    expected = reference.deberta_attention(q, k, v, emb, w_key=w, w_query=w, b_query=b, max_relative_positions=10,
                                           p2c_index="paper")
    np.testing.assert_allclose(out, expected, atol=2e-5)
    bucket = ctypes.c_int64()
    assert lib.posattn_deberta_bucket(ctypes.c_int64(-600), ctypes.c_int64(256), ctypes.c_int64(512), ctypes.byref(bucket)) == OK
    assert bucket.value == -270


@pytest.mark.parametrize("buckets, max_rel", [(-1, 2**62 + 2**40), (2**62 + 2**40, 64), (2**63 - 1, -1)])
def test_deberta_spans_past_int64_are_refused_before_any_read(rng, buckets, max_rel):
    """2·span overflowed int64 once: the row check passed and the projection read past rel_embeddings."""
    q, k, v = _qkv(rng)
    out = np.full(q.shape, 7.0, np.float32)
    emb, w = rng.standard_normal((20, 12)).astype(np.float32), rng.standard_normal((64, 12)).astype(np.float32)
    status = lib.posattn_attention_deberta(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), None, ctypes.byref(tensor(emb)),
                                           ctypes.byref(tensor(w)), None, ctypes.byref(tensor(w)), None,
                                           ctypes.c_int64(buckets), ctypes.c_int64(max_rel), 0)
    assert status == INVALID and "'rel_embeddings' has 20 rows" in last_error(), last_error()
    np.testing.assert_array_equal(out, 7.0)


def test_linear(rng):
    x, w, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((3, 7)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    out = np.full((5, 3), np.nan, np.float32)
    assert lib.posattn_linear(ctypes.byref(tensor(x)), ctypes.byref(tensor(w)), ctypes.byref(tensor(b)), ctypes.byref(tensor(out))) == OK
    np.testing.assert_allclose(out, x.astype(np.float64) @ w.T + b, atol=1e-5)
    assert lib.posattn_linear(ctypes.byref(tensor(x)), ctypes.byref(tensor(w)), None, ctypes.byref(tensor(out[:, :2]))) == INVALID
    assert "'out'" in last_error()


def test_null_tensor_and_null_data_are_invalid_arguments(rng):
    positions = np.arange(4, dtype=np.int32)
    out = np.zeros((4, 8), np.float32)
    assert lib.posattn_sinusoidal(None, ctypes.byref(tensor(out)), ctypes.c_double(1e4), 0, 0) == INVALID
    assert "'positions' is NULL" in last_error()
    assert lib.posattn_sinusoidal(ctypes.byref(tensor(positions)), ctypes.byref(tensor(out, data=0)),
                                  ctypes.c_double(1e4), 0, 0) == INVALID
    assert "'out' has null data" in last_error()


def test_an_output_shaped_unlike_its_input_is_named_with_both_shapes(rng):
    """The shape checks name the argument, the axis and the shape it must follow; out stays untouched."""
    positions = rng.integers(0, 100, size=(3, 11)).astype(np.int32)
    out = np.full((3, 12, 8), np.nan, np.float32)
    assert lib.posattn_sinusoidal(ctypes.byref(tensor(positions)), ctypes.byref(tensor(out)),
                                  ctypes.c_double(1e4), 0, 0) == INVALID
    assert "'out'" in last_error() and "dimension 1 to be 11 (positions' shape [3, 11])" in last_error()
    x = rng.standard_normal((1, 2, 5, 8)).astype(np.float32)
    out = np.full((1, 3, 5, 8), np.nan, np.float32)
    assert lib.posattn_rope(ctypes.byref(tensor(x)), ctypes.byref(tensor(out)), None, ctypes.c_double(1e4), 0,
                            ctypes.c_int64(0), None, ctypes.c_int64(0)) == INVALID
    assert "'out'" in last_error() and "dimension 1 to be 2 (x's shape [1, 2, 5, 8])" in last_error()
    assert np.isnan(out).all()


def test_size_overflow_is_caught_before_touching_memory():
    positions = np.arange(4, dtype=np.int32)
    tiny = np.zeros(1, np.float32)  # data pointer of 4 bytes, claimed shape far larger
    out = tensor(tiny, shape=(4, 2**31))
    assert lib.posattn_sinusoidal(ctypes.byref(tensor(positions)), ctypes.byref(out), ctypes.c_double(1e4), 0, 0) == INVALID
    assert "'out'" in last_error() and "2^31-1" in last_error()
    out = tensor(tiny, shape=(2**30, 2**30, 2**30))
    pos3 = tensor(positions, shape=(2**30, 2**30))
    assert lib.posattn_sinusoidal(ctypes.byref(pos3), ctypes.byref(out), ctypes.c_double(1e4), 0, 0) == INVALID
    assert "overflow" in last_error()
    # Attention's int32 mask arithmetic: Lq + Lk must stay within 2^30. The 16 GiB of keys are
    # claimed at a low address that no real buffer (o) overlaps, and never read.
    q, o = np.ones((1, 1, 2, 4), np.float32), np.full((1, 1, 2, 4), np.nan, np.float32)
    keys = tensor(tiny, data=4096, shape=(1, 1, 2**30, 4))
    assert lib.posattn_attention(ctypes.byref(tensor(q)), ctypes.byref(keys), ctypes.byref(keys),
                                 ctypes.byref(tensor(o)), None) == INVALID
    assert "Lq + Lk = 1073741826" in last_error() and "<= 2^30" in last_error() and np.isnan(o).all()


def test_bad_enums_and_dtype_codes():
    positions = np.arange(4, dtype=np.int32)
    out = np.zeros((4, 8), np.float32)
    assert lib.posattn_sinusoidal(ctypes.byref(tensor(positions)), ctypes.byref(tensor(out)), ctypes.c_double(1e4), 7, 0) == INVALID
    assert "'layout'" in last_error()
    bad = tensor(positions)
    bad.dtype = 42
    assert lib.posattn_sinusoidal(ctypes.byref(bad), ctypes.byref(tensor(out)), ctypes.c_double(1e4), 0, 0) == INVALID
    assert "dtype code 42" in last_error()


def test_out_of_table_position_leaves_output_untouched(rng):
    table = rng.standard_normal((5, 3)).astype(np.float32)
    positions = np.array([0, 4, 5], np.int32)
    out = np.full((3, 3), 9.0, np.float32)
    assert lib.posattn_learned(ctypes.byref(tensor(table)), ctypes.byref(tensor(positions)),
                               ctypes.byref(tensor(out)), ctypes.c_int64(0)) == INVALID
    assert "holds 5" in last_error()
    assert (out == 9.0).all()


def test_gqa_heads_error_status(rng):
    q = rng.standard_normal((1, 3, 4, 8)).astype(np.float32)
    k = rng.standard_normal((1, 2, 4, 8)).astype(np.float32)
    out = np.zeros_like(q)
    status = lib.posattn_attention(*(ctypes.byref(tensor(a)) for a in (q, k, k, out)), None)
    assert status == INVALID and "multiple of k's" in last_error()


@pytest.mark.parametrize("threads", [1, 2])
def test_set_num_threads(threads, rng):
    lib.posattn_set_num_threads(threads)
    test_sinusoidal_matches_reference(rng)
    lib.posattn_set_num_threads(0)


def test_set_device_and_schedule_select_the_kernel(rng):
    """The per-thread device and schedule reach the kernel selection: the OpenCL build (PoCL here)
    gives the reference result; a schedule the kernel was not built with is UNSUPPORTED, naming
    it; unknown devices and NULL are errors."""
    if not BASELINES:
        pytest.skip("this build has no GPU kernels or no autoscheduled baselines")
    for name in ("posattn_set_device", "posattn_set_schedule"):
        getattr(lib, name).restype = ctypes.c_int
    positions = rng.integers(-1000, 1000, size=(3, 11)).astype(np.int32)
    try:
        assert lib.posattn_set_device(b"opencl") == OK and lib.posattn_set_schedule(b"hand") == OK
        out = np.full((3, 11, 13), np.nan, np.float32)
        assert lib.posattn_integer(ctypes.byref(tensor(positions)), ctypes.byref(tensor(out))) == OK, last_error()
        np.testing.assert_array_equal(out, reference.integer(positions, 13))
        assert lib.posattn_set_device(b"cpu") == OK and lib.posattn_set_schedule(b"li2018") == OK
        assert lib.posattn_integer(ctypes.byref(tensor(positions)), ctypes.byref(tensor(out))) == UNSUPPORTED
        assert "schedule 'li2018'" in last_error() and "adams2019" in last_error()
        assert lib.posattn_set_device(b"tpu") == INVALID and "'device' is 'tpu'" in last_error()
        assert lib.posattn_set_device(None) == INVALID and "'device' is NULL" in last_error()
        assert lib.posattn_set_schedule(None) == INVALID and "'schedule'" in last_error()
    finally:
        lib.posattn_set_device(b"cpu")
        lib.posattn_set_schedule(b"hand")


def device_tensor(mem, like, shape=None, strides=None):
    """A posattn_tensor of device buffer mem holding elements laid out as array `like` (or shape, strides)."""
    t = tensor(like, data=mem, shape=shape)
    if strides is not None:
        t._strides = (ctypes.c_int64 * len(strides))(*strides)
        t.strides = t._strides
    t.memory = DEVICE
    return t


@pytest.fixture
def gpu(device_buffers):
    """device_buffers (conftest), with this thread's C calls on its API."""
    assert lib.posattn_set_device(device_buffers.api.encode()) == OK
    try:
        yield device_buffers
    finally:
        lib.posattn_set_device(b"cpu")


def test_masks_through_every_attention_call(rng):
    """mask, bias, key starts, segments and query lengths in the options of the masked, ALiBi and
    T5 calls (the older calls without options are the same with those unset), against the
    float64 reference; a bad one is INVALID, naming it, and leaves out untouched."""
    B, Hq, Hkv, Lq, Lk, D = 2, 4, 2, 7, 9, 16
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((B, Hq, Lq, D), (B, Hkv, Lk, D), (B, Hkv, Lk, D)))
    k_segments = np.sort(rng.integers(0, 3, size=(B, Lk)), axis=1).astype(np.int32)
    masks = dict(mask=rng.random((B, 1, Lq, Lk)) < 0.8, bias=rng.standard_normal((Hq, Lq, Lk)).astype(np.float32),
                 key_starts=np.array([1, 2], np.int32), q_segments=np.ascontiguousarray(k_segments[:, Lk - Lq:]),
                 k_segments=k_segments, query_lengths=np.array([7, 4], np.int32))
    slopes = reference.alibi_slopes(Hq).astype(np.float32)
    table = rng.standard_normal((32, Hq)).astype(np.float32)
    calls = {
        "masked": (lambda *a: lib.posattn_attention(*a), None, 0.0),
        "alibi": (lambda *a: lib.posattn_attention_alibi(*a, ctypes.byref(tensor(slopes)), 0), None,
                  reference.alibi_bias(slopes, Lq, Lk)[None]),
        "t5": (lambda *a: lib.posattn_attention_t5(*a, ctypes.byref(tensor(table)), 1, ctypes.c_int64(128)), 1.0,
               reference.t5_bias(table, Lq, Lk, True, 128)[None]),
    }
    for name, (call, scale, own_bias) in calls.items():
        out = np.full(q.shape, np.nan, np.float32)
        options = attention_options(causal=1, **masks)
        assert call(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), ctypes.byref(options)) == OK, (name, last_error())
        expected = reference.attention(q, k, v, scale, True, **dict(masks, bias=masks["bias"] + own_bias))
        np.testing.assert_allclose(out, expected, atol=2e-5, rtol=1e-5, err_msg=name)
        assert (out[1, :, 4:] == 0).all()  # past query_lengths
        out[...] = 7.0
        bad = attention_options(causal=1, **dict(masks, key_starts=np.array([1, 10], np.int32)))
        assert call(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), ctypes.byref(bad)) == INVALID
        assert "'key_starts' holds 10 at batch 1" in last_error()
        np.testing.assert_array_equal(out, 7.0)


@pytest.mark.parametrize("Hq, Hkv, Lq, Lk, D, causal", [(4, 2, 7, 9, 16, 1), (4, 1, 1, 33, 8, 0), (2, 2, 5, 5, 24, 0)])
def test_attention_on_device_buffers(gpu, rng, Hq, Hkv, Lq, Lk, D, causal):
    """q, k, v and out as device buffers the caller made, used in place: the result against the
    float64 reference at every element, the inputs left as they were; with one query against a
    single KV head (the decoding fold of GQA heads into rows), and with host key lengths."""
    q, k, v = _qkv(rng, Hq, Hkv, Lq, Lk, D)
    poison = np.full(q.shape, np.nan, np.float32)
    buffers = [gpu.buffer(a) for a in (q, k, v, poison)]
    lengths = np.array([Lk - 1], np.int32)
    options = attention_options(causal=causal, key_lengths=lengths)
    args = [ctypes.byref(device_tensor(m, a)) for m, a in zip(buffers, (q, k, v, poison))]
    assert lib.posattn_attention(*args, ctypes.byref(options)) == OK, last_error()
    np.testing.assert_allclose(gpu.read(buffers[3], poison), reference.attention(q, k, v, None, bool(causal), lengths),
                               atol=2e-5, rtol=0)
    for m, a in zip(buffers, (q, k, v)):
        np.testing.assert_array_equal(gpu.read(m, a), a)


def test_device_and_host_tensors_mix_and_strided_device_output(gpu, rng):
    """A host q with device k, v and an out whose rows leave gaps in its buffer: the gaps keep
    their bytes, in the kernel's call and in the all-masked one (no keys)."""
    q, k, v = _qkv(rng, 2, 2, 3, 4, 8)
    out_buffer = np.full((1, 2, 3, 12), 7.0, np.float32)  # rows of 8 values, then 4 of gap
    mem = [gpu.buffer(a) for a in (k, v, out_buffer)]
    out = device_tensor(mem[2], q, shape=(1, 2, 3, 8), strides=(72, 36, 12, 1))
    args = [ctypes.byref(tensor(q)), ctypes.byref(device_tensor(mem[0], k)), ctypes.byref(device_tensor(mem[1], v)), ctypes.byref(out)]
    assert lib.posattn_attention(*args, ctypes.byref(attention_options())) == OK, last_error()
    result = gpu.read(mem[2], out_buffer)
    np.testing.assert_allclose(result[..., :8], reference.attention(q, k, v), atol=2e-5, rtol=0)
    np.testing.assert_array_equal(result[..., 8:], 7.0)
    empty = np.zeros((1, 2, 0, 8), np.float32)
    no_keys = [ctypes.byref(tensor(q)), ctypes.byref(tensor(empty)), ctypes.byref(tensor(empty)), ctypes.byref(out)]
    assert lib.posattn_attention(*no_keys, ctypes.byref(attention_options())) == OK, last_error()
    result = gpu.read(mem[2], out_buffer)
    np.testing.assert_array_equal(result[..., :8], 0.0)
    np.testing.assert_array_equal(result[..., 8:], 7.0)


def test_device_buffer_errors_name_the_argument(gpu, rng):
    """Device buffers where they are not taken, on the wrong device, strided across, with unknown
    memory codes, or holding NaN (found through a host copy): INVALID, naming the argument, and the
    output buffer untouched."""
    q, k, v = _qkv(rng)
    poison = np.full(q.shape, np.nan, np.float32)
    mem = [gpu.buffer(a) for a in (q, k, v, poison)]
    on_device = [device_tensor(m, a) for m, a in zip(mem, (q, k, v, poison))]
    run = lambda ts, **o: lib.posattn_attention(*(ctypes.byref(t) for t in ts), ctypes.byref(attention_options(**o)))

    lengths = gpu.buffer(np.array([9], np.int32))
    options = attention_options()
    options._lengths = device_tensor(lengths, np.array([9], np.int32))
    options.key_lengths = ctypes.pointer(options._lengths)
    assert lib.posattn_attention(*(ctypes.byref(t) for t in on_device), ctypes.byref(options)) == INVALID
    assert "'key_lengths' is device memory; expected host memory" in last_error()

    positions = np.arange(7, dtype=np.int32)
    table = device_tensor(mem[3], np.zeros((7, 16), np.float32))
    on_device_positions = device_tensor(gpu.buffer(positions), positions)
    assert lib.posattn_sinusoidal(ctypes.byref(on_device_positions), ctypes.byref(table), ctypes.c_double(1e4), 0, 0) == INVALID
    assert "'positions' is device memory; expected host memory" in last_error()

    strided = device_tensor(mem[0], q, strides=(448, 112, 16, 2))
    assert run([strided] + on_device[1:]) == INVALID and "'q' is device memory with strides" in last_error()
    unknown = device_tensor(mem[1], k)
    unknown.memory = 7
    assert run([on_device[0], unknown] + on_device[2:]) == INVALID and "'k' has unknown memory code 7" in last_error()

    k_nan = k.copy()
    k_nan[0, 1, 4, 3] = np.nan
    assert run([on_device[0], device_tensor(gpu.buffer(k_nan), k)] + on_device[2:]) == INVALID
    assert "'k' contains NaN or Inf" in last_error()
    assert np.isnan(gpu.read(mem[3], poison)).all()

    for device in (b"cpu", b"vulkan"):
        assert lib.posattn_set_device(device) == OK
        assert run(on_device) == INVALID
        assert "'q' is device memory; expected a call on its device, cuda or opencl" in last_error()
    assert np.isnan(gpu.read(mem[3], poison)).all()
    context, queue = ctypes.c_void_p(), ctypes.c_void_p()
    lib.posattn_device_context.restype = ctypes.c_int
    assert lib.posattn_device_context(gpu.api.encode(), ctypes.byref(context), ctypes.byref(queue)) == OK, last_error()
    assert (context.value, queue.value or 0) == (gpu.context, gpu.queue)  # (ctypes reads a null pointer as None)
    assert lib.posattn_device_context(b"vulkan", ctypes.byref(context), ctypes.byref(queue)) == UNSUPPORTED
    assert "expected cuda or opencl" in last_error()


def test_rope_on_device_buffers(gpu, rng):
    """RoPE of a device x into a device out, and in place (out = x), against the reference; then
    a partial rotary dimension from a host x into a device out (its pass-through channels go
    through a host copy of out: a device handle cannot view them alone)."""
    x = rng.standard_normal((2, 3, 11, 32)).astype(np.float32)
    positions = rng.integers(0, 10**5, size=11).astype(np.int32)
    poison = np.full(x.shape, np.nan, np.float32)
    x_mem, out_mem = gpu.buffer(x), gpu.buffer(poison)
    inv, af = reference.rope_inv_freq(32)
    expected = reference.rope(x, positions, inv, af, "neox", 32)
    for out_mem_used in (out_mem, x_mem):  # out of place, then in place
        status = lib.posattn_rope(ctypes.byref(device_tensor(x_mem, x)), ctypes.byref(device_tensor(out_mem_used, x)),
                                  ctypes.byref(tensor(positions)), ctypes.c_double(1e4), 0, ctypes.c_int64(0), None,
                                  ctypes.c_int64(0))
        assert status == OK, last_error()
        np.testing.assert_allclose(gpu.read(out_mem_used, x), expected, atol=4e-6, rtol=0)
    np.testing.assert_array_equal(gpu.read(out_mem, x), gpu.read(x_mem, x))  # (both rotated once)
    status = lib.posattn_rope(ctypes.byref(tensor(x)), ctypes.byref(device_tensor(out_mem, x)), None,
                              ctypes.c_double(1e4), 0, ctypes.c_int64(16), None, ctypes.c_int64(0))
    assert status == OK, last_error()
    inv, af = reference.rope_inv_freq(16)
    np.testing.assert_allclose(gpu.read(out_mem, x), reference.rope(x, np.arange(11), inv, af, "neox", 16),
                               atol=4e-6, rtol=0)


lib.posattn_kernel_count.restype = ctypes.c_int32
lib.posattn_kernel_at.restype = lib.posattn_set_allocator.restype = ctypes.c_int


class KernelInfo(ctypes.Structure):
    _fields_ = [(name, ctypes.c_char_p) for name in ("function", "family", "schedule", "targets")]


def test_kernel_at_lists_the_kernels_with_their_targets():
    import posattn
    count = lib.posattn_kernel_count()
    listed = []
    for index in range(count):
        info = KernelInfo()
        assert lib.posattn_kernel_at(index, ctypes.byref(info)) == OK, last_error()
        listed.append({name: getattr(info, name).decode() for name, _ in KernelInfo._fields_})
    assert listed == [{name: k[name] for name, _ in KernelInfo._fields_} for k in posattn.kernels()]
    levels = {"x86": 4, "arm": 1}
    added = {k["function"]: len(k.get("x86_levels", [])) for k in manifest()}  # (bfloat16's avx512_zen4)
    for k in listed:
        if k["family"] in levels and k["schedule"] == "hand":
            extra = added[k["function"]] if k["family"] == "x86" else 0
            assert len(k["targets"].split(",")) == levels[k["family"]] + extra, k
        assert all(t.split("-")[0] in ("x86", "arm", "host") for t in k["targets"].split(",")), k
    for index in (-1, count):
        assert lib.posattn_kernel_at(index, ctypes.byref(KernelInfo())) == INVALID
        assert f"argument 'index' is {index}; expected 0 <= index < {count}" in last_error()
    assert lib.posattn_kernel_at(0, None) == INVALID and "'info' is NULL" in last_error()


ALLOCATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def test_an_apps_allocator_serves_the_kernels_scratch(rng):
    """float16 prefill widens k into scratch: the same result through the app's allocator, each
    block aligned as asked and released to it."""
    libc = ctypes.CDLL(None)
    libc.aligned_alloc.restype, libc.aligned_alloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    live, seen = set(), []

    @ALLOCATE
    def allocate(context, size, alignment):
        assert context == 1234
        block = libc.aligned_alloc(alignment, (size + alignment - 1) // alignment * alignment)
        live.add(block), seen.append((size, alignment, block))
        return block

    @RELEASE
    def release(context, block):
        live.remove(block)
        libc.free(block)

    q, k, v = (rng.standard_normal((1, H, 64, 32)).astype(np.float16) for H in (4, 2, 2))
    outs = [np.full(q.shape, np.nan, np.float16) for _ in range(2)]
    call = lambda out: lib.posattn_attention(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), None)  # noqa: E731
    assert call(outs[0]) == OK, last_error()
    assert lib.posattn_set_allocator(allocate, release, ctypes.c_void_p(1234)) == OK
    try:
        assert call(outs[1]) == OK, last_error()
    finally:
        assert lib.posattn_set_allocator(None, None, None) == OK
    assert seen and not live
    assert all(alignment >= 64 and alignment & (alignment - 1) == 0 and block % alignment == 0 for _, alignment, block in seen)
    np.testing.assert_array_equal(outs[1], outs[0])
    np.testing.assert_allclose(outs[0].astype(np.float64), reference.attention(q, k, v), atol=2e-5, rtol=2.0**-10)


def test_an_allocator_that_fails_fails_the_call_and_one_sided_allocators_are_refused(rng):
    @ALLOCATE
    def exhausted(context, size, alignment):
        return None

    @RELEASE
    def release(context, block):
        raise AssertionError("nothing to release")

    assert lib.posattn_set_allocator(exhausted, None, None) == INVALID and "argument 'release' is null" in last_error()
    assert lib.posattn_set_allocator(None, release, None) == INVALID and "argument 'allocate' is null" in last_error()
    q, k, v = (rng.standard_normal((1, 2, 64, 32)).astype(np.float16) for _ in range(3))
    out = np.full(q.shape, np.nan, np.float16)
    assert lib.posattn_set_allocator(exhausted, release, None) == OK
    try:
        status = lib.posattn_attention(*(ctypes.byref(tensor(a)) for a in (q, k, v, out)), None)
        message = last_error()
    finally:
        assert lib.posattn_set_allocator(None, None, None) == OK
    assert status == KERNEL and "memory" in message.lower(), message
