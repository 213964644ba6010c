"""Attention's custom variants (AttentionOptions::custom): a kernel called by its own argument names
with posattn's masks. posattn's own ALiBi kernel stands in for a kernel of one's own here (the same
bits as the alibi call); examples/custom_variant (KERPLE, FIRE), built against the install, is
checked by tests/test_package.py."""
import numpy as np
import pytest

import posattn
from posattn import reference

ALIBI = "posattn_attn_alibi_f32"


def custom(slopes, form=0, **changes):
    return dict({"kernel": ALIBI, "inputs": {"slopes": slopes}, "scalars": {"alibi_form": form}}, **changes)


def qkv(rng, B=2, Hq=4, Hkv=2, Lq=9, Lk=13, D=16):
    return [rng.normal(size=shape).astype(np.float32) for shape in ((B, Hq, Lq, D), (B, Hkv, Lk, D), (B, Hkv, Lk, D))]


@pytest.mark.parametrize("form", [0, 1, 2])
def test_a_kernel_called_by_its_argument_names_is_the_variants_call(rng, form):
    q, k, v = qkv(rng)
    slopes = reference.alibi_slopes(4).astype(np.float32)
    lengths, mask = np.array([13, 7], np.int32), rng.random((2, 1, 9, 13)) < 0.8
    out = posattn.attention(q, k, v, causal=True, key_lengths=lengths, mask=mask, custom=custom(slopes, form))
    forms = ["relative", "key_position", "symmetric"]
    np.testing.assert_array_equal(out, posattn.attention(q, k, v, causal=True, key_lengths=lengths, mask=mask,
                                                         alibi_slopes=slopes, alibi_form=forms[form]))
    expected = reference.attention(q, k, v, None, True, lengths, mask=mask, bias=reference.alibi_bias(slopes, 9, 13, forms[form])[None])
    np.testing.assert_allclose(out, expected, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("changes, message", [
    (dict(inputs={}), "argument 'custom.inputs' has no 'slopes'; expected the input 'slopes' of kernel posattn_attn_alibi_f32 \\(float32, rank 1\\)"),
    (dict(inputs={"slopes": "ok", "r3": "ok"}), "'custom.inputs' has 'r3', which kernel posattn_attn_alibi_f32 does not take"),
    (dict(inputs={"slopes": "f64"}), "argument 'custom.inputs\\['slopes'\\]' has dtype float64; expected float32"),
    (dict(inputs={"slopes": "2d"}), "argument 'custom.inputs\\['slopes'\\]' has rank 2"),
    (dict(inputs={"slopes": "nan"}), "argument 'custom.inputs\\['slopes'\\]' contains NaN"),
    (dict(inputs={"slopes": "short"}), "slopes"),  # the kernel's bounds check, before any write
    (dict(inputs={"slopes": 2.5}), "argument 'custom.inputs' has 'slopes' = 2.5 \\(float\\); expected an array"),
    (dict(scalars={}), "argument 'custom.scalars' has no 'alibi_form'; expected the scalar 'alibi_form' of kernel posattn_attn_alibi_f32 \\(int32\\)"),
    (dict(scalars={"alibi_form": 0.5}), "argument 'custom.scalars\\['alibi_form'\\]' is 0.5.*int32 \\(integral\\)"),
    (dict(scalars={"alibi_form": float("nan")}), "argument 'custom.scalars\\['alibi_form'\\]'"),
    (dict(scalars={"alibi_form": "x"}), "argument 'custom.scalars' has 'alibi_form' = 'x' \\(str\\); expected a number"),
    (dict(scalars={"alibi_form": 0, "c": 1.0}), "'custom.scalars' has 'c', which kernel posattn_attn_alibi_f32 does not take"),
    (dict(kernel="nonesuch_attention"), "no kernel nonesuch_attention"),
    (dict(kernel=3), "argument 'custom' has 'kernel' = 3 \\(int\\); expected a string"),
    (dict(inputs=[1]), "argument 'custom' has 'inputs' = \\[1\\] \\(list\\); expected a dict"),
    (dict(extra=1), "argument 'custom' has an unknown key 'extra'"),
])
def test_bad_custom_arguments_are_named_and_nothing_is_written(rng, changes, message):
    q, k, v = qkv(rng)
    slopes = reference.alibi_slopes(4).astype(np.float32)
    arrays = {"ok": slopes, "f64": slopes.astype(np.float64), "2d": slopes[None], "nan": np.where(slopes > 0.1, np.nan, slopes),
              "short": slopes[:2]}
    if isinstance(changes.get("inputs"), dict):
        changes["inputs"] = {name: arrays.get(a, a) if isinstance(a, str) else a for name, a in changes["inputs"].items()}
    out = np.full_like(q, np.nan)
    with pytest.raises(posattn.Error, match=message):
        posattn.attention(q, k, v, custom=custom(slopes, **changes), out=out)
    assert np.isnan(out).all()


def test_custom_is_one_encoding_and_custom_names_stay_outside_posattns(rng):
    q, k, v = qkv(rng)
    slopes = reference.alibi_slopes(4).astype(np.float32)
    with pytest.raises(posattn.Error, match="more than one given"):
        posattn.attention(q, k, v, alibi_slopes=slopes, custom=custom(slopes))
    with pytest.raises(posattn.ArgumentTypeError, match="argument 'custom' is 3"):
        posattn.attention(q, k, v, custom=3)
    with pytest.raises(posattn.Error, match="argument 'function' is 'posattn_kerple'.*outside posattn_"):
        posattn.load_kernel("/nonexistent.so", "kerple_attention", "posattn_kerple")
    with pytest.raises(posattn.Error, match="argument 'path'"):
        posattn.load_kernel("/nonexistent.so", "kerple_attention", "kerple_attention")
