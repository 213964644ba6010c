#!/usr/bin/env bash
# Idempotent set-up of the optional peer environment (.venv-peers: torch, ONNX Runtime) that
# `make peers` benchmarks against and tests posattn's torch interop in. Python reaches the build's
# extension through PYTHONPATH=build/python, as in .venv (the same interpreter and NumPy).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv-peers"
stamp="$venv/.requirements"
if ! cmp -s "$root/scripts/requirements-peers.txt" "$stamp" 2>/dev/null; then
  echo "setup_peers: creating $venv (torch brings about 5 GB of CUDA wheels from PyPI)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/scripts/requirements-peers.txt"
  cp "$root/scripts/requirements-peers.txt" "$stamp"
fi
