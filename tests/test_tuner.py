"""The tuner's machinery: the declared search spaces, a candidate compiled with non-default schedule
params and loaded into the runtime (it must compute the same results), constraint violations
rejected at compile time, load_kernel's errors, and a whole (short) tuning run through a runner
command on a GPU API (OpenCL on PoCL), into a temporary records file."""
import argparse
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


@pytest.fixture(scope="module")
def measure():
    import measure as module  # tune/measure.py
    return module


def spaces():
    return json.loads(subprocess.run([str(BUILD / "posattn_search_space")], check=True, capture_output=True,
                                     text=True).stdout)


def test_every_schedule_declares_a_search_space(tune):
    declared = spaces()
    assert sorted(declared) == ["arm", "gpu", "vulkan", "x86", "x86_avx2"]
    for family, kinds in declared.items():
        assert sorted(kinds) == sorted({tune.schedule_kind(k) for k in manifest()}), family
        for kind, fields in kinds.items():
            assert fields, (family, kind)
            for f in fields:
                # (0 only where a field declares it a choice: the encodings' whole rows, tile_rows)
                assert f["choices"] and min(f["choices"]) >= 0 and (f["default"] > 0 or f["default"] in f["choices"]), (family, kind, f)
                assert min(f["choices"]) > 0 or f["name"] == "tile_rows", (family, kind, f)
    import spaces as tuner_spaces  # (tune/spaces.py: the schedule each generator takes)
    assert {k["generator"] for k in manifest()} <= set(tuner_spaces.SCHEDULE_KIND)


def test_candidate_with_other_params_loads_and_matches_reference(tune, measure, tmp_path, rng):
    compiler = tune.Compiler("posattn_integer_add_f32", tune.host_target(), tmp_path)
    candidate = compiler.build({"vector_width": 8, "rows_per_task": 4})
    # A kernel with a non-temporal twin is tuned as its twin, which is what runs at its benchmark's size.
    library = candidate.rsplit(":", 1)[0]
    assert "movnt" in subprocess.run(["objdump", "-d", library], check=True, capture_output=True, text=True).stdout
    name = measure.schedule_of("posattn_integer_add_f32", "cpu", candidate)
    (entry,) = [k for k in posattn.kernels() if k["schedule"] == name]
    assert (entry["function"], entry["family"], entry["key"]) == ("posattn_integer_add_f32", "x86", "posattn_integer_add_f32.x86")
    assert entry["targets"].startswith("x86-64-linux-")  # (its metadata's target)
    x = rng.standard_normal((3, 37, 21)).astype(np.float32)
    positions = rng.integers(-5000, 5000, size=(3, 37)).astype(np.int32)
    out = np.full_like(x, np.nan)
    posattn.integer_add(x, positions, out=out, schedule=name)
    np.testing.assert_allclose(out, x + reference.integer(positions, 21), rtol=2**-23, atol=0)


def test_autoscheduler_candidate_loads(tune, measure, tmp_path, rng):
    candidate = tune.Compiler("posattn_integer_f32", tune.host_target(), tmp_path).build(autoscheduler="Mullapudi2016")
    name = measure.schedule_of("posattn_integer_f32", "cpu", candidate)
    # (An autoscheduled build assumes sizes near the generator's estimates: [8, 4096, 1024].)
    positions = rng.integers(-5000, 5000, size=(2, 4096)).astype(np.int32)
    np.testing.assert_array_equal(posattn.integer(positions, 1024, schedule=name), reference.integer(positions, 1024))


def check_plain_call(schedule, rng, shapes, window, served):
    """Causal plain attention of q, k, v of these shapes with a candidate's schedule: the reference
    result where its shape class serves the call, else the runtime's error that plain attention's
    own kernel (where a call of another class falls back) has no such schedule."""
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in shapes)
    if served:
        np.testing.assert_allclose(posattn.attention(q, k, v, causal=True, window=window, schedule=schedule),
                                   reference.attention(q, k, v, None, True, window=window), atol=2e-5, rtol=1e-5)
    else:
        with pytest.raises(posattn.Error, match=r"no kernel posattn_attn_plain_f32\.x86 with schedule"):
            posattn.attention(q, k, v, causal=True, window=window, schedule=schedule)


# (Hq, Hkv, Lq, window, served, D, Dv); (D, Dv): channels in whole 16-lane vectors, then not (q·k
# over rows), then fewer than 16.
DECODE_CALLS = {
    # 2 to 4 rows a tile: one query of a GQA group of 4 or 2, 3 or 4 queries; not one row, 5
    # queries, nor a folded group of 8 (runtime/src/attention.cpp kDecodeClasses).
    "decode": [(8, 2, 1, 0, True, 32, 32), (3, 3, 4, 0, True, 64, 24), (4, 2, 1, 0, True, 40, 40),
               (8, 2, 3, 0, True, 8, 8), (16, 2, 1, 9, False, 40, 40), (3, 3, 5, 0, False, 32, 32),
               (16, 2, 1, 0, False, 32, 32)],
    # One row a tile: one query without GQA, or of a group with a window (not folded); not a
    # folded group of 2, nor 2 queries.
    "decode1": [(3, 3, 1, 0, True, 64, 24), (16, 2, 1, 9, True, 40, 40), (2, 2, 1, 0, True, 8, 8),
                (4, 2, 1, 0, False, 32, 32), (3, 3, 2, 0, False, 32, 32)],
    # 5 to 8 rows: a folded group of 8 or 5, 7 queries; not 4 rows, nor 9.
    "decode8": [(16, 2, 1, 0, True, 32, 32), (10, 2, 1, 0, True, 40, 24), (3, 3, 7, 0, True, 8, 8),
                (8, 2, 1, 0, False, 32, 32), (18, 2, 1, 0, False, 32, 32)],
}


@pytest.mark.parametrize("shape_class, rows", [("decode1", 1), ("decode", 4), ("decode8", 8)])
def test_decode_shape_classes_serve_their_calls(tune, measure, tmp_path, rng, shape_class, rows):
    """A candidate of plain attention's decode1, decode or decode8 class (a tile of 1, 4 or 8 rows),
    compiled from its own space's defaults and loaded under its own schedule name, serves exactly
    the calls the runtime gives that class (DECODE_CALLS)."""
    function = f"posattn_attn_plain_f32_{shape_class}"
    defaults = tune.Space(spaces()["x86"][f"attention_{shape_class}"]).defaults()
    assert defaults["query_tile"] == rows and tune.Space(spaces()["x86"]["attention"]).defaults()["query_tile"] > 8
    name = measure.schedule_of(function, "cpu", tune.Compiler(function, tune.host_target(), tmp_path).build(defaults))
    for Hq, Hkv, Lq, window, served, D, Dv in DECODE_CALLS[shape_class]:
        check_plain_call(name, rng, ((1, Hq, Lq, D), (1, Hkv, 40, D), (1, Hkv, 40, Dv)), window, served)


def test_window_shape_class_serves_calls_with_a_window_narrower_than_the_keys(tune, measure, tmp_path, rng):
    """A candidate of plain attention's window class (its own space's defaults: 128-key blocks)
    serves the calls of more than 4 rows whose window masks some key: not those without a window or
    with one as wide as the keys, nor one query with a window (the decode class's)."""
    function = "posattn_attn_plain_f32_window"
    defaults = tune.Space(spaces()["x86"]["attention_window"]).defaults()
    assert defaults["key_block"] < tune.Space(spaces()["x86"]["attention"]).defaults()["key_block"]
    name = measure.schedule_of(function, "cpu", tune.Compiler(function, tune.host_target(), tmp_path).build(defaults))
    for Hq, Hkv, Lq, window, served in [(4, 2, 40, 9, True), (2, 2, 300, 150, True), (2, 2, 40, 0, False),
                                        (2, 2, 40, 300, False), (8, 2, 1, 9, False)]:
        check_plain_call(name, rng, ((1, Hq, Lq, 32), (1, Hkv, 300, 32), (1, Hkv, 300, 32)), window, served)


@pytest.mark.parametrize("function, value_pass_keys", [("posattn_attn_plain_f32", 64), ("posattn_attn_shaw_f32", 1)])
def test_value_passes_shorter_than_a_key_block_match_reference(tune, measure, tmp_path, rng, function, value_pass_keys):
    """p·v in passes over fewer keys than a block (schedules/cpu/attention.h value_pass_keys): each
    pass's sums in a register tile, or key by key (the decode class's default) with the sums of the
    tile, and Shaw's relative values that they start from, in memory."""
    params = dict(tune.Space(spaces()["x86"]["attention"]).defaults(), value_pass_keys=value_pass_keys)
    name = measure.schedule_of(function, "cpu", tune.Compiler(function, tune.host_target(), tmp_path).build(params))
    q, k, v = (rng.standard_normal((1, 3, L, 24)).astype(np.float32) for L in (37, 300, 300))
    masks = dict(causal=True, key_lengths=np.array([290], np.int32))
    if function == "posattn_attn_shaw_f32":
        rel_k, rel_v = (rng.standard_normal((2 * 5 + 1, 24)).astype(np.float32) for _ in range(2))
        got = posattn.attention(q, k, v, shaw={"rel_k": rel_k, "rel_v": rel_v}, schedule=name, **masks)
        expected = reference.shaw_attention(q, k, v, rel_k, rel_v, **masks)
    else:
        got, expected = posattn.attention(q, k, v, schedule=name, **masks), reference.attention(q, k, v, None, **masks)
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("function", ["posattn_attn_plain_f32", "posattn_attn_alibi_f32"])
def test_key_streams_match_reference(tune, measure, tmp_path, rng, function):
    """A block's keys visited as 8 interleaved runs (key_streams, the decode classes' way of keeping
    memory reads in flight) on the prefill tile: each logit keeps its own key's bias, mask and
    window; a short last block (keys past the key lengths) and a query tile across blocks."""
    params = dict(tune.Space(spaces()["x86"]["attention"]).defaults(), score_keys=8, key_streams=8, key_block=64)
    name = measure.schedule_of(function, "cpu", tune.Compiler(function, tune.host_target(), tmp_path).build(params))
    q, k, v = (rng.standard_normal((1, 3, L, 24)).astype(np.float32) for L in (37, 300, 300))
    mask = rng.random((3, 37, 300)) < 0.8
    bias = rng.standard_normal((37, 300)).astype(np.float32)
    masks = dict(causal=True, key_lengths=np.array([290], np.int32), window=200)
    slopes = posattn.alibi_slopes(3) if function == "posattn_attn_alibi_f32" else None
    got = posattn.attention(q, k, v, mask=mask, bias=bias, alibi_slopes=slopes, schedule=name, **masks)
    if slopes is not None:
        bias = bias + reference.alibi_bias(slopes, 37, 300)
    np.testing.assert_allclose(got, reference.attention(q, k, v, None, bias=bias, mask=mask, **masks), atol=2e-5, rtol=1e-5)


def test_key_streams_are_refused_for_relative_variants(tune, tmp_path):
    compiler = tune.Compiler("posattn_attn_shaw_f32", tune.host_target(), tmp_path)
    with pytest.raises(RuntimeError, match="key_streams > 1 needs a variant without relative terms"):
        compiler.build(dict(tune.Space(spaces()["x86"]["attention"]).defaults(), key_streams=2))
    with pytest.raises(RuntimeError, match="score_keys must be a multiple of key_streams"):
        compiler.build(dict(tune.Space(spaces()["x86"]["attention"]).defaults(), score_keys=4, key_streams=8))


def test_constraint_violation_is_rejected_at_compile_time(tune, tmp_path):
    compiler = tune.Compiler("posattn_attn_plain_f32", tune.host_target(), tmp_path)
    with pytest.raises(RuntimeError, match="query_tile must be a multiple of vector_width"):
        compiler.build(dict(tune.Space(spaces()["x86"]["attention"]).defaults(), query_tile=24, vector_width=16))


def test_search_draws_only_params_meeting_the_constraints(tune):
    why_invalid = tune.constraints("x86", "attention")
    space = tune.Space(spaces()["x86"]["attention"], why_invalid)
    assert "query_tile must be a multiple of vector_width" in why_invalid(dict(space.defaults(), query_tile=24,
                                                                                 vector_width=16))
    assert why_invalid(space.defaults()) == ""
    assert "no schedule 'nonesuch' in family 'x86'" in tune.constraints("x86", "nonesuch")({})
    rng = np.random.default_rng(3)
    draws = [space.sample(rng) for _ in range(20)]
    draws += [space.mutate(p, rng) for p in draws]
    for p in draws:  # AttentionParams::invalid(), restated
        assert p["query_tile"] % p["vector_width"] == 0 and p["query_tile"] % p["value_rows"] == 0, p
        assert p["key_block"] % p["score_keys"] == 0, p
        assert p["score_keys"] % p["key_streams"] == 0, p
        assert p["score_lanes"] == 1 or p["query_tile"] * p["score_keys"] <= 32, p
    # (unconstrained, about a third of the attention space breaks one of them)
    unconstrained = tune.Space(spaces()["x86"]["attention"])
    assert any(why_invalid(unconstrained.sample(rng)) for _ in range(40))
    with pytest.raises(RuntimeError, match="no params meeting the schedule's constraints"):
        tune.Space(spaces()["x86"]["attention"], lambda params: "never").sample(rng)


def test_gpu_candidates_fit_a_block(tune):
    """GPU spaces draw only blocks that can launch: the attention tile's shared memory, its logits,
    probabilities and their per-row statistics (48 KiB on CUDA and OpenCL, 32 KiB on Vulkan), the
    encodings' threads."""
    rng = np.random.default_rng(5)
    for family, limit in (("gpu", 48 << 10), ("vulkan", 32 << 10)):
        why_invalid = tune.constraints(family, "attention")
        space = tune.Space(spaces()[family]["attention"], why_invalid)
        assert why_invalid(space.defaults()) == ""
        assert "shared memory" in why_invalid(dict(space.defaults(), query_tile=128, key_block=128))
        for p in [space.sample(rng) for _ in range(20)]:
            assert 4 * p["query_tile"] * (2 * p["key_block"] + 2) <= limit, p
    why_invalid = tune.constraints("gpu", "encoding")
    assert "at most 1024" in why_invalid(dict(channel_threads=128, row_threads=16))
    assert why_invalid(dict(channel_threads=64, row_threads=16)) == ""


def test_search_is_reproducible_from_its_seed(tune):
    space = tune.Space(spaces()["x86"]["attention"], tune.constraints("x86", "attention"))
    draws = [[space.mutate(space.sample(rng), rng) for _ in range(5)] for rng in
             (np.random.default_rng(7), np.random.default_rng(7))]
    assert draws[0] == draws[1]


def test_records_of_an_earlier_search_space_map_onto_the_current_one(tune):
    """A search resumes from records made before a field was added (at its default) or removed (dropped)."""
    space = tune.Space(spaces()["x86"]["rope"])
    old = dict(positions_per_task=512, pass_rows_per_task=64)  # a field removed since; vector_width unrecorded
    assert space.of(old) == dict(space.defaults(), positions_per_task=512)


def test_search_starts_from_what_won_for_the_kernels_siblings(tune):
    """The first trials of Shaw attention: the params the build takes for the other attention kernels
    on the same target and machine (each one's latest summary, where it beat its defaults by the
    build's bar; best first), completed with defaults, without those breaking the constraints,
    other generators' and machines', its own, trials and losers."""
    space = tune.Space(spaces()["x86"]["attention"], tune.constraints("x86", "attention"))
    here, target = "Intel(R) Xeon(R) Processor, 2 cores, 2 threads", "x86-64-linux-avx512_skylake"

    def summary(kernel, ratio, machine=here, **params):
        return dict(kernel=kernel, target=target, machine=machine, best=True, ratio_to_default=ratio, params=params)
    records = [
        summary("posattn_attn_t5_f32", 0.91, key_block=64),  # superseded by its later summary below
        summary("posattn_attn_plain_f32", 0.90, query_tile=48, key_block=512),
        dict(summary("posattn_attn_rope_f32", 0.50, query_tile=64), best=False),  # a trial
        summary("posattn_attn_t5_f32", 0.95, key_block=128),
        summary("posattn_attn_alibi_f32", 0.99, key_block=512),  # within the noise of its defaults
        summary("posattn_attn_deberta_f32", 0.80, query_tile=48, vector_width=16, value_rows=12),  # 48 % 12 == 0
        summary("posattn_attn_xl_f32", 0.80, query_tile=24, vector_width=16),  # 24 % 16 != 0
        summary("posattn_attn_plain_f32", 0.70, machine="AMD EPYC, 2 cores, 2 threads", query_tile=16),
        summary("posattn_rope_f32", 0.70, positions_per_task=64),  # another generator
        summary("posattn_attn_shaw_f32", 0.70, query_tile=64),  # its own: resumed from, not a sibling
    ]
    starts = tune.sibling_starts(records, "posattn_attn_shaw_f32", target, here, space)
    expected = [dict(query_tile=48, value_rows=12), dict(query_tile=48, key_block=512), dict(key_block=128)]
    assert starts == [dict(space.defaults(), **changes) for changes in expected]
    assert tune.sibling_starts(records, "posattn_attn_shaw_f32", "x86-64-linux-avx2-fma-f16c-sse41", here, space) == []


@pytest.mark.parametrize("args, message", [
    (("/nonexistent.so", "x", "posattn_integer_f32", "s"), "'path'"),
    ((str(BUILD / "libposattn.so"), "nonesuch", "posattn_integer_f32", "s"), "'symbol'"),
    ((str(BUILD / "libposattn.so"), "x", "posattn_nonesuch", "s"), "'function'"),
    ((str(BUILD / "libposattn.so"), "posattn_integer_f32", "posattn_integer_f32", "hand"), "already has a schedule 'hand'"),
])
def test_load_kernel_errors(args, message):
    with pytest.raises(posattn.Error, match=message):
        posattn.load_kernel(*args)


def test_gpu_candidate_loads_for_its_device(tune, measure, tmp_path, rng):
    candidate = tune.Compiler("posattn_integer_f32", tune.GPU_TARGETS["opencl"], tmp_path).build({"channel_threads": 16, "row_threads": 4})
    name = measure.schedule_of("posattn_integer_f32", "opencl", candidate)
    (entry,) = [k for k in posattn.kernels() if k["schedule"] == name]
    assert (entry["function"], entry["family"], entry["key"]) == ("posattn_integer_f32", "opencl", "posattn_integer_f32.opencl")
    assert "opencl" in entry["targets"].split("-")
    positions = rng.integers(-5000, 5000, size=(3, 29)).astype(np.int32)
    np.testing.assert_array_equal(posattn.integer(positions, 13, schedule=name, device="opencl"),
                                  reference.integer(positions, 13))
    with pytest.raises(posattn.Error, match="no kernel posattn_integer_f32.x86"):
        posattn.integer(positions, 13, schedule=name)  # loaded for OpenCL only


def test_tuning_through_a_runner_records_the_runners_measurements(tune, tmp_path):
    """A short search of linear's GPU schedule on OpenCL (PoCL), measured by tune/runners/local.sh:
    every trial is recorded, valid ones with times from the runner, and the summary compares the
    best with the defaults."""
    records = tmp_path / "opencl.jsonl"
    run = subprocess.run([sys.executable, str(ROOT / "tune" / "tune.py"), "posattn_linear_f32", "--device", "opencl",
                          "--runner", str(ROOT / "tune" / "runners" / "local.sh"), "--records", str(records),
                          "--trials", "2", "--random", "2", "--repeats", "3", "--no-baselines", "--seed", "3"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [json.loads(l) for l in records.read_text().splitlines()]
    trials, (summary,) = [l for l in lines if not l.get("best")], [l for l in lines if l.get("best")]
    assert [t["trial"] for t in trials] == [1, 2]
    for record in lines:
        assert record["kernel"] == "posattn_linear_f32" and record["device"] == "opencl"
        assert record["target"] == tune.GPU_TARGETS["opencl"] and record["runner"].endswith("local.sh")
        assert "threads" in record["machine"]
    for t in trials:
        assert ("invalid" in t) != ("ms" in t and t["ms"] > 0 and t["ratio_to_default"] > 0), t
    assert summary["trials"] == 2 and summary["ratio_to_default"] > 0 and summary["baselines"]["default"]["ms"] > 0


def test_other_targets_need_a_runner(tune):
    args = argparse.Namespace(device="vulkan", target=None, runner=None, cluster=None)
    with pytest.raises(SystemExit, match="give --runner"):
        tune.tune("posattn_linear_f32", None, args)


X86_CPUINFO = "vendor_id\t: GenuineIntel\nflags\t\t: fpu sse sse2 avx512f\n"
ARM_CPUINFO = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm\nCPU part\t: 0xd0c\n"


@pytest.mark.parametrize("cpuinfo, machine, system, emulated", [
    (X86_CPUINFO, "x86_64", "x86_64", False),
    (X86_CPUINFO, "aarch64", "x86_64", True),   # qemu-user up to 8.0: the host's cpuinfo
    (ARM_CPUINFO, "aarch64", "x86_64", True),   # newer qemu-user fakes cpuinfo; /bin/sh is the host's
    (ARM_CPUINFO, "aarch64", "aarch64", False),  # an AArch64 machine
])
def test_measuring_refuses_user_mode_emulation(measure, cpuinfo, machine, system, emulated):
    assert measure.emulated(cpuinfo, machine, system) == emulated


def test_system_binary_architecture_is_read_from_its_elf_header(measure):
    assert measure.elf_machine("/bin/sh") == "x86_64"  # this (native x86) build's machine


@pytest.fixture(scope="module")
def ab():
    sys.path.insert(0, str(ROOT / "bench"))
    import ab as module  # bench/ab.py
    return module


def test_ab_times_two_builds_of_a_kernel_alternately(ab):
    name, results, ratios = ab.compare("posattn_integer_add_f32", [("", None), ("vector_width:8", str(BUILD / "posattn_generators"))], 3,
                                       flush_mib=1)
    assert name == "posattn_integer_add_f32" and len(ratios) == 3
    assert all(0 < r["fastest"] <= r["ms"] for r in results), results
    assert results[0]["error"] == results[1]["error"] < 0.1, results  # x + p: the same values whatever the schedule
    assert all(r > 0 for r in ratios), ratios


def test_ab_names_an_unknown_param(ab):
    with pytest.raises(SystemExit, match="'width:8' is not name:value for one of posattn_integer_add_f32's params"):
        ab.compare("posattn_integer_add_f32", [("", None), ("width:8", None)], 1)


def test_records_resume_the_unfinished_run_and_drop_a_line_cut_short(tune, tmp_path):
    """A run is resumed from its trials while it has no summary; a line cut short by a killed run was
    never a record: it is dropped before the next append, the lines before it kept as written."""
    records = tune.Records(tmp_path / "x86.jsonl")
    settings = dict(kernel="posattn_linear_f32", seed=1)
    run, earlier, done = records.run_of(settings)
    assert run.endswith(".1") and earlier == [] and done == {}
    log, append = records.appender()
    with log:
        append(dict(kernel="other", best=True))
        append(dict(run=run, trial=1, params={"a": 1}))
    with records.path.open("a") as f:
        f.write('{"run": "%s", "trial": 2, "par' % run)
    assert records.run_of(settings) == (run, [dict(kernel="other", best=True)], {1: dict(run=run, trial=1, params={"a": 1})})
    before = records.path.read_text()
    log, append = records.appender()
    with log:
        append(dict(run=run, trial=2, params={"a": 2}))
        append(dict(run=run, best=True))
    assert records.path.read_text().startswith(before[:before.rfind("\n") + 1])
    assert [r.get("trial") for r in records.read()] == [None, 1, 2, None]
    assert records.run_of(settings)[0].endswith(".2")  # finished: the same settings start a new run
    assert records.run_of(dict(settings, seed=2))[0] != run


def test_a_batch_depends_on_the_seed_and_the_best_before_it(tune):
    space = tune.Space(spaces()["x86"]["linear"], tune.constraints("x86", "linear"))
    start = dict(space.defaults(), tile_rows=4)

    def proposals(best):
        search = tune.LocalSearch(space, 11, [start], random=2)
        return [search.propose(3, space.defaults()), search.propose(3, best)]
    first = proposals(space.defaults())
    assert first == proposals(space.defaults())
    assert first[0][0] == start and len({tune.text(p) for batch in first for p in batch}) == 6
    assert space.defaults() not in first[0] + first[1]
    other = dict(space.defaults(), tile_vectors=1)
    assert proposals(other)[0] == first[0] and proposals(other)[1] != first[1]  # mutations of the best


def test_the_report_shows_summaries_of_the_current_schedule_version_only(tune, tmp_path):
    """Summaries made for another schedule version, or before records had one, are not results: the
    report lists them apart, unless a current one of the same kernel, model and level supersedes them."""
    import report
    current = tune.schedule_version("posattn_linear_f32", "x86")
    linear = dict(kernel="posattn_linear_f32", target="x86-64-linux-avx512_skylake", machine="CPU A, 2 cores, 2 threads",
                  best=True, ratio_to_default=0.9)
    rope = dict(linear, kernel="posattn_rope_f32")
    lines = [dict(linear, date="old"), dict(linear, date="new", schedule_version=current),
             dict(linear, date="stale", schedule_version="1.0000000000000000"), dict(rope, date="rope"),
             dict(linear, target="x86-64-linux-avx2-fma-f16c-sse41", schedule_version=current, date="avx2")]
    (tmp_path / "x86.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows, stale = report.summaries(tmp_path / "x86.jsonl")
    assert {k: r["date"] for k, r in rows.items()} == {("posattn_linear_f32", "CPU A", "avx512"): "new"}
    assert {k: r["date"] for k, r in stale.items()} == {("posattn_rope_f32", "CPU A", "avx512"): "rope",
                                                         ("posattn_linear_f32", "CPU A", "avx2"): "avx2"}


def test_tpe_search_proposes_the_same_candidates_from_the_same_seed_and_results(tune):
    """Optuna's TPE over a declared space: only candidates that meet the constraints, none twice,
    and the same ones for the same seed and told results (a run resumed, or on a cluster); other
    results steer it elsewhere once its random samples are spent."""
    space = tune.Space(spaces()["x86"]["attention"], tune.constraints("x86", "attention"))

    def proposals(ratio_of):
        search, tried = tune.TpeSearch(space, 3, [], random=4), []
        for _ in range(3):
            batch = search.propose(4, None)
            for params in batch:
                search.tell(params, dict(ratio_to_default=ratio_of(params)) if ratio_of(params) else {})
            tried += batch
        return tried
    by_tile = proposals(lambda p: p["query_tile"] / 32 if p["key_block"] != 64 else None)
    assert by_tile == proposals(lambda p: p["query_tile"] / 32 if p["key_block"] != 64 else None)
    assert len({tune.text(p) for p in by_tile}) == 12 and space.defaults() not in by_tile
    assert all(space.why_invalid(p) == "" for p in by_tile)
    by_block = proposals(lambda p: 512 / p["key_block"])
    assert by_block[:4] == by_tile[:4] and by_block[4:] != by_tile[4:]


def test_strategy_comparison_reads_best_so_far_from_the_runs_records():
    sys.path.insert(0, str(ROOT / "tune"))
    import compare
    records = [dict(kernel="k", strategy="tpe", seed=s, trial=t, **({"ratio_to_default": r} if r else {}))
               for s, ratios in ((1, [1.2, 0.8, None, 0.9]), (2, [0.5, 1.0, 1.0, 0.4])) for t, r in enumerate(ratios, 1)]
    records += [dict(kernel="k", strategy="tpe", seed=1, best=True, ratio_to_default=0.85),
                dict(kernel="k", strategy="tpe", seed=2, best=True, ratio_to_default=0.5)]
    assert compare.best_so_far([1.2, 0.8, None, 0.9]) == [1.0, 1.25, 1.25, 1.25]
    curve, remeasured = compare.medians(compare.runs(records), "k", "tpe")
    assert curve == [1.5, (1.25 + 2) / 2, (1.25 + 2) / 2, (1.25 + 2.5) / 2] and remeasured == (1 / 0.85 + 2) / 2


def test_remeasure_records_the_latest_summary_again_for_the_current_version(tune, tmp_path):
    """--remeasure: this CPU model's latest summary of a kernel (here one made before records had a
    schedule version, with a field since removed) measured again beside the defaults, appended as a
    summary of the current version that names the original's date; other models' and kernels
    without a summary are left alone."""
    from measure import cpu_model
    records = tmp_path / "x86.jsonl"
    old = dict(kernel="posattn_integer_f32", target=tune.host_target("posattn_integer_f32"), shape_class="posattn_integer_f32",
               machine=f"{cpu_model()}, 2 cores, 2 threads", best=True, ratio_to_default=0.5, date="2026-11-30", seed=4,
               trials=9, params=dict(vector_width=8, rows_per_task=64, gone=3))
    records.write_text(json.dumps(old) + "\n" + json.dumps(dict(old, machine="Other CPU, 2 cores", date="other")) + "\n")
    run = subprocess.run([sys.executable, str(ROOT / "tune" / "tune.py"), "--remeasure", "posattn_integer_f32", "posattn_rope_f32",
                          "--records", str(records), "--repeats", "3", "--no-baselines"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert lines[:2] == [old, dict(old, machine="Other CPU, 2 cores", date="other")] and len(lines) == 3
    new = lines[2]
    assert new["schedule_version"] == tune.schedule_version("posattn_integer_f32", "x86") and new["remeasured"] == "2026-11-30"
    assert new["params"] == dict(vector_width=8, rows_per_task=64) and new["best"] and (new["seed"], new["trials"]) == (4, 9)
    assert new["ratio_to_default"] == new["ms"] / new["baselines"]["default"]["ms"] and 0.2 < new["ratio_to_default"] < 5
    assert set(new["baselines"]) == {"default"}
    assert '"remeasured": null' in run.stdout  # (posattn_rope_f32: no summary here)
