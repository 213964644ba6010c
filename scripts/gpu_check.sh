#!/usr/bin/env bash
# For a machine with a GPU (made for an NVIDIA one): builds every kernel in build-gpu/ without the
# autoscheduled baselines (they are CPU benchmarks and most of the build time), runs the harness's
# cases for the device, the PTX/SPIR-V checks and the device-buffer tests, then times every kernel
# on the device, and writes build-gpu/gpu_report.md. About 5 minutes on 16 cores.
#   scripts/gpu_check.sh [cuda|opencl|vulkan]      (default: cuda)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
device=${1:-cuda}
"$root/scripts/setup.sh"
export PATH="$root/.venv/bin:$PATH"
build="$root/build-gpu"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DPOSATTN_BASELINES=OFF \
    -DCMAKE_PREFIX_PATH="$(python -c 'import halide; print(halide.install_dir())');$(python -m pybind11 --cmakedir)" \
    -DPython_EXECUTABLE="$root/.venv/bin/python"
fi
cmake --build "$build"
{
  echo "# posattn on $device, $(date -u +%F)"
  echo
  if [ "$device" = cuda ] && command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo
  fi
  echo '```'
  # A present device is never skipped: its cases pass or fail.
  POSATTN_BUILD=build-gpu python -m pytest -q -p no:cacheprovider -k "$device" \
    "$root/tests/test_kernels.py" "$root/tests/test_device_code.py" "$root/tests/test_c_api.py" 2>&1 | tail -4
  echo '```'
  echo
  PYTHONPATH="$build/python" python "$root/bench/bench.py" --device "$device" --repeats 7
} | tee "$build/gpu_report.md"
