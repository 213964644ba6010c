"""The one harness: every kernel case against the float64 reference (posattn.reference).

A case builds fresh random inputs, poisons the output with NaN, runs the kernel through the
public API, then checks every element against the reference within the kernel's tolerance and
that no input was modified. Case names are stable: "<function>.<family>:<schedule>/<params>".
"""
import dataclasses

import numpy as np


@dataclasses.dataclass
class Case:
    function: str  # manifest function the case exercises
    name: str      # parameters, stable across runs
    run: object    # run(rng, call) -> (actual, expected, atol, rtol, inputs_before, inputs_after);
                   # call: the API's keyword arguments schedule= and device=


def poisoned(shape):
    return np.full(shape, np.nan, dtype=np.float32)


def check(actual, expected, atol, rtol):
    """Every element within atol + rtol·|expected|; returns the max abs error."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert np.isfinite(actual).all(), "output still holds poison (NaN) or non-finite values"
    err = np.abs(actual.astype(np.float64) - expected)
    bound = atol + rtol * np.abs(expected)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert (err <= bound).all(), (
        f"max error {err.max():.3g}; at {worst}: got {actual[worst]!r}, expected {expected[worst]!r}, "
        f"bound {bound[worst]:.3g}")
    return float(err.max())
