"""pip install . : the wheel scikit-build-core builds from pyproject.toml (its CMake build, in
build/wheel, is kept between runs and takes its kernels from the kernel cache), installed into a
fresh virtual environment (NumPy from PyPI) and used there outside the repository, with no
PYTHONPATH: an attention call against the float64 reference, and `python -m posattn`."""
import os
import re
import subprocess
import sys

import pytest

from conftest import NATIVE_BUILD, ROOT

pytestmark = pytest.mark.skipif(not NATIVE_BUILD or os.environ.get("POSATTN_SANITIZED") == "1",
                                reason="the wheel is built for the host")
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
ENV["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{ENV['PATH']}"  # cmake, ninja


def run(*command, cwd=None):
    done = subprocess.run([str(c) for c in command], env=ENV, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done.stdout


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--disable-pip-version-check",
        "-w", dist, ROOT)
    (wheel,) = dist.glob("posattn-*.whl")
    print(f"\n{wheel.name}: {wheel.stat().st_size / 2**20:.1f} MiB")
    venv = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin/pip", "install", "-q", "--disable-pip-version-check", wheel)
    return venv / "bin/python"


def test_the_installed_wheel_computes_attention_outside_the_repository(venv_python, tmp_path):
    code = """
import numpy as np, posattn
from posattn import reference
rng = np.random.default_rng()
q, k, v = (rng.standard_normal((1, 4, 33, 16), dtype=np.float32) for _ in range(3))
out = posattn.attention(q, k, v, causal=True)
print(posattn.__file__, np.abs(out - reference.attention(q, k, v, causal=True)).max())
"""
    path, error = run(venv_python, "-c", code, cwd=tmp_path).split()
    assert path.startswith(str(venv_python.parents[1])) and float(error) < 1e-5


def test_python_m_posattn_runs_the_showcase(venv_python, tmp_path):
    lines = run(venv_python, "-m", "posattn", cwd=tmp_path).splitlines()
    assert re.match(r"posattn: \d+ compiled kernels", lines[0])
    errors = [float(line.split()[-3]) for line in lines[2:]]
    assert len(errors) == 4 and max(errors) < 1e-4
