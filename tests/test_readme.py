"""The README's examples, as written there: the Python one run, the C++ and C ones compiled against
the build's runtime and run."""
import os
import re
import subprocess
import sys

import pytest

from conftest import BUILD, LIBRARY_DIR, NATIVE_BUILD, ROOT

pytestmark = pytest.mark.skipif(not NATIVE_BUILD or os.environ.get("POSATTN_SANITIZED") == "1",
                                reason="compiled for the host")


def example(language):
    (code,) = re.findall(rf"^```{language}\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    return code


def test_python_example(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(LIBRARY_DIR / "python"), POSATTN_JIT_CACHE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", example("python")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) < 1e-5  # its sinusoid's largest error against float64


@pytest.mark.parametrize("language, compiler, suffix", [("cpp", "c++", ".cpp"), ("c", "cc", ".c")])
def test_compiled_examples(tmp_path, language, compiler, suffix):
    source, program = tmp_path / f"example{suffix}", tmp_path / "example"
    source.write_text(example(language))
    subprocess.run([compiler, "-std=c++17" if language == "cpp" else "-std=c11", "-Wall", "-Werror", str(source),
                    f"-I{ROOT / 'runtime/include'}", f"-L{BUILD}", "-lposattn", f"-Wl,-rpath,{BUILD}", "-o", str(program)],
                   check=True)
    done = subprocess.run([str(program)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
