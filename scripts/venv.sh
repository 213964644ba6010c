#!/usr/bin/env bash
# venv.sh VENV REQUIREMENTS: creates the Python environment VENV from the pinned REQUIREMENTS,
# unless its stamp says it was made from the same file (a second run returns at once).
set -euo pipefail
venv=$1 requirements=$2
stamp="$venv/.requirements"
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
  echo "setup: creating $venv from $requirements"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$stamp"
fi
