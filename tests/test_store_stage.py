"""The x86 store stage (generators/store_stage.h, runtime/src/streaming_store.cpp; the manifest's
kernels with store_stage=true) writes outputs of at least a quarter of the last-level cache with
non-temporal stores and smaller ones with ordinary stores. The harness's cases are small, so the
suite exercises the ordinary stores; here every harness case of those kernels runs again with
non-temporal stores forced (POSATTN_STREAMING_THRESHOLD=0): odd sizes and unaligned rows, tail
tiles, both RoPE layouts (gptj's interleaved pairs), strided outputs, RoPE in place."""
import json
import os
import platform
import subprocess
import sys

import pytest

from conftest import ROOT, manifest


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the store stage is x86's")
def test_every_staged_case_passes_with_non_temporal_stores(tmp_path):
    functions = sorted(k["function"] for k in manifest() if "store_stage=true" in k["params"])
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
