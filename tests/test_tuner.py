"""The tuner's machinery, without timing anything: the declared search spaces, a candidate compiled
with non-default schedule params and loaded into the runtime (it must compute the same results),
constraint violations rejected at compile time, and load_kernel's errors."""
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, NATIVE_BUILD, ROOT, manifest
from posattn import reference

import posattn

pytestmark = pytest.mark.skipif(not NATIVE_BUILD, reason="the tuner runs on the host's own build")
sys.path.insert(0, str(ROOT / "tune"))


@pytest.fixture(scope="module")
def tune():
    import tune as module
    return module


def spaces():
    return json.loads(subprocess.run([str(BUILD / "posattn_search_space")], check=True, capture_output=True,
                                     text=True).stdout)


def test_every_schedule_declares_a_search_space(tune):
    declared = spaces()
    assert sorted(declared) == ["arm", "gpu", "x86"]
    for family, kinds in declared.items():
        assert sorted(kinds) == sorted(set(tune.SCHEDULE_KIND.values())), family
        for kind, fields in kinds.items():
            assert fields, (family, kind)
            for f in fields:
                assert f["default"] > 0 and f["choices"] and min(f["choices"]) > 0, (family, kind, f)
    assert {k["generator"] for k in manifest()} <= set(tune.SCHEDULE_KIND)


def test_candidate_with_other_params_loads_and_matches_reference(tune, tmp_path, rng):
    compiler = tune.Compiler("posattn_integer_add_f32", tune.host_target(), tmp_path)
    name = compiler.build({"vector_width": 8, "rows_per_task": 4})
    assert {"function": "posattn_integer_add_f32", "family": "x86", "schedule": name,
            "key": "posattn_integer_add_f32.x86"} in posattn.kernels()
    x = rng.standard_normal((3, 37, 21)).astype(np.float32)
    positions = rng.integers(-5000, 5000, size=(3, 37)).astype(np.int32)
    out = np.full_like(x, np.nan)
    posattn.integer_add(x, positions, out=out, schedule=name)
    np.testing.assert_allclose(out, x + reference.integer(positions, 21), rtol=2**-23, atol=0)


def test_autoscheduler_candidate_loads(tune, tmp_path, rng):
    name = tune.Compiler("posattn_integer_f32", tune.host_target(), tmp_path).build(autoscheduler="Mullapudi2016")
    # (An autoscheduled build assumes sizes near the generator's estimates: [8, 4096, 1024].)
    positions = rng.integers(-5000, 5000, size=(2, 4096)).astype(np.int32)
    np.testing.assert_array_equal(posattn.integer(positions, 1024, schedule=name), reference.integer(positions, 1024))


def test_constraint_violation_is_rejected_at_compile_time(tune, tmp_path):
    compiler = tune.Compiler("posattn_attn_plain_f32", tune.host_target(), tmp_path)
    with pytest.raises(RuntimeError, match="query_tile must be a multiple of vector_width"):
        compiler.build(dict(tune.Space(spaces()["x86"]["attention"]).defaults(), query_tile=24, vector_width=16))


def test_search_is_reproducible_from_its_seed(tune):
    space = tune.Space(spaces()["x86"]["attention"])
    draws = [[space.mutate(space.sample(rng), rng) for _ in range(5)] for rng in
             (np.random.default_rng(7), np.random.default_rng(7))]
    assert draws[0] == draws[1]


@pytest.mark.parametrize("args, message", [
    (("/nonexistent.so", "x", "posattn_integer_f32", "s"), "'path'"),
    ((str(BUILD / "libposattn.so"), "nonesuch", "posattn_integer_f32", "s"), "'symbol'"),
    ((str(BUILD / "libposattn.so"), "x", "posattn_nonesuch", "s"), "'function'"),
    ((str(BUILD / "libposattn.so"), "posattn_integer_f32", "posattn_integer_f32", "hand"), "already has a schedule 'hand'"),
])
def test_load_kernel_errors(args, message):
    with pytest.raises(posattn.Error, match=message):
        posattn.load_kernel(*args)
