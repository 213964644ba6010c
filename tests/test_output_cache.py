"""Outputs the binding allocates (a call without out=): freed blocks of 1 MiB and more are kept for
the next output of their size (bindings/python/output_blocks.h). A kept block is never handed out
while an array still uses it, a reused block is written whole, and the limit bounds what is kept."""
import numpy as np
import pytest

import posattn
from posattn import reference


@pytest.fixture
def cache():
    previous = posattn.set_output_cache(1 << 30)
    yield
    posattn.set_output_cache(previous)


def rope_of(x):
    return reference.rope(x, np.arange(x.shape[-2]), reference.rope_inv_freq(x.shape[-1])[0])


def test_a_freed_output_block_is_reused_whole_and_never_while_in_use(rng, cache):
    shape = (1, 4, 1024, 64)  # 1 MiB
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    first = posattn.rope(xs[0])
    second = posattn.rope(xs[1])
    assert not np.shares_memory(first, second)
    address = first.__array_interface__["data"][0]
    first[...] = np.nan  # poison: the call that reuses it must write every element
    del first
    third = posattn.rope(xs[2])
    assert third.__array_interface__["data"][0] == address  # the freed block, reused
    np.testing.assert_allclose(third, rope_of(xs[2]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(second, rope_of(xs[1]), rtol=1e-5, atol=1e-5)  # untouched


def test_outputs_of_other_sizes_and_small_outputs_take_new_blocks(rng, cache):
    x = rng.standard_normal((1, 4, 1024, 64)).astype(np.float32)
    block = posattn.rope(x)
    address = block.__array_interface__["data"][0]
    del block
    other = posattn.rope(x[:, :2])  # half the size: not the kept block
    assert other.__array_interface__["data"][0] != address
    np.testing.assert_allclose(other, rope_of(x[:, :2]), rtol=1e-5, atol=1e-5)
    small = posattn.rope(x[:, :, :4])
    np.testing.assert_allclose(small, rope_of(x[:, :, :4]), rtol=1e-5, atol=1e-5)


def test_the_limit_bounds_what_is_kept(rng):
    x = rng.standard_normal((1, 4, 1024, 64)).astype(np.float32)
    previous = posattn.set_output_cache(0)
    try:
        assert posattn.set_output_cache(0) == 0
        blocks = [posattn.rope(x) for _ in range(3)]
        del blocks  # given back, none kept
        np.testing.assert_allclose(posattn.rope(x), rope_of(x), rtol=1e-5, atol=1e-5)
    finally:
        posattn.set_output_cache(previous)


@pytest.mark.parametrize("value, error", [(-1, posattn.Error), (1.5, posattn.ArgumentTypeError), ("1", posattn.ArgumentTypeError)])
def test_a_bad_limit_is_refused_naming_it(value, error):
    with pytest.raises(error, match="'bytes'"):
        posattn.set_output_cache(value)
