import collections
import ctypes
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The build under test: build/ (the host's), or another family's (POSATTN_BUILD=build-arm, run by
# scripts/test_arm.sh on that family's Python under qemu).
BUILD = ROOT / os.environ.get("POSATTN_BUILD", "build")
# The runtime and Python module under test: the build's, or (POSATTN_SANITIZED=1, run by
# scripts/test_sanitized.sh) the same built with ASan + UBSan in <build>/sanitized/.
LIBRARY_DIR = BUILD / "sanitized" if os.environ.get("POSATTN_SANITIZED") == "1" else BUILD
sys.path.insert(0, str(LIBRARY_DIR / "python"))
sys.path.insert(0, str(ROOT / "cmake"))
import manifest as _manifest  # noqa: E402 (cmake/manifest.py)
# A build for this host (not a cross build, scripts/build_arm.sh) has the GPU kernels, and its
# autoscheduled baselines where configured with POSATTN_BASELINES=ON (make bench).
_CACHE = (BUILD / "CMakeCache.txt").read_text()
NATIVE_BUILD = "CMAKE_TOOLCHAIN_FILE:" not in _CACHE
BASELINES = NATIVE_BUILD and "POSATTN_BASELINES:BOOL=OFF" not in _CACHE


def cuda_devices():
    """The number of CUDA devices the driver reports (0 without a driver)."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


# Vulkan's loader (lavapipe here) wants a runtime directory.
os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

# Fresh random inputs every run; the seed is printed so a failure can be replayed with
# POSATTN_SEED=<seed> make test.
SEED = int(os.environ.get("POSATTN_SEED", int.from_bytes(os.urandom(4), "little")))


def pytest_report_header(config):
    return f"posattn: random seed {SEED} (replay with POSATTN_SEED={SEED})"


@pytest.fixture
def rng(request):
    # One stream per test, derived from the run's seed and the test's name.
    return np.random.default_rng([SEED, abs(hash(request.node.nodeid)) % (2**32)])


def manifest():
    """kernels.json's kernels, a kernel per storage dtype (cmake/manifest.py)."""
    return _manifest.kernels()


def isa_levels(library):
    """The disassembly of each ISA level's object in a multi-target kernel archive (objdump -d
    prints "<member>:     file format ..." before each member's code), Halide's dispatch wrapper aside."""
    text = subprocess.run(["objdump", "-d", str(library)], check=True, capture_output=True, text=True).stdout
    parts = re.split(r"^(\S+\.o):\s+file format.*$", text, flags=re.M)
    return {name: code for name, code in zip(parts[1::2], parts[2::2]) if "wrapper" not in name}


def manifest_functions():
    return [k["function"] for k in manifest()]


# This leg's coverage (kernel × backend outcomes of the harness), written to <build>/harness.json
# (or POSATTN_COVERAGE) for scripts/coverage.py, which prints the matrix over every backend's leg.
COVERAGE_FILE = pathlib.Path(os.environ.get("POSATTN_COVERAGE", BUILD / "harness.json"))
HARNESS_TEST = "test_kernel_matches_float64_reference["
_coverage = collections.defaultdict(collections.Counter)
_skip_reasons = collections.defaultdict(set)


def pytest_runtest_logreport(report):
    case = report.nodeid.partition(HARNESS_TEST)[2]
    if case and (report.when == "call" or report.outcome != "passed"):
        kernel, _, family = case.partition(":")[0].rpartition(".")
        _coverage[(kernel, family)][report.outcome] += 1
        if report.skipped:
            _skip_reasons[(kernel, family)].add(report.longrepr[2].removeprefix("Skipped: "))


def pytest_sessionfinish(session):
    if _coverage:
        rows = [dict(kernel=k, family=f, skip_reasons=sorted(_skip_reasons[(k, f)]), **counts)
                for (k, f), counts in sorted(_coverage.items())]
        COVERAGE_FILE.write_text(json.dumps(rows, indent=1))


@pytest.fixture(params=["opencl", "cuda"])
def device_buffers(request):
    """A GPU API's device buffers (tests/device_buffers.py), released after the test. OpenCL runs on
    PoCL here; CUDA where a device is (scripts/gpu_check.sh), skipped by name elsewhere."""
    if not NATIVE_BUILD:
        pytest.skip("a cross build has no GPU APIs")
    if request.param == "cuda" and not cuda_devices():
        pytest.skip("no CUDA device on this machine")
    from device_buffers import APIS
    buffers = APIS[request.param]()
    try:
        yield buffers
    finally:
        buffers.release()
