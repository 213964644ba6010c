"""Which tuned records a build takes (cmake/tuned_records.cmake, run in CMake's script mode): per
kernel and x86 ISA level the latest summary of the chosen CPU model made for the kernel's algorithm
version, where it beat the defaults by more than 3% (a later run supersedes an earlier one, even one
that beat them by more); trial records, other models' summaries and summaries of another version (or
none) are ignored, the latter named. Each ISA level of a multi-target library compiles with its own
level's params only, and only where they were measured for its params struct's fields
(schedules/params.h)."""
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, NATIVE_BUILD, ROOT

pytestmark = pytest.mark.skipif(not NATIVE_BUILD, reason="the build's CMake runs on the host")

AVX512, AVX2 = "x86-64-linux-avx512_skylake", "x86-64-linux-avx2-fma-f16c-sse41"
RECORDS = [  # (kernel, machine, summary, ratio to default, params, target, schedule version)
    ("k_attention", "CPU A, 2 cores, 2 threads", True, 0.90, {"key_block": 512, "query_tile": 48}, AVX512, "3.aa"),
    ("k_attention", "CPU B, 2 cores, 2 threads", True, 0.85, {"key_block": 256, "query_tile": 32}, AVX512, "3.aa"),
    ("k_attention", "CPU A, 2 cores, 2 threads", True, 0.93, {"key_block": 128, "query_tile": 32}, AVX512, "3.aa"),
    ("k_attention", "CPU A, 2 cores, 2 threads", False, 0.50, {"key_block": 64, "query_tile": 16}, AVX512, "3.aa"),
    ("k_attention", "CPU B, 2 cores, 2 threads", True, 0.80, {"key_block": 64}, AVX2, "3.bb"),  # another ISA level
    ("k_attention", "CPU A, 2 cores, 2 threads", True, 0.70, {"key_block": 32}, AVX512, "2.aa"),  # an older algorithm
    ("k_attention", "CPU A, 2 cores, 2 threads", True, 0.60, {"key_block": 16}, AVX512, None),  # before versions
    ("k_table", "CPU A, 2 cores, 2 threads", True, 0.90, {"rows_per_task": 128}, AVX512, "1.cc"),
    ("k_table", "CPU A, 2 cores, 2 threads", True, 0.97, {"rows_per_task": 64}, AVX512, "1.cc"),  # within the noise
    ("k_table", "CPU B, 2 cores, 2 threads", True, 0.96, {"rows_per_task": 32}, AVX2, "1.dd"),
    ("k_old", "CPU A, 2 cores, 2 threads", True, 0.80, {"rows_per_task": 32}, AVX512, "1.cc"),  # its algorithm is at 2
]


def cmake_script(tmp_path, body):
    """CMake's messages from `body` run in script mode after including cmake/tuned_records.cmake
    (status messages, "-- ...", after the others)."""
    script = tmp_path / "script.cmake"
    script.write_text(f'include("{ROOT}/cmake/tuned_records.cmake")\n' + body)
    cmake = shutil.which("cmake", path=str(pathlib.Path(sys.executable).parent)) or shutil.which("cmake")
    run = subprocess.run([cmake, "-P", str(script)], capture_output=True, text=True, check=True)
    return run.stderr + run.stdout


# The kernels' algorithm versions, as CMakeLists.txt sets them from kernels.json.
ALGORITHMS = "set(posattn_algorithm_k_attention 3)\nset(posattn_algorithm_k_table 1)\nset(posattn_algorithm_k_old 2)\n"


def write_records(tmp_path):
    records = tmp_path / "x86.jsonl"
    records.write_text("".join(json.dumps(dict(kernel=k, machine=m, ratio_to_default=r, params=p, target=t,
                                               **({"schedule_version": v} if v else {}),
                                               **({"best": True} if best else {"trial": 1}))) + "\n"
                               for k, m, best, r, p, t, v in RECORDS))
    return records


def chosen(tmp_path, machine):
    """{kernel: schedule params} that posattn_read_tuned_records sets for `machine`'s records."""
    messages = cmake_script(tmp_path, ALGORITHMS + f'posattn_read_tuned_records("{write_records(tmp_path)}" "{machine}" tuned_)\n'
                                      'foreach (kernel k_attention k_table)\n'
                                      '  message("${kernel}=${tuned_${kernel}}")\n'
                                      'endforeach ()\n')
    return dict(line.split("=", 1) for line in messages.splitlines() if not line.startswith("-- "))


@pytest.mark.parametrize("machine, attention, table", [
    ("CPU A", "schedule_params=isa:avx512,version:3.aa,key_block:128,query_tile:32", ""),
    ("CPU B", "schedule_params=isa:avx512,version:3.aa,key_block:256,query_tile:32/isa:avx2,version:3.bb,key_block:64",
     "schedule_params=isa:avx2,version:1.dd,rows_per_task:32"),
    ("", "schedule_params=isa:avx512,version:3.aa,key_block:128,query_tile:32/isa:avx2,version:3.bb,key_block:64",  # every model
     "schedule_params=isa:avx2,version:1.dd,rows_per_task:32"),
    ("CPU C", "", ""),  # no records for that model: the defaults
])
def test_build_takes_the_latest_records_of_its_cpu_model_and_version(tmp_path, machine, attention, table):
    assert chosen(tmp_path, machine) == {"k_attention": attention, "k_table": table}


def test_build_names_the_kernels_whose_records_it_no_longer_takes(tmp_path):
    out = cmake_script(tmp_path, ALGORITHMS + f'posattn_read_tuned_records("{write_records(tmp_path)}" "CPU A" t_)\n')
    assert "these kernels have no other: k_old (re-measure them" in out
    assert "k_attention" not in out and "k_table" not in out  # (each has a record of its version too)


@pytest.fixture(scope="module")
def measure():
    sys.path.insert(0, str(ROOT / "tune"))
    import measure as module  # tune/measure.py
    return module


@pytest.mark.parametrize("cpuinfo, model", [
    ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Processor\n"
     "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n", "Intel(R) Xeon(R) Processor"),
    ("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "0xd0c"),  # Neoverse N1
    ("processor\t: 0\nCPU part\t: 0xd08\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B\n", "0xd08"),
    ("processor\t: 0\nflags\t\t: fpu\n", "riscv64"),  # no model named: the architecture
])
def test_build_and_tuner_read_one_cpu_model(tmp_path, measure, cpuinfo, model):
    """The model a build matches records by (posattn_cpu_model) is the one the tuner records
    (tune/measure.py's cpu_model), on x86 and ARM cpuinfo, both falling back to the architecture."""
    (tmp_path / "cpuinfo").write_text(cpuinfo)
    assert measure.cpu_model(cpuinfo, "riscv64") == model
    script = f'posattn_cpu_model("{tmp_path / "cpuinfo"}" riscv64 model)\nmessage("[${{model}}]")\n'
    assert cmake_script(tmp_path, script) == f"[{model}]\n"


@pytest.mark.parametrize("target, refused", [("x86-64-linux-avx512_skylake", True), ("x86-64-linux-avx2-fma-f16c-sse41", False),
                                             ("x86-64-linux-sse41", False)])
def test_each_isa_level_of_a_library_takes_its_own_group_of_params(tmp_path, target, refused):
    """A tuned record's params reach the ISA level it was measured on only: here an AVX-512 group
    that no build may take (a zero vector width) stops the AVX-512 level's compile alone."""
    params = "schedule_params=isa:avx512,vector_width:0/isa:avx2,vector_width:8"
    run = subprocess.run([str(BUILD / "posattn_generators"), "-g", "simple_encoding", "-f", "k", "-o", str(tmp_path), "-e", "stmt",
                          f"target={target}", "kind=integer", "fused=false", params], capture_output=True, text=True)
    assert (run.returncode != 0) == refused, run.stderr
    assert ("schedule parameter 'vector_width' is 0" in run.stderr) == refused


@pytest.fixture(scope="module")
def versions():
    """Each params struct's fields version, as the build's generators compute it."""
    return json.loads(subprocess.run([str(BUILD / "posattn_search_space"), "--versions"], check=True,
                                     capture_output=True, text=True).stdout)


@pytest.mark.parametrize("matches", [True, False])
def test_a_level_takes_only_params_measured_for_its_fields(tmp_path, versions, matches):
    """A group measured for other fields or defaults than its params struct's is not built: the
    defaults are, with a warning. Here the group's zero vector width, which no build may take, stops
    the compile only where its fields version is the struct's (posattn_search_space --versions)."""
    fields = versions["x86"]["encoding"] if matches else "0123456789abcdef"
    params = f"schedule_params=isa:avx512,version:1.{fields},vector_width:0"
    run = subprocess.run([str(BUILD / "posattn_generators"), "-g", "simple_encoding", "-f", "k", "-o", str(tmp_path), "-e", "stmt",
                          "target=x86-64-linux-avx512_skylake", "kind=integer", "fused=false", params], capture_output=True, text=True)
    assert (run.returncode != 0) == matches, run.stderr
    assert ("schedule parameter 'vector_width' is 0" in run.stderr) == matches
    assert ("were measured for fields version 0123456789abcdef" in run.stderr) != matches


def test_fields_versions_follow_the_defaults(versions):
    """Each struct's version hashes its fields' names and defaults: the attention defaults differ
    between the AVX-512 and AVX2 levels, the encodings' do not; the ARM family's differ."""
    assert versions["x86"]["attention"] != versions["x86_avx2"]["attention"]
    assert versions["x86"]["encoding"] == versions["x86_avx2"]["encoding"] != versions["arm"]["encoding"]
    assert all(len(v) == 16 and int(v, 16) >= 0 for kinds in versions.values() for v in kinds.values())
