#!/bin/sh
# ggml's CPU backend, from the llama.cpp that llama-cpp-python vendors (its PyPI sdist: this machine
# reaches PyPI, not GitHub), built as llama.cpp builds it (native ISA, OpenMP), with
# bench/ggml_attention.c as build-ggml/libggml_attention.so for bench/peers.py. Idempotent: a
# second run with the library present does nothing.
#
#     scripts/ggml.sh [python]    # python: the one whose pip downloads the sdist (.venv-peers)
set -eu
cd "$(dirname "$0")/.."
VERSION=0.3.36  # llama-cpp-python; its vendor/llama.cpp is the ggml timed
OUT=build-ggml
PYTHON=${1:-.venv-peers/bin/python}
[ -f "$OUT/libggml_attention.so" ] && [ "$(cat "$OUT/version" 2>/dev/null)" = "$VERSION" ] && exit 0

export PATH="$PWD/.venv/bin:$PATH"  # the project's cmake and ninja (scripts/setup.sh)
mkdir -p "$OUT"
"$PYTHON" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$OUT"
tar xzf "$OUT/llama_cpp_python-$VERSION.tar.gz" -C "$OUT" "llama_cpp_python-$VERSION/vendor/llama.cpp/ggml"
GGML="$OUT/llama_cpp_python-$VERSION/vendor/llama.cpp/ggml"
touch "$GGML/ggml.pc.in"  # (left out of the sdist; a standalone configure writes a pkg-config file from it)
cmake -S "$GGML" -B "$OUT/ggml" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
      -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DGGML_NATIVE=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$OUT/ggml" --target ggml ggml-cpu ggml-base >/dev/null
cc -O2 -shared -fPIC -o "$OUT/libggml_attention.so" bench/ggml_attention.c -I"$GGML/include" \
   -Wl,--whole-archive "$OUT/ggml/src/libggml-cpu.a" -Wl,--no-whole-archive \
   "$OUT/ggml/src/libggml.a" "$OUT/ggml/src/libggml-base.a" -fopenmp -lstdc++ -lm
echo "$VERSION" > "$OUT/version"
