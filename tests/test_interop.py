"""Arrays from other libraries through DLPack, as HF code holds them."""
import numpy as np

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
