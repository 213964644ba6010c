#!/usr/bin/env bash
# The sanitized leg: the runtime, Python module and C smoke test built with ASan + UBSan
# (build/sanitized/, over build/'s kernels) run the C smoke test, the C ABI's tests, the error
# cases and a fuzz slice. Python itself is not instrumented: ASan's runtime is preloaded into it,
# with the C++ library (whose exceptions ASan intercepts), and leak checks are left to the C
# program (the interpreter keeps memory to its end).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_OPTIONS=detect_leaks=1 "$root/build/sanitized/c_api_smoke"
ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)" POSATTN_SANITIZED=1 \
  "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$root/tests/test_c_api.py" "$root/tests/test_errors.py" "$root/tests/test_fuzz.py" "$@"
