"""Arrays from other libraries through DLPack, as HF code holds them."""
import numpy as np
import pytest

import posattn
from posattn import reference


class Parameter:
    """A torch nn.Parameter's DLPack behaviour: its export refuses while it requires grad, and
    detach() gives the same memory without the flag."""

    def __init__(self, array, requires_grad=True):
        self.array, self.requires_grad = array, requires_grad

    def detach(self):
        return Parameter(self.array, requires_grad=False)

    def __dlpack__(self, **kwargs):
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_a_tensor_that_requires_grad_is_read_without_the_callers_detach(rng):
    table = rng.standard_normal((10, 6)).astype(np.float32)
    positions = rng.integers(0, 10, size=(2, 5)).astype(np.int32)
    out = posattn.learned(Parameter(table), Parameter(positions))
    np.testing.assert_array_equal(out, reference.learned(table, positions))


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
