"""What the tuner, its report and the build agree on, without the runtime: which schedule (and so
which search space) a kernel takes, the records file of a target, and the schedule version a
record is measured for."""
import functools
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / os.environ.get("POSATTN_BUILD", "build")
sys.path.insert(0, str(ROOT / "cmake"))
import manifest as kernels_json  # noqa: E402  (cmake/manifest.py: a kernel per storage dtype)

# Which schedule (schedules/<family>/<kind>.h) each generator uses.
SCHEDULE_KIND = {"sinusoidal": "encoding", "learned": "encoding", "simple_encoding": "encoding",
                 "complex_order": "encoding", "alibi_bias": "encoding", "rope": "rope",
                 "floater_step": "floater", "linear": "linear", "attention": "attention"}


def manifest():
    return {k["function"]: k for k in kernels_json.kernels()}


def search_space(family, kind):
    return _search_space()[family][kind]


@functools.cache
def _search_space(*flags):
    return json.loads(subprocess.run([str(BUILD / "posattn_search_space"), *flags], check=True, capture_output=True,
                                     text=True).stdout)


def schedule_kind(entry):
    """The search space of a manifest entry: its generator's schedule, for its shape class if it has
    one ("attention_decode": schedules/attention.h), or in tiles of rows if it is compiled with them
    ("encoding_tiled": schedules/encodings.h row_tiles)."""
    shape_class = [p.split("=", 1)[1] for p in entry["params"] if p.startswith("shape_class=")]
    tiled = ["tiled"] if "row_tiles=true" in entry["params"] else []
    return "_".join([SCHEDULE_KIND[entry["generator"]], *shape_class, *tiled])


def family_of(target, device):
    """The records file and search space of a tuning run: x86, arm, or a GPU API (Vulkan's
    defaults differ: its attention tile)."""
    if device != "cpu":
        return device, "vulkan" if device == "vulkan" else "gpu"
    if target.startswith("arm-64"):
        return "arm", "arm"
    return "x86", "x86" if "avx512" in target else "x86_avx2"  # AVX2 and below: the AVX2 defaults


def schedule_version(function, space_family):
    """What a record is measured for: "<algorithm>.<fields>", the kernel's generator's algorithm
    version (kernels.json) and its params struct's fields version (their names and defaults:
    posattn_search_space --versions, schedules/params.h). A build takes a record of its own
    version only (cmake/tuned_records.cmake); None for a kernel no longer in the manifest."""
    entry = manifest().get(function)
    return entry and f"{entry['algorithm_version']}.{_search_space('--versions')[space_family][schedule_kind(entry)]}"


def version_of(record):
    """The current schedule version of a record's kernel on the record's target."""
    return schedule_version(record["kernel"], family_of(record["target"], record.get("device", "cpu"))[1])
