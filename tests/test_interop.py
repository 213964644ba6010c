"""Tensors of other libraries through DLPack, and HF configs as HF code holds them."""
import numpy as np
import pytest

import posattn
from posattn import reference


xp = pytest.importorskip("array_api_strict")  # (a library of its own tensors with DLPack; torch: test_torch.py)


def test_another_librarys_tensors_in_give_its_tensors_out(rng):
    q, k, v = (rng.standard_normal((1, 2, 9, 8)).astype(np.float32) for _ in range(3))
    out = posattn.attention(xp.asarray(q), xp.asarray(k), v, causal=True)
    assert isinstance(out, type(xp.asarray(q)))
    np.testing.assert_allclose(np.from_dlpack(out), reference.attention(q, k, v, causal=True), rtol=2e-5, atol=2e-6)
    real, imag = posattn.complex_order(xp.asarray(np.arange(5)), np.arange(5), *(rng.random((6, 4), np.float32) for _ in range(2)))
    assert all(isinstance(a, type(xp.asarray(q))) for a in (real, imag))


def test_an_output_tensor_of_another_library_is_written_in_place_and_returned(rng):
    table = rng.standard_normal((10, 6)).astype(np.float32)
    positions = rng.integers(0, 10, size=(2, 5))
    out = xp.asarray(np.full((2, 5, 6), np.nan, np.float32))
    assert posattn.learned(table, positions, out=out) is out
    np.testing.assert_array_equal(np.from_dlpack(out), reference.learned(table, positions))
    x = xp.asarray(rng.standard_normal((1, 2, 7, 8)).astype(np.float32))
    expected = reference.rope(np.from_dlpack(x).copy(), np.arange(7), reference.rope_inv_freq(8)[0])
    assert posattn.rope(x, out=x) is x  # in place
    np.testing.assert_allclose(np.from_dlpack(x), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("params, max_positions, equivalent", [
    ({"rope_theta": 5e5, "rope_type": "default", "partial_rotary_factor": 0.5}, None, dict(base=5e5, rotary_dim=32)),
    # YaRN without 'factor' (DeepSeek-V3's configs): HF takes the ratio of the model's lengths.
    ({"rope_theta": 1e4, "rope_type": "yarn", "factor": None, "original_max_position_embeddings": 32, "beta_fast": 32.0},
     128, dict(scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32})),
    ({"rope_theta": 5e5, "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 64}, None,
     dict(base=5e5, scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 64})),
])
def test_hf_rope_parameters_as_they_are(rng, params, max_positions, equivalent):
    """An HF config's rope_parameters dict, given as it is to attention and rope, computes what the
    equivalent older arguments (base, rotary_dim, rope_scaling keys) compute."""
    q, k, v = (rng.standard_normal((1, 2, 40, 64)).astype(np.float32) for _ in range(3))
    given = {"rope_parameters": params, **({"max_position_embeddings": max_positions} if max_positions else {})}
    np.testing.assert_array_equal(posattn.attention(q, k, v, causal=True, rope=given),
                                  posattn.attention(q, k, v, causal=True, rope=equivalent))
    if max_positions is None:
        np.testing.assert_array_equal(posattn.rope(q, rope_parameters=params), posattn.rope(q, **equivalent))


def test_hf_rope_parameters_errors_name_what_is_missing(rng):
    q = rng.standard_normal((1, 2, 8, 16)).astype(np.float32)
    yarn = {"rope_theta": 1e4, "rope_type": "yarn", "original_max_position_embeddings": 32}
    with pytest.raises(posattn.Error, match="yarn without 'factor'.*'max_position_embeddings'"):
        posattn.attention(q, q, q, rope={"rope_parameters": yarn})
    with pytest.raises(posattn.Error, match="no 'rope_theta'"):
        posattn.rope(q, rope_parameters={"rope_type": "default"})
    with pytest.raises(posattn.Error, match="partial_rotary_factor 1.5"):
        posattn.rope(q, rope_parameters={"rope_theta": 1e4, "partial_rotary_factor": 1.5})
