#!/usr/bin/env bash
# Configures (once) and builds the project in build/ with the toolchain from .venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
venv="$root/.venv"
export PATH="$venv/bin:$PATH"
if [ ! -f "$root/build/build.ninja" ]; then
  cmake -S "$root" -B "$root/build" -G Ninja \
    -DCMAKE_PREFIX_PATH="$(python -c 'import halide; print(halide.install_dir())');$(python -m pybind11 --cmakedir)" \
    -DPython_EXECUTABLE="$venv/bin/python"
fi
cmake --build "$root/build"
