#!/bin/sh
# The library an app embeds: the runtime, its C ABI, the kernels and Halide's runtime prelinked
# into one object whose only global symbols are posattn.h's functions (an app's own Halide, C++
# or posattn_* kernel symbols cannot clash with them), archived as OUT.
# usage: embed_library.sh LD OBJCOPY AR HEADER OUT ARCHIVE...
set -eu
ld=$1 objcopy=$2 ar=$3 header=$4 out=$5
shift 5
work="$out.partial"
rm -rf "$work" && mkdir -p "$work"
grep -o 'posattn_[a-z0-9_]*(' "$header" | tr -d '(' | sort -u > "$work/symbols.txt"
"$ld" -r -o "$work/posattn_embed.o" --whole-archive "$@" --no-whole-archive
"$objcopy" --keep-global-symbols="$work/symbols.txt" "$work/posattn_embed.o"
"$ar" qc "$work/lib.a" "$work/posattn_embed.o"
mv "$work/lib.a" "$out"
rm -rf "$work"
