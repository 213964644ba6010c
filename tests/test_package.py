"""posattn as a package a user's project builds against (tests/consumer): `cmake --install` of the
build, find_package(posattn) from C (shared runtime) and C++ (static runtime, plus a kernel compiled
from posattn's generators for the consumer's own target), and the same project through
add_subdirectory with the cache variables that select what is built."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import BUILD, NATIVE_BUILD, ROOT

pytestmark = pytest.mark.skipif(not NATIVE_BUILD or os.environ.get("POSATTN_SANITIZED") == "1",
                                reason="the package is installed from the host's own build")
TOOLS = pathlib.Path(sys.executable).parent  # cmake and ninja, from the project's .venv
ENV = dict(os.environ, PATH=f"{TOOLS}{os.pathsep}{os.environ['PATH']}")
HALIDE_DIR = (re.findall(r"^Halide_DIR:PATH=(.*)$", (BUILD / "CMakeCache.txt").read_text(), re.M) or [None])[0]  # (host builds)


def run(*command, check=True, **env):
    done = subprocess.run([str(c) for c in command], env=dict(ENV, **env), capture_output=True, text=True)
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """The build installed (cmake --install) into a fresh prefix."""
    prefix = tmp_path_factory.mktemp("prefix")
    run("cmake", "--install", BUILD, "--prefix", prefix)
    return prefix


def site_packages(prefix):
    return prefix / f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


def test_installed_package_serves_c_and_cpp_consumers(prefix, tmp_path):
    for path in ["include/posattn/posattn.h", "include/posattn/posattn.hpp", "lib/libposattn.so", "lib/libposattn.a",
                 "lib/libposattn_embed.a",
                 "lib/cmake/posattn/posattnConfig.cmake", "libexec/posattn/posattn_generators",
                 "include/posattn/halide/generators/attention.h", "include/posattn/halide/schedules/attention.h"]:
        assert (prefix / path).is_file(), path
    consumer = tmp_path / "consumer"
    run("cmake", "-S", ROOT / "tests/consumer", "-B", consumer, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}")
    run("cmake", "--build", consumer)
    assert run(consumer / "consumer_c").stdout.startswith("consumer_c: ok")
    assert run(consumer / "consumer_embed").stdout.startswith("consumer_c: ok")
    assert run(consumer / "consumer_cpp").stdout.startswith("consumer_cpp: ok (posattn.alibi_bias: argument 'out' has null data)")
    # The C program runs the installed shared runtime; the others carry the static or embedded one.
    assert f"{prefix}/lib/libposattn.so" in run("ldd", consumer / "consumer_c").stdout
    assert "libposattn" not in run("ldd", consumer / "consumer_cpp").stdout + run("ldd", consumer / "consumer_embed").stdout
    # The installed Python package, and posattn.jit with the installed generators (libexec/posattn/).
    site = site_packages(prefix)
    code = "import posattn; print(posattn.__file__, posattn.jit('posattn_rope_f32'))"
    path, schedule = run(sys.executable, "-c", code, PYTHONPATH=str(site), POSATTN_JIT_CACHE=str(tmp_path / "jit")).stdout.split()
    assert path.startswith(str(site)) and schedule.startswith("jit_")


def configure_subdirectory(tmp_path, *options):
    return run("cmake", "-S", ROOT / "tests/consumer", "-B", tmp_path / "sub", "-G", "Ninja",
               f"-DPOSATTN_SOURCE_DIR={ROOT}", f"-DHalide_DIR={HALIDE_DIR}", "-DPOSATTN_GPU_APIS=",
               "-DPOSATTN_PYTHON=OFF", "-DPOSATTN_BASELINES=OFF", *options, check=False)


def test_add_subdirectory_builds_only_the_selected_kernels(tmp_path):
    """(About a minute: the generators are compiled again; the kernels come from the kernel cache.)"""
    done = configure_subdirectory(tmp_path, "-DPOSATTN_KERNELS=posattn_alibi_*;posattn_attn_plain_f32_decode?")
    assert done.returncode == 0, done.stderr
    targets = run("cmake", "--build", tmp_path / "sub", "--target", "help").stdout
    built = set(re.findall(r"^(posattn_\w+?)(?:\.update|\.runtime)?: ", targets, re.M))
    assert {"posattn_alibi_bias_f32", "posattn_attn_plain_f32_decode1", "posattn_attn_plain_f32_decode8"} <= built
    assert not {"posattn_attn_plain_f32", "posattn_attn_plain_f32_decode", "posattn_sinusoidal_f32"} & built
    assert "_posattn:" not in targets and "c_api_smoke:" not in targets  # no Python, no tests
    run("cmake", "--build", tmp_path / "sub")
    assert run(tmp_path / "sub/consumer_c").stdout.startswith("consumer_c: ok")
    assert run(tmp_path / "sub/consumer_embed").stdout.startswith("consumer_c: ok")
    assert run(tmp_path / "sub/consumer_cpp").stdout.startswith("consumer_cpp: ok")


@pytest.mark.parametrize("kernels, message", [
    ("posattn_nothing_*", "POSATTN_KERNELS: 'posattn_nothing_\\*' matches no kernel"),
    ("posattn_rope_f32;posattn_typo", "POSATTN_KERNELS: 'posattn_typo' matches no kernel"),
    ("posattn_[a-z]*", "is not a kernel name or glob"),
])
def test_bad_kernel_selections_are_refused_at_configure(tmp_path, kernels, message):
    done = configure_subdirectory(tmp_path, f"-DPOSATTN_KERNELS={kernels}")
    assert done.returncode != 0 and re.search(message, done.stderr), done.stderr


@pytest.fixture(scope="module")
def custom_library(prefix, tmp_path_factory):
    """examples/custom_variant built against the install: KERPLE and FIRE kernels in one library."""
    build = tmp_path_factory.mktemp("custom_variant")
    run("cmake", "-S", ROOT / "examples/custom_variant", "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}")
    run("cmake", "--build", build)
    return build / "libcustom_attention.so"


def test_custom_variant_example_matches_float64(prefix, custom_library):
    """The example's own check, on the installed Python package: every element against NumPy float64."""
    example = ROOT / "examples/custom_variant"
    done = run(sys.executable, example / "check.py", custom_library, PYTHONPATH=f"{site_packages(prefix)}{os.pathsep}{example}")
    assert done.stdout.startswith("check: ok"), done.stdout
    # A program that links the library adds its kernels through posattn::add_kernel (register.cpp).
    code = (f"import ctypes, posattn; ctypes.CDLL({str(custom_library)!r}).custom_attention_register(); "
            "print(sorted(k['function'] for k in posattn.kernels() if not k['function'].startswith('posattn_')))")
    assert run(sys.executable, "-c", code, PYTHONPATH=str(site_packages(prefix))).stdout.strip() == "['fire_attention', 'kerple_attention']"
