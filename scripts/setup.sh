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
  # The ARM leg runs Debian's arm64 libpython under qemu (multiarch).
  if printf '%s\n' "${missing[@]}" | grep -q ':arm64$' && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo_cmd[@]}" dpkg --add-architecture arm64
  fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python environment.
"$root/scripts/venv.sh" "$venv" "$root/scripts/requirements.txt"

# NumPy and ml_dtypes (bfloat16 arrays) for the ARM leg's Python (tests under qemu): PyPI's aarch64
# wheels of the pinned versions, unpacked beside the host environment; pure-Python packages
# (pytest) come from .venv itself.
arm_pins=$(grep -E '^(numpy|ml-dtypes)==' "$root/scripts/requirements.txt")
arm_site="$root/.venv/arm64-site-packages"
if ! cmp -s <(echo "$arm_pins") "$arm_site/.requirements" 2>/dev/null; then
  echo "setup: fetching" $arm_pins "for aarch64"
  rm -rf "$arm_site" && mkdir -p "$arm_site"
  wheels=$(mktemp -d)
  # shellcheck disable=SC2086 (one argument per pin)
  "$venv/bin/pip" download -q --disable-pip-version-check --only-binary=:all: --no-deps --implementation cp \
    --python-version 3.11 --platform manylinux_2_28_aarch64 --platform manylinux_2_17_aarch64 $arm_pins -d "$wheels"
  for wheel in "$wheels"/*.whl; do "$venv/bin/python" -m zipfile -e "$wheel" "$arm_site"; done
  rm -rf "$wheels"
  echo "$arm_pins" > "$arm_site/.requirements"
fi
