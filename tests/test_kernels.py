"""Every kernel case on every backend present, against float64.

The autoscheduler builds ("adams2019", or the kernel's own choice in the manifest) are benchmark baselines: Halide's autoschedulers assume
sizes of at least their estimates, so they are checked by the benchmark at its sizes (against
the hand-scheduled kernel), not here."""
import numpy as np
import pytest

import posattn
from cases import all_cases
from conftest import NATIVE_BUILD, manifest_functions
from harness import check

CASES = all_cases()
COMPILED = [(k["function"], k["family"], k["schedule"]) for k in posattn.kernels()]
PARAMS = [pytest.param(case, family, schedule, id=f"{case.function}.{family}:{schedule}/{case.name}")
          for case in CASES for function, family, schedule in COMPILED
          if function == case.function and schedule == "hand"]


@pytest.mark.parametrize("case, family, schedule", PARAMS)
def test_kernel_matches_float64_reference(case, family, schedule, rng):
    actual, expected, atol, rtol, before, after = case.run(rng, schedule)
    check(actual, expected, atol, rtol)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b, err_msg="an input was modified")


def test_every_manifest_kernel_is_compiled_and_has_cases():
    functions = manifest_functions()
    assert sorted({f for f, _, _ in COMPILED}) == sorted(functions)
    assert sorted({c.function for c in CASES}) == sorted(functions)
    for function in functions:
        schedules = {s for f, _, s in COMPILED if f == function}
        assert "hand" in schedules, (function, schedules)
        if NATIVE_BUILD:
            assert len(schedules) >= 2, (function, schedules)


def test_case_names_are_unique():
    names = [p.id for p in PARAMS]
    assert len(names) == len(set(names))
