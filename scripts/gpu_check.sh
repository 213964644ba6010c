#!/usr/bin/env bash
# For a machine with a GPU (made for an NVIDIA one): builds every kernel in build-gpu/ without the
# autoscheduled baselines (they are CPU benchmarks and most of the build time), runs the harness's
# cases for the device, the PTX/SPIR-V checks and the device-buffer tests, then times every kernel
# on the device, and writes build-gpu/gpu_report.md. About 5 minutes on 16 cores.
#   scripts/gpu_check.sh [cuda|opencl|vulkan]      (default: cuda)
# A GPU machine that cannot run the set-up (no network) takes a build-gpu/ made by this script on
# another x86-64 Linux machine (POSATTN_BUILD_ONLY=1 there stops after the build) and runs with
# POSATTN_PREBUILT=1: only the Python modules are compiled there, for its python3, with pybind11's
# headers from POSATTN_PYBIND11_INCLUDE_DIR (default: its pybind11 package).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
device=${1:-cuda}
build="$root/build-gpu"
if [ "${POSATTN_PREBUILT:-0}" = 1 ]; then
  python=python3
  package="$build/python/posattn"
  pybind11=${POSATTN_PYBIND11_INCLUDE_DIR:-$(python3 -c 'import pybind11; print(pybind11.get_include())')}
  flags=(-std=c++17 -shared -fPIC -fvisibility=hidden -isystem "$pybind11"
         -isystem "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')")
  suffix=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  rm -f "$package"/_posattn.*.so "$package"/_probes.*.so
  c++ "${flags[@]}" -O2 -I"$root/runtime/include" "$root/bindings/python/module.cpp" -L"$build" -lposattn \
    -Wl,-rpath,'$ORIGIN/../..' -o "$package/_posattn$suffix" &
  c++ "${flags[@]}" -O3 -march=native "$root/bench/probes.cpp" -o "$package/_probes$suffix" &
  wait %1
  wait %2
  cp "$root"/bindings/python/posattn/*.py "$package/"
else
  "$root/scripts/setup.sh"
  export PATH="$root/.venv/bin:$PATH"
  python=python
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DPOSATTN_BASELINES=OFF \
      -DCMAKE_PREFIX_PATH="$(python -c 'import halide; print(halide.install_dir())');$(python -m pybind11 --cmakedir)" \
      -DPython_EXECUTABLE="$root/.venv/bin/python"
  fi
  cmake --build "$build"
  [ "${POSATTN_BUILD_ONLY:-0}" = 1 ] && exit 0
fi
tests=("$root/tests/test_kernels.py" "$root/tests/test_device_buffers.py" "$root/tests/test_c_api.py")
# (The PTX and SPIR-V checks read the build's objects, which a prebuilt build-gpu/ need not carry:
# they ran where it was built.)
[ "${POSATTN_PREBUILT:-0}" = 1 ] || tests+=("$root/tests/test_device_code.py")
{
  echo "# posattn on $device, $(date -u +%F)"
  echo
  if [ "$device" = cuda ] && command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo
  fi
  echo '```'
  # A present device is never skipped: its cases pass or fail. The whole log: build-gpu/gpu_tests.log.
  status=0
  POSATTN_BUILD=build-gpu $python -m pytest -q -p no:cacheprovider -k "$device" "${tests[@]}" \
    > "$build/gpu_tests.log" 2>&1 || status=$?
  echo $status > "$build/gpu_tests.status"
  tail -4 "$build/gpu_tests.log"
  echo '```'
  echo
  PYTHONPATH="$build/python" $python "$root/bench/bench.py" --device "$device" --repeats "${POSATTN_REPEATS:-7}" --json "$build/gpu_bench.json"
} | tee "$build/gpu_report.md"
# The script fails where pytest did (a failed test, or a crash that printed no summary).
exit "$(cat "$build/gpu_tests.status")"
