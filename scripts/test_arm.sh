#!/usr/bin/env bash
# The ARM leg: the C ABI smoke test and the whole pytest harness on the AArch64 build
# (scripts/build_arm.sh), run by Debian's arm64 CPython under qemu (arguments go to pytest), then
# the embedding example on armv7 (build-arm32, under qemu-arm), then the tuner's runner protocol
# end to end: ARM candidates compiled here, checked by measure.py under qemu (tune/runners/qemu.sh),
# untimed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
arm="$root/build-arm"
qemu-aarch64-static "$arm/c_api_smoke"
PYTHONHOME=/usr PYTHONPATH="$root/.venv/arm64-site-packages:$root/.venv/lib/python3.11/site-packages" \
  POSATTN_BUILD=build-arm POSATTN_PYTHON_COMMAND="qemu-aarch64-static $arm/python3.11" POSATTN_RUN_PREFIX=qemu-aarch64-static \
  qemu-aarch64-static "$arm/python3.11" -m pytest -q -p no:cacheprovider "$root/tests" "$@"
POSATTN_EMBED_BUILD=build-arm32 POSATTN_RUN_PREFIX="qemu-arm-static -L /usr/arm-linux-gnueabihf" \
  "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/test_embed.py"
PYTHONPATH="$root/build/python" "$root/.venv/bin/python" "$root/tune/tune.py" posattn_linear_f32 posattn_rope_f32 \
  --target arm-64-linux --runner "$root/tune/runners/qemu.sh" --check-only --random 1
