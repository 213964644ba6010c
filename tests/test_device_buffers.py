"""posattn.DeviceArray through the Python API: calls on caller-owned device buffers (OpenCL on
PoCL here; CUDA where a device is), against the float64 reference, and the errors around them.
(Every harness case also runs on device buffers: test_kernels.py, families "<api>-buffers".)"""
import numpy as np
import pytest

import posattn
from posattn import reference


def test_attention_reads_and_writes_device_arrays(device_buffers, rng):
    """q, k, v and out as DeviceArrays used in place (out returned), every element against the
    reference, inputs unchanged; a host k mixes in."""
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 6, 16), (2, 2, 10, 16), (2, 2, 10, 8)))
    poison = np.full((2, 4, 6, 8), np.nan, np.float32)
    handles = [device_buffers.buffer(a) for a in (q, k, v, poison)]
    arrays = [posattn.DeviceArray(h, a.shape) for h, a in zip(handles, (q, k, v, poison))]
    result = posattn.attention(arrays[0], k, arrays[2], causal=True, key_lengths=[9, 10], out=arrays[3],
                               device=device_buffers.api)
    assert result is arrays[3]
    np.testing.assert_allclose(device_buffers.read(handles[3], poison),
                               reference.attention(q, k, v, None, True, [9, 10]), atol=2e-5, rtol=0)
    for handle, a in zip(handles, (q, k, v)):
        np.testing.assert_array_equal(device_buffers.read(handle, a), a)


def test_device_array_errors(device_buffers, rng):
    q = rng.standard_normal((1, 2, 3, 8)).astype(np.float32)
    device_q = posattn.DeviceArray(device_buffers.buffer(q), q.shape)
    with pytest.raises(posattn.Error, match="'q' is device memory; expected a call on its device"):
        posattn.attention(device_q, q, q, device="cpu")
    with pytest.raises(posattn.Error, match="'q' has dtype float64; expected float32"):
        posattn.attention(posattn.DeviceArray(device_q.handle, q.shape, "float64"), q, q, device=device_buffers.api)
    with pytest.raises(posattn.Error, match="a DeviceArray is device memory"):
        posattn.sinusoidal(device_q, 8)
    # A new output is host memory: device inputs with out=None give a NumPy result.
    out = posattn.attention(device_q, q, q, device=device_buffers.api)
    np.testing.assert_allclose(out, reference.attention(q, q, q), atol=2e-5, rtol=0)


def test_rope_on_device_arrays(device_buffers, rng):
    x = rng.standard_normal((1, 4, 9, 16)).astype(np.float32)
    positions = rng.integers(0, 4096, size=9).astype(np.int32)
    handle = device_buffers.buffer(x)
    array = posattn.DeviceArray(handle, x.shape)
    assert posattn.rope(array, positions, layout="gptj", out=array, device=device_buffers.api) is array
    inv, af = reference.rope_inv_freq(16)
    np.testing.assert_allclose(device_buffers.read(handle, x), reference.rope(x, positions, inv, af, "gptj", 16),
                               atol=4e-6, rtol=0)
    # A new output is host memory.
    np.testing.assert_allclose(posattn.rope(array, positions, layout="gptj", device=device_buffers.api),
                               reference.rope(device_buffers.read(handle, x), positions, inv, af, "gptj", 16),
                               atol=4e-6, rtol=0)


@pytest.mark.parametrize("in_place", [True, False])
def test_partial_rope_and_odd_sinusoid_on_device_arrays(device_buffers, rng, in_place):
    """The channels a device handle cannot view alone are written by the runtime (partial RoPE's
    pass-through by a copy of x on the device, an odd sinusoid's last channel through a host
    copy): every element checked, and the bytes of a device out past its elements left as they were."""
    x = rng.standard_normal((2, 3, 5, 12)).astype(np.float32)
    positions = rng.integers(-100, 4096, size=(2, 5)).astype(np.int32)
    x_handle = device_buffers.buffer(x)
    padded = np.full(x.size + 5, np.nan, np.float32)  # 5 more floats than out holds
    out_handle = x_handle if in_place else device_buffers.buffer(padded)
    x_array = posattn.DeviceArray(x_handle, x.shape)
    out_array = x_array if in_place else posattn.DeviceArray(out_handle, x.shape)
    posattn.rope(x_array, positions, rotary_dim=8, layout="gptj", out=out_array, device=device_buffers.api)
    inv, af = reference.rope_inv_freq(8)
    np.testing.assert_allclose(device_buffers.read(out_handle, x), reference.rope(x, positions, inv, af, "gptj", 8),
                               atol=4e-6, rtol=0)
    if not in_place:
        np.testing.assert_array_equal(device_buffers.read(x_handle, x), x)
        assert np.isnan(device_buffers.read(out_handle, padded)[x.size:]).all()

    x = rng.standard_normal((2, 7, 9)).astype(np.float32)
    positions = rng.integers(-10**6, 10**6, size=(2, 7)).astype(np.int32)
    x_handle = device_buffers.buffer(x)
    out_handle = x_handle if in_place else device_buffers.buffer(np.full(x.shape, np.nan, np.float32))
    x_array = posattn.DeviceArray(x_handle, x.shape)
    out_array = x_array if in_place else posattn.DeviceArray(out_handle, x.shape)
    posattn.sinusoidal_add(x_array, positions, out=out_array, device=device_buffers.api)
    np.testing.assert_allclose(device_buffers.read(out_handle, x), x + reference.sinusoidal(positions, 9),
                               atol=1e-6, rtol=2.0**-23)
