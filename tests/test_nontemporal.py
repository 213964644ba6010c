"""Non-temporal output stores on x86: the twins of the manifest's "nontemporal" kernels
(cmake/nontemporal_outputs.py), which the runtime runs for outputs of at least a quarter of the
last-level cache (smaller ones are stored as usual, to stay cached for their consumer).
The harness's cases are small, so the suite exercises the ordinary stores; here every harness case
of those kernels runs again with non-temporal stores forced (POSATTN_STREAMING_THRESHOLD=0): odd
sizes and rows at every alignment (the twins' three kinds of store), tail tiles, both layouts of
the pair views, strided outputs, RoPE in place."""
import gc
import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, NATIVE_BUILD, ROOT, isa_levels, manifest

import posattn
from posattn import reference

x86_only = pytest.mark.skipif(platform.machine() != "x86_64" or not NATIVE_BUILD,
                              reason="non-temporal output stores are x86's")


def twinned_kernels():
    return sorted(k["function"] for k in manifest() if k.get("nontemporal"))


@x86_only
def test_every_streaming_case_passes_with_non_temporal_stores(tmp_path):
    functions = twinned_kernels()
    assert functions
    coverage = tmp_path / "harness.json"
    selection = "x86:hand and (" + " or ".join(f"{f}." for f in functions) + ")"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", selection,
                          str(ROOT / "tests" / "test_kernels.py")],
                         env={**os.environ, "POSATTN_STREAMING_THRESHOLD": "0", "POSATTN_COVERAGE": str(coverage)},
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    rows = {row["kernel"]: row for row in json.loads(coverage.read_text())}
    assert sorted(rows) == functions
    assert all(row.get("passed", 0) > 0 and row.get("failed", 0) == 0 for row in rows.values()), rows


@x86_only
@pytest.mark.parametrize("function", twinned_kernels())
def test_twins_store_their_outputs_non_temporally_and_fence_them(function):
    """Each ISA level's object of the twin streams (movnt*) and fences (sfence); the kernel itself
    does neither."""
    levels = isa_levels(BUILD / f"{function}_nontemporal.a")
    added = next(k for k in manifest() if k["function"] == function).get("x86_levels", [])
    assert len(levels) == 4 + len(added), sorted(levels)  # x86's four ISA levels and its type's
    for name, code in levels.items():
        assert "movnt" in code and "sfence" in code, name
    assert not any("movnt" in code for code in isa_levels(BUILD / f"lib{function}.a").values())


def test_the_outputs_posattn_allocates_start_on_a_cache_line():
    """Where the caller passes no `out`, the output is 64-byte aligned (whole lines for the twins'
    non-temporal stores), C-contiguous, holds the kernel's values, and owns its memory (every
    platform: the bindings allocate them)."""
    rng = np.random.default_rng(7)
    outputs = []
    for shape, d in (((3, 17), 96), ((5,), 33), ((1, 1), 1), ((2, 0), 8)):
        positions = rng.integers(-1000, 1000, size=shape).astype(np.int32)
        out = posattn.integer(positions, d)
        assert out.ctypes.data % 64 == 0 and out.shape == shape + (d,) and out.flags.c_contiguous
        outputs.append((out, reference.integer(positions, d)))
    gc.collect()
    for out, expected in outputs:
        np.testing.assert_array_equal(out, expected)
