#!/usr/bin/env bash
# The build's launcher of custom commands (RULE_LAUNCH_CUSTOM, CMakeLists.txt): a run of
# posattn_generators whose inputs were compiled before copies that run's outputs from the kernel
# cache instead of compiling them again; every other command runs as it is. A run is keyed by
# what decides its outputs: the generators' and schedules' sources, the pinned Halide, its
# arguments (output directory aside, an autoscheduler plugin by name) and, for a `host` target,
# this CPU's features. The cache, ${POSATTN_KERNEL_CACHE:-~/.cache/posattn/kernels}, lives
# outside the clone, so a clean clone on a machine that built the same kernels before (CI)
# compiles none of them; POSATTN_KERNEL_CACHE=off turns it off. Nothing is ever evicted: delete
# the folder to reclaim its space.
set -euo pipefail
[[ "$(basename "$1")" == posattn_generators ]] || exec "$@"
cache=${POSATTN_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/posattn/kernels}
[[ "$cache" != off ]] || exec "$@"
root=$(cd "$(dirname "$0")/.." && pwd)

# The key's view of the arguments, the output directory, and the command writing elsewhere.
command=("$1") key_args=() out= host=
shift
while (($#)); do
  case "$1" in
    -o) out=$2; key_args+=(-o); command+=(-o "@made@"); shift 2; continue ;;
    -p) key_args+=(-p "$(basename "$2")"); command+=(-p "$2"); shift 2; continue ;;
    *target=host*) host=$(grep -m1 '^flags' /proc/cpuinfo || uname -m) ;;
  esac
  key_args+=("$1") command+=("$1")
  shift
done
[[ -n "$out" ]] || exec "${command[@]}"
key=$({
  # (tuned records, schedules/tuned/, reach a kernel only through its arguments, keyed below)
  find "$root/generators" "$root/schedules" -type f -not -path "$root/schedules/tuned/*" | LC_ALL=C sort | xargs cat
  grep '^halide==' "$root/scripts/requirements.txt"
  cat "$0"
  printf '%s\n' "${key_args[@]}" "$host"
} | sha256sum | cut -c1-32)
entry=$cache/$key

mkdir -p "$out"
if [[ -d "$entry" ]]; then
  cp "$entry"/* "$out"/
  exit 0
fi
# Compiled into a folder of its own, then copied into the cache (whole, or not at all) and moved out.
made=$(mktemp -d "$out/.kernel_cache.XXXXXX")
trap 'rm -rf "$made"' EXIT
"${command[@]/#@made@/$made}"
if mkdir -p "$cache" 2>/dev/null; then
  staging=$(mktemp -d "$cache/.staging.XXXXXX")
  { cp "$made"/* "$staging"/ && mv -T "$staging" "$entry"; } 2>/dev/null || rm -rf "$staging"
fi
mv "$made"/* "$out"/
