"""Every kernel case on every backend present, against float64: the CPU family of this build
(x86, or arm under qemu) and each GPU API's kernels (opencl on PoCL, vulkan on lavapipe, cuda
where a device is present; otherwise its cases are skipped with the reason). On the APIs that
take device buffers the caller owns (cuda, opencl), every case runs a second time with its
float32 operands as such buffers: family "<api>-buffers"; on every GPU API, a third time with
every array operand a view with negative and padded strides in every outer axis: "<api>-reversed".

The autoscheduler builds ("adams2019", or the kernel's own choice in the manifest) are benchmark baselines: Halide's autoschedulers assume
sizes of at least their estimates, so they are checked by the benchmark at its sizes (against
the hand-scheduled kernel), not here."""

import numpy as np
import pytest

import posattn
from cases import all_cases
from conftest import BASELINES, NATIVE_BUILD, cuda_devices, manifest, manifest_functions
from harness import check

GPU_APIS = ("cuda", "opencl", "vulkan")
BUFFER_APIS = ("cuda", "opencl")


# A GPU API with no device here: its cases are skipped, by name, with the reason. (OpenCL and
# Vulkan always run here, on PoCL and lavapipe.)
MISSING_DEVICES = {} if cuda_devices() else {"cuda": "no CUDA device on this machine (PTX checked by ptxas instead)"}

COMPILED = [(k["function"], k["family"], k["schedule"]) for k in posattn.kernels()]
CASES = all_cases(built={function for function, _, _ in COMPILED})
FAMILIES = [(function, family, schedule) for function, family, schedule in COMPILED if schedule == "hand"]
FAMILIES += [(function, f"{family}-{view}", schedule) for function, family, schedule in FAMILIES
             for view, apis in (("buffers", BUFFER_APIS), ("reversed", GPU_APIS)) if family in apis]
PARAMS = [pytest.param(case, family, schedule, id=f"{case.function}.{family}:{schedule}/{case.name}")
          for case in CASES for function, family, schedule in FAMILIES if function == case.function]


@pytest.mark.parametrize("case, family, schedule", PARAMS)
def test_kernel_matches_float64_reference(case, family, schedule, rng, monkeypatch, request):
    api, _, view = family.partition("-")
    if api in MISSING_DEVICES:
        pytest.skip(MISSING_DEVICES[api])
    if view == "buffers":
        from device_buffers import APIS, patch_device_buffers
        memory = APIS[api]()
        request.addfinalizer(memory.release)
        patch_device_buffers(memory, monkeypatch)
    if view == "reversed":
        from reversed_views import patch_reversed_views
        patch_reversed_views(monkeypatch)
    device = api if api in GPU_APIS else "cpu"
    actual, expected, atol, rtol, before, after = case.run(rng, dict(schedule=schedule, device=device))
    if view == "buffers":
        assert memory.buffers, "no operand of the case reached a device buffer"
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
        if BASELINES:
            assert len(schedules) >= 2, (function, schedules)


def test_every_kernel_is_built_for_each_gpu_api_or_says_why_not():
    if not NATIVE_BUILD:
        pytest.skip("GPU kernels are built by the host's own build only")
    for kernel in manifest():
        families = {family for function, family, _ in COMPILED if function == kernel["function"]}
        for api in GPU_APIS:
            why = kernel.get("not_on", {}).get(api)
            assert (api in families) != bool(why), (kernel["function"], api, why)


def test_case_names_are_unique():
    names = [p.id for p in PARAMS]
    assert len(names) == len(set(names))
