#!/usr/bin/env bash
# Cross-builds the kernels, runtime, C smoke test and Python module for AArch64 Linux in
# build-arm/ with Debian's cross g++; the generators are the host build's (scripts/build.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
export PATH="$root/.venv/bin:$PATH"
if [ ! -f "$root/build-arm/build.ninja" ]; then
  cmake -S "$root" -B "$root/build-arm" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
    -DCMAKE_PREFIX_PATH="$(python -c 'import halide; print(halide.install_dir())')" \
    -Dposattn-halide_generators_ROOT="$root/build" \
    -DPOSATTN_PYBIND11_INCLUDE_DIR="$(python -c 'import pybind11; print(pybind11.get_include())')"
fi
cmake --build "$root/build-arm"
