#!/usr/bin/env bash
# The ARM leg: the C ABI smoke test and the whole pytest harness on the AArch64 build
# (scripts/build_arm.sh), run by Debian's arm64 CPython under qemu. Arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
arm="$root/build-arm"
qemu-aarch64-static "$arm/c_api_smoke"
PYTHONHOME=/usr PYTHONPATH="$root/.venv/arm64-site-packages:$root/.venv/lib/python3.11/site-packages" \
  POSATTN_BUILD=build-arm POSATTN_PYTHON_COMMAND="qemu-aarch64-static $arm/python3.11" POSATTN_RUN_PREFIX=qemu-aarch64-static \
  qemu-aarch64-static "$arm/python3.11" -m pytest -q -p no:cacheprovider "$root/tests" "$@"
