import json
import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build" / "python"))

# Fresh random inputs every run; the seed is printed so a failure can be replayed with
# POSATTN_SEED=<seed> make test.
SEED = int(os.environ.get("POSATTN_SEED", int.from_bytes(os.urandom(4), "little")))


def pytest_report_header(config):
    return f"posattn: random seed {SEED} (replay with POSATTN_SEED={SEED})"


@pytest.fixture
def rng(request):
    # One stream per test, derived from the run's seed and the test's name.
    return np.random.default_rng([SEED, abs(hash(request.node.nodeid)) % (2**32)])


def manifest_functions():
    return [k["function"] for k in json.loads((ROOT / "kernels.json").read_text())["kernels"]]
