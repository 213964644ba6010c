#!/usr/bin/env bash
# Cross-builds the kernels, runtime, C smoke test and Python module for AArch64 Linux in
# build-arm/ with Debian's cross g++, then for 32-bit ARM (armv7, build-arm32/) the kernels of the
# embedding example, its library and the example app; the generators are the host build's
# (scripts/build.sh).
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
# armv7: only the example's kernels (examples/embed/), no Python (no armhf CPython here).
if [ ! -f "$root/build-arm32/build.ninja" ]; then
  cmake -S "$root" -B "$root/build-arm32" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/arm-linux-gnueabihf.cmake" \
    -DHalideHelpers_DIR="$(python -c 'import halide; print(halide.install_dir())')/lib64/cmake/HalideHelpers" \
    -Dposattn-halide_generators_ROOT="$root/build" -DPOSATTN_PYTHON=OFF \
    -DPOSATTN_KERNELS="posattn_rope_f16;posattn_linear_f16;posattn_attn_plain_f16;posattn_attn_plain_f16_decode"
fi
cmake --build "$root/build-arm32"
