#!/usr/bin/env bash
# Idempotent set-up: Debian packages, then the project-local Python environment (.venv).
# A second run finds everything in place and returns in about a second.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"

# Debian packages the build and the backends need (one per line in apt-packages.txt).
mapfile -t wanted < <(grep -v '^\s*#' "$root/scripts/apt-packages.txt" | grep -v '^\s*$')
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python environment; the stamp records the requirements it was built from.
stamp="$venv/.requirements"
if ! cmp -s "$root/scripts/requirements.txt" "$stamp" 2>/dev/null; then
  echo "setup: creating $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/scripts/requirements.txt"
  cp "$root/scripts/requirements.txt" "$stamp"
fi
