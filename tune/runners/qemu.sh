#!/bin/sh
# A tune.py --runner for the AArch64 build under qemu-user (build-arm/, scripts/build_arm.sh): the
# runner protocol end to end on this machine. measure.py refuses to time under emulation, so only
# --check-only runs here (scripts/test_arm.sh); a board runs local.sh with its own build instead.
root=$(cd "$(dirname "$0")/../.." && pwd)
PYTHONHOME=/usr PYTHONPATH="$root/build-arm/python:$root/.venv/arm64-site-packages:$root/.venv/lib/python3.11/site-packages" \
  exec qemu-aarch64-static "$root/build-arm/python3.11" "$root/tune/measure.py" "$@"
