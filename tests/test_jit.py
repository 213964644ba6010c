"""posattn.jit: kernels compiled at run time by posattn's generators, loaded into the runtime and
called through it. The default params compile the AOT kernel itself (the same bits); other
schedule params and GPU APIs are checked against the float64 reference; the disk cache serves a
second process without compiling; bad arguments are refused naming the argument."""
import os
import subprocess
import sys

import numpy as np
import pytest

import posattn
from conftest import LIBRARY_DIR, NATIVE_BUILD
from posattn import reference

pytestmark = pytest.mark.skipif(not NATIVE_BUILD, reason="the generators run on the host only")
# (posattn::jit itself, runtime/src/jit.cpp, is also tested from C++: tests/cpp/runtime_test.cpp.)


@pytest.fixture(autouse=True)
def jit_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "jit-cache"
    monkeypatch.setenv("POSATTN_JIT_CACHE", str(cache))
    return cache


def test_default_params_compile_the_aot_kernel_bit_for_bit(rng):
    q, k, v = (rng.standard_normal((2, 4, 37, 64), dtype=np.float32) for _ in range(3))
    slopes = posattn.alibi_slopes(4)
    schedule = posattn.jit("posattn_attn_alibi_f32")
    assert schedule.startswith("jit_") and schedule in {e["schedule"] for e in posattn.kernels()}
    aot = posattn.attention(q, k, v, alibi_slopes=slopes, causal=True)
    assert np.array_equal(posattn.attention(q, k, v, alibi_slopes=slopes, causal=True, schedule=schedule), aot)
    x = rng.standard_normal((1, 3, 29, 48), dtype=np.float32)
    assert np.array_equal(posattn.rope(x, schedule=posattn.jit("posattn_rope_f32")), posattn.rope(x))
    assert posattn.jit("posattn_attn_alibi_f32") == schedule  # (loaded once per process)


def test_other_schedule_params_match_the_reference(rng):
    q = rng.standard_normal((1, 8, 45, 64), dtype=np.float32)
    k, v = (rng.standard_normal((1, 2, 70, 64), dtype=np.float32) for _ in range(2))
    out = np.full((1, 8, 45, 64), np.nan, dtype=np.float32)
    schedule = posattn.jit("posattn_attn_plain_f32", schedule_params={"vector_width": 4, "query_tile": 8, "value_rows": 4, "key_block": 64})
    posattn.attention(q, k, v, causal=True, out=out, schedule=schedule)
    np.testing.assert_allclose(out, reference.attention(q, k, v, causal=True), rtol=0, atol=2e-6)


def test_a_gpu_api_kernel(rng):
    if "opencl" not in {e["family"] for e in posattn.kernels()}:
        pytest.skip("this build has no OpenCL kernels")
    positions = rng.integers(0, 5000, size=(3, 77)).astype(np.int32)
    schedule = posattn.jit("posattn_integer_f32", schedule_params={"channel_threads": 16, "row_threads": 4},
                           device="opencl")
    out = posattn.integer(positions, 24, schedule=schedule, device="opencl")
    np.testing.assert_array_equal(out, reference.integer(positions, 24).astype(np.float32))


def test_a_float16_kernel_gets_its_storage_types_target_features(rng):
    """A Vulkan float16 kernel needs vk_float16 in its target (kernels.json gpu_features): jit's
    default compiles it with them, so its result is the AOT kernel's."""
    if "posattn_integer_add_f16" not in {e["function"] for e in posattn.kernels() if e["family"] == "vulkan"}:
        pytest.skip("this build has no Vulkan float16 kernels")
    x = rng.standard_normal((2, 33, 40), dtype=np.float32).astype(np.float16)
    positions = rng.integers(0, 5000, size=(2, 33)).astype(np.int32)
    schedule = posattn.jit("posattn_integer_add_f16", device="vulkan")
    out = posattn.integer_add(x, positions, schedule=schedule, device="vulkan")
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, posattn.integer_add(x, positions, device="vulkan"))


def test_the_disk_cache_serves_another_process_without_compiling(jit_cache):
    posattn.jit("posattn_attn_alibi_f32")
    before = {p: p.stat().st_mtime_ns for p in jit_cache.rglob("*.so")}
    code = "import posattn; print(posattn.jit('posattn_attn_alibi_f32'))"
    env = dict(os.environ, PYTHONPATH=str(LIBRARY_DIR / "python"), CXX="/bin/false")  # (any compile fails)
    schedule = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert schedule.strip() == posattn.jit("posattn_attn_alibi_f32")
    assert {p: p.stat().st_mtime_ns for p in jit_cache.rglob("*.so")} == before
    assert not list(jit_cache.glob(".compiling.*"))


@pytest.mark.parametrize("arguments, error, message", [
    (dict(function="posattn_attn_nothing_f32"), posattn.Error, r"argument 'function' is 'posattn_attn_nothing_f32'"),
    (dict(function=3), posattn.ArgumentTypeError, r"argument 'function' must be a str"),
    (dict(function="posattn_rope_f32", device="tpu"), posattn.Error, r"argument 'device' is 'tpu'"),
    (dict(function="posattn_rope_f32", params=["variant=t5"]), posattn.ArgumentTypeError, r"argument 'params' must be a dict"),
    (dict(function="posattn_rope_f32", params={"no_such_param": 1}), posattn.Error,
     r"argument 'params': .*no_such_param"),
    (dict(function="posattn_rope_f32", schedule_params={"vector_width": [4]}), posattn.ArgumentTypeError,
     r"argument 'schedule_params' must be a dict"),
    (dict(function="posattn_rope_f32", schedule_params={"no_such_field": 4}), posattn.Error,
     r"argument 'schedule_params': posattn: unknown schedule parameter 'no_such_field'"),
    (dict(function="posattn_attn_plain_f32", schedule_params={"key_streams": 3}), posattn.Error,
     r"argument 'schedule_params': .*key_streams"),
    (dict(function="posattn_rope_f32", schedule_params={"vector_width": "8,rows_per_task:4"}), posattn.Error,
     r"argument 'schedule_params': 'vector_width': '8,rows_per_task:4' holds one of"),
])
def test_bad_arguments_are_refused_naming_them(arguments, error, message):
    with pytest.raises(error, match=message):
        posattn.jit(**arguments)
