"""torch tensors as HF code holds them: parameters that require grad, torch in → torch out (zero
copy), out= a torch tensor. Runs where torch is installed: `make peers` (.venv-peers)."""
import numpy as np
import pytest

import posattn
from posattn import reference

torch = pytest.importorskip("torch")


def test_parameters_that_require_grad_are_read_without_the_callers_detach(rng):
    table = torch.nn.Parameter(torch.from_numpy(rng.standard_normal((10, 6)).astype(np.float32)))
    positions = torch.from_numpy(rng.integers(0, 10, size=(2, 5)))
    out = posattn.learned(table, positions)
    assert isinstance(out, torch.Tensor) and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), reference.learned(table.detach().numpy(), positions.numpy()))


def test_torch_in_torch_out(rng):
    q, k, v = (torch.from_numpy(rng.standard_normal((2, 4, 9, 16)).astype(np.float32)) for _ in range(3))
    mask = torch.from_numpy((rng.random((9, 9)) < 0.7) | np.eye(9, dtype=bool))  # (SDPA: NaN for an empty row)
    out = posattn.attention(q, k, v, mask=mask)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (2, 4, 9, 16)
    expected = reference.attention(q.numpy(), k.numpy(), v.numpy(), mask=mask.numpy())
    np.testing.assert_allclose(out.numpy(), expected, rtol=2e-5, atol=2e-6)
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, sdpa, rtol=2e-5, atol=2e-5)


def test_out_is_a_torch_tensor_written_in_place(rng):
    x = torch.from_numpy(rng.standard_normal((1, 2, 7, 8)).astype(np.float32))
    out = torch.full_like(x, float("nan"))
    address = out.data_ptr()
    assert posattn.rope(x, out=out) is out and out.data_ptr() == address
    expected = reference.rope(x.numpy(), np.arange(7), reference.rope_inv_freq(8)[0])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_an_output_that_requires_grad_is_refused_untouched(rng):
    x = torch.from_numpy(rng.standard_normal((1, 2, 7, 8)).astype(np.float32))
    out = torch.nn.Parameter(torch.full_like(x, 3.0))
    with pytest.raises(posattn.Error, match="argument 'out' requires grad"):
        posattn.rope(x, out=out)
    assert bool((out.detach() == 3.0).all())


def test_a_tensor_numpy_cannot_read_is_a_posattn_error():
    with pytest.raises(posattn.Error, match="argument 'table'.*float8.*expected host float32"):
        posattn.learned(torch.zeros((4, 8), dtype=torch.float8_e4m3fn), np.arange(3))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_tensors_in_and_out(rng, dtype):
    """bfloat16 (which NumPy's DLPack cannot carry) and float16 tensors in, the same dtype out,
    out= in place; the values as the float32 math on the rounded inputs, rounded once."""
    dtype = getattr(torch, dtype)
    q, k, v = (torch.from_numpy(rng.standard_normal((1, 4, 9, 16)).astype(np.float32)).to(dtype) for _ in range(3))
    out = posattn.attention(q, k, v, causal=True)
    assert isinstance(out, torch.Tensor) and out.dtype == dtype
    expected = reference.attention(*(t.float().numpy() for t in (q, k, v)), causal=True)
    roundoff = 2.0**-8 if dtype == torch.bfloat16 else 2.0**-11
    np.testing.assert_allclose(out.float().numpy(), expected, rtol=roundoff + 1e-5, atol=2e-5)
    table = torch.from_numpy(rng.standard_normal((10, 6)).astype(np.float32)).to(dtype)
    written = torch.empty((3, 6), dtype=dtype)
    assert posattn.learned(table, np.arange(3), out=written) is written
    assert torch.equal(written, table[:3])
