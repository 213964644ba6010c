"""float16 and bfloat16 storage through the public API (docs/contract.md "Storage types"): new
outputs take the input's type (or a table's dtype=), values are the float64 math on the rounded
inputs rounded once, and a type an operand, the build or the device lacks is a clear error. The
kernels themselves are checked case by case in the harness (tests/storage.py twins)."""
import platform
import re
import sys

import ml_dtypes
import numpy as np
import pytest

import posattn
from conftest import BUILD, NATIVE_BUILD, ROOT, isa_levels, manifest
from posattn import reference
from storage import STORAGE

BF16, F16 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)


def rounded(rng, shape, dtype):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def within(actual, expected, atol, rtol, dtype):
    """actual (of dtype) within the float32 bound plus one rounding to dtype."""
    storage = next(s for s in STORAGE if s.dtype == dtype)
    assert actual.dtype == dtype
    err = np.abs(actual.astype(np.float64) - expected)
    assert (err <= atol + storage.subnormal + (rtol + storage.roundoff) * np.abs(expected)).all(), err.max()


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_gqa_decode_step_with_default_arguments(rng, dtype):
    q, k, v = (rounded(rng, shape, dtype) for shape in ((1, 8, 1, 64), (1, 2, 300, 64), (1, 2, 300, 64)))
    out = posattn.attention(q, k, v, causal=True)
    within(out, reference.attention(q, k, v, None, True), 2e-5, 1e-5, dtype)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_rope_in_place_and_allocated(rng, dtype):
    x = rounded(rng, (2, 4, 33, 64), dtype)
    inv, af = reference.rope_inv_freq(64)
    expected = reference.rope(x, np.arange(33), inv, af, "neox", None)
    within(posattn.rope(x), expected, 3e-6, 2.0**-22, dtype)
    assert posattn.rope(x, out=x) is x
    within(x, expected, 3e-6, 2.0**-22, dtype)


@pytest.mark.parametrize("dtype, name", [(F16, "float16"), (BF16, "bfloat16"), (F16, F16), (BF16, BF16)])
def test_tables_take_a_dtype(rng, dtype, name):
    positions = rng.integers(0, 5000, size=(3, 17)).astype(np.int32)
    within(posattn.sinusoidal(positions, 48, dtype=name), reference.sinusoidal(positions, 48), 1e-6, 2.0**-23, dtype)
    within(posattn.integer(positions, 8, dtype=name), reference.integer(positions, 8), 0.0, 2.0**-23, dtype)
    assert posattn.sinusoidal(positions, 48).dtype == np.float32  # (the default)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_encodings_add_and_learned_keep_the_input_type(rng, dtype):
    x, table = rounded(rng, (2, 9, 24), dtype), rounded(rng, (40, 24), dtype)
    positions = rng.integers(0, 40, size=(2, 9)).astype(np.int32)
    within(posattn.sinusoidal_add(x, positions), x.astype(np.float64) + reference.sinusoidal(positions, 24), 1e-6, 2.0**-23, dtype)
    gathered = posattn.learned(table, positions)
    assert gathered.dtype == dtype and np.array_equal(gathered, table[positions])  # a gather copies
    within(posattn.learned_add(x, table, positions), x.astype(np.float64) + table[positions].astype(np.float64), 0.0, 2.0**-24, dtype)
    w, b = rounded(rng, (7, 24), dtype), rounded(rng, (7,), dtype)
    within(posattn.linear(x[0], w, b), x[0].astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64),
           1e-5 * np.sqrt(24), 1e-5, dtype)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_plain_attention_writes_a_float32_out_of_16_bit_inputs(rng, dtype):
    """A float32 out is the float32 result, not a widened 16-bit one (a prompt and a decode step)."""
    for Lq in (37, 1):
        q, k, v = (rounded(rng, shape, dtype) for shape in ((2, 8, Lq, 32), (2, 2, 45, 32), (2, 2, 45, 32)))
        out = np.full(q.shape, np.nan, np.float32)
        posattn.attention(q, k, v, causal=True, out=out)
        expected = reference.attention(q, k, v, None, True)
        assert (np.abs(out - expected) <= 2e-5 + 1e-5 * np.abs(expected)).all()


@pytest.mark.parametrize("D", [1, 2, 33, 65])
def test_bfloat16_channel_pairs_with_an_odd_channel_count(rng, D):
    """bfloat16 q·k and x·w multiply channel pairs where the CPU has AVX512-BF16 (an odd count's
    last channel on its own); every element against float64, into a poisoned out."""
    q, k, v = (rounded(rng, shape, BF16) for shape in ((2, 4, 40, D), (2, 2, 70, D), (2, 2, 70, 20)))
    out = np.full((2, 4, 40, 20), np.nan, np.float32)
    posattn.attention(q, k, v, causal=True, out=out)
    expected = reference.attention(q, k, v, None, True)
    assert (np.abs(out - expected) <= 2e-5 + 1e-5 * np.abs(expected)).all()
    x, w, b = rounded(rng, (9, D), BF16), rounded(rng, (37, D), BF16), rounded(rng, (37,), BF16)
    y = np.full((9, 37), np.nan, np.float32).astype(BF16)
    posattn.linear(x, w, b, out=y)
    exact = x.astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64)
    within(y, exact, 1e-5 * np.sqrt(D) * np.abs(x).max() * np.abs(w).max(), 1e-6, BF16)


def attention_args(rng, q=BF16, k=BF16, v=BF16, out=BF16):
    return dict(q=rounded(rng, (1, 4, 5, 16), q), k=rounded(rng, (1, 2, 7, 16), k), v=rounded(rng, (1, 2, 7, 16), v),
                out=np.full((1, 4, 5, 16), 7.0, np.float32).astype(out))


BAD = [
    ("attention-k-float16-q-bfloat16", posattn.attention, lambda rng: attention_args(rng, k=F16), ["'k'", "float16", "expected bfloat16"]),
    ("alibi-attention-out-float32-q-bfloat16", posattn.attention,
     lambda rng: {**attention_args(rng, out=np.float32), "alibi_slopes": posattn.alibi_slopes(4)},
     ["'out'", "float32", "expected bfloat16", "plain attention only"]),
    ("attention-q-float64", posattn.attention, lambda rng: attention_args(rng, q=np.float64, k=np.float64, v=np.float64, out=np.float64),
     ["'q'", "float64", "expected float32, float16 or bfloat16"]),
    ("attention-bfloat16-nan-in-k", posattn.attention,
     lambda rng: {**attention_args(rng), "k": np.where(np.arange(16) == 3, np.nan, rounded(rng, (1, 2, 7, 16), BF16)).astype(BF16)},
     ["'k'", "NaN or Inf"]),
    ("attention-float16-inf-in-q", posattn.attention,
     lambda rng: {**attention_args(rng, q=F16, k=F16, v=F16, out=F16), "q": np.full((1, 4, 5, 16), np.inf, F16)},
     ["'q'", "NaN or Inf"]),
    ("attention-bfloat16-on-vulkan", posattn.attention, lambda rng: {**attention_args(rng), "device": "vulkan"},
     ["posattn_attn_plain_bf16", "vulkan"]),
    ("rope-out-float16-x-bfloat16", posattn.rope,
     lambda rng: dict(x=rounded(rng, (1, 2, 3, 8), BF16), out=np.zeros((1, 2, 3, 8), F16)), ["'out'", "float16", "expected bfloat16"]),
    ("learned-table-float16-x-bfloat16", posattn.learned_add,
     lambda rng: dict(x=rounded(rng, (1, 3, 8), BF16), table=rounded(rng, (5, 8), F16), positions=np.arange(3, dtype=np.int32),
                      out=np.zeros((1, 3, 8), BF16)), ["'table'", "float16", "expected bfloat16"]),
    ("linear-bias-float32-x-float16", posattn.linear,
     lambda rng: dict(x=rounded(rng, (3, 4), F16), weight=rounded(rng, (2, 4), F16), bias=np.zeros(2, np.float32),
                      out=np.zeros((3, 2), F16)), ["'bias'", "float32", "expected float16"]),
    ("sinusoidal-dtype-float64", posattn.sinusoidal, lambda rng: dict(positions=np.arange(3, dtype=np.int32), d=8, dtype="float64"),
     ["'dtype'", "float64", "expected float32, float16 or bfloat16"]),
    ("sinusoidal-dtype-unknown", posattn.sinusoidal, lambda rng: dict(positions=np.arange(3, dtype=np.int32), d=8, dtype="half-ish"),
     ["'dtype'", "half-ish"]),
    ("integer-out-int16", posattn.integer, lambda rng: dict(positions=np.arange(3, dtype=np.int32), d=8, out=np.zeros((3, 8), np.int16)),
     ["'out'", "int16"]),
    ("floater-p0-bfloat16", posattn.floater,  # (FLOATER's ODE state stays float32: kernels.json)
     lambda rng: dict(num_positions=4, p0=rounded(rng, (8,), BF16), W1=np.zeros((5, 9), np.float32), b1=np.zeros(5, np.float32),
                      W2=np.zeros((8, 6), np.float32), b2=np.zeros(8, np.float32)), ["'p0'", "bfloat16", "expected float32"]),
]


@pytest.mark.parametrize("name, function, make, fragments", [pytest.param(*c, id=c[0]) for c in BAD])
def test_a_type_mismatch_is_a_clear_error_and_writes_nothing(rng, name, function, make, fragments):
    kwargs = make(rng)
    snapshot = {key: value.copy() for key, value in kwargs.items() if isinstance(value, np.ndarray)}
    with pytest.raises(posattn.Error) as info:
        function(**kwargs)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    for key, before in snapshot.items():
        assert np.array_equal(kwargs[key].view(np.uint8), before.view(np.uint8)), key


x86_native = pytest.mark.skipif(platform.machine() != "x86_64" or not NATIVE_BUILD, reason="x86's AVX512-BF16 level")


@x86_native
@pytest.mark.parametrize("function", ["posattn_attn_plain_bf16", "posattn_attn_alibi_bf16", "posattn_attn_plain_bf16_f32_window",
                                      "posattn_linear_bf16"])
def test_bfloat16_products_take_pairs_on_avx512_bf16(function):
    """bfloat16 instances hold an avx512_zen4 level (the manifest's x86_levels), whose q·k (x·w)
    takes vdpbf16ps; the other levels have no such instruction. (This machine runs that level
    where its CPU has AVX512-BF16: the harness's bfloat16 cases then check its results.)"""
    levels = isa_levels(BUILD / f"lib{function}.a")
    assert len(levels) == 5, sorted(levels)
    for name, code in levels.items():
        assert ("vdpbf16ps" in code) == ("avx512_zen4" in name), name


@x86_native
def test_the_avx512_zen4_level_runs_on_intel_too():
    """The level is compiled for Zen 4 (LLVM's znver4), and posattn's runtime runs it on any CPU
    with its AVX-512 extensions, Intel's Sapphire Rapids too: so it must hold none of AMD's own
    instructions (SSE4a's extrq, insertq, movntss, movntsd), which LLVM may pick for znver4."""
    leveled = [k for k in manifest() if k.get("x86_levels")]
    archives = [BUILD / f"lib{k['function']}.a" for k in leveled] + [BUILD / f"{k['function']}_nontemporal.a" for k in leveled if k.get("nontemporal")]
    assert archives
    for archive in archives:
        for name, code in isa_levels(archive).items():
            if "avx512_zen4" in name:
                assert not re.search(r"\s(extrq|insertq|movntss|movntsd)\s", code), (archive.name, name)


@x86_native
def test_the_cpu_with_avx512_bf16_runs_the_avx512_zen4_level():
    """Which level ran shows in a subnormal input (contract §15): vdpbf16ps reads a bfloat16 q
    channel of 2^-130 as 0, so two keys whose scores are 2^-130 · 2^126 = 2^-4 and 0 get equal
    weights on a CPU with AVX512-BF16's extensions (posattn's runtime runs the level there,
    runtime/src/cpu_features.cpp), and softmax(2^-4 · scale, 0) on any other."""
    sys.path.insert(0, str(ROOT / "tune"))
    import tune  # (the tuner's test of the CPU, the runtime's)
    paired = tune.host_target("posattn_attn_plain_bf16_f32") == "x86-64-linux-avx512_zen4"
    D = 16
    q, k, v = np.zeros((1, 1, 64, D), BF16), np.zeros((1, 1, 2, D), BF16), np.zeros((1, 1, 2, D), BF16)
    q[..., 0], k[0, 0, 0, 0], v[0, 0, 0, :] = 2.0**-130, 2.0**126, 1.0
    out = posattn.attention(q, k, v, out=np.full((1, 1, 64, D), np.nan, np.float32))
    logit = 2.0**-4 / np.sqrt(D)
    expected = 0.5 if paired else np.exp(logit) / (np.exp(logit) + 1)
    assert np.allclose(out, expected, rtol=2.0**-20), (paired, out[0, 0, 0, 0])
