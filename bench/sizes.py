"""What an app pays in bytes for posattn, per mobile target: each kernel of a set, Halide's runtime
and posattn's runtime + C ABI, as the code and data an app loads (text + data of the objects:
what stays after stripping; relocations and symbols go). Writes docs/sizes.md.

    .venv/bin/python bench/sizes.py      # after scripts/build.sh and scripts/build_arm.sh

Each kernel is compiled for each target by the host build's generators (through the kernel cache,
cmake/kernel_cache.sh); posattn's runtime is measured where this machine compiles it (x86-64 and
arm64 Linux: build/, build-arm/)."""
import fnmatch
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "cmake"))
import manifest  # noqa: E402

OUT = ROOT / "build" / "sizes"
FEATURES = "user_context-large_buffers"
# The mobile targets, each kernel compiled for it alone; then the host build's x86-64 Linux
# libraries as they are (four ISA levels each, and a Halide runtime with the GPU APIs'), for comparison.
TARGETS = {
    "arm64 Linux": "arm-64-linux",
    "Android arm64-v8a": "arm-64-android",
    "Android armeabi-v7a": "arm-32-android",
    "Android x86_64 (emulator)": "x86-64-android-sse41",
    "iOS arm64": "arm-64-ios",
}
HOST_LABEL = "x86-64 Linux (4 ISA levels, the host build)"
# Sets an app ships (POSATTN_KERNELS patterns): one Llama-style model's decoding (its GQA group of 2-4
# takes the "decode" class); the same in float16; what the other group sizes' classes would add.
SETS = {
    "LLM decoding: RoPE + plain attention, prefill and decode, float32 + float16":
        ["posattn_rope_f32", "posattn_rope_f16", "posattn_attn_plain_f32", "posattn_attn_plain_f16",
         "posattn_attn_plain_f32_decode", "posattn_attn_plain_f16_decode"],
    "the same in float16 only, with linear": ["posattn_rope_f16", "posattn_linear_f16", "posattn_attn_plain_f16",
                                              "posattn_attn_plain_f16_decode"],
    "the decode classes alone (GQA groups of 1, 2 to 4, 5 to 8), float32 + float16":
        ["posattn_attn_plain_f32_decode*", "posattn_attn_plain_f16_decode*"],
}
# The runtime objects each native build compiles, by the target family they stand for.
RUNTIME = {"arm": ROOT / "build-arm" / "libposattn_runtime_objects.a", "x86": ROOT / "build" / "libposattn_runtime_objects.a"}


def loaded_bytes(path):
    """text + data of an object or archive (llvm-size reads ELF and Mach-O alike)."""
    out = subprocess.run(["llvm-size", "-B", str(path)], check=True, capture_output=True, text=True).stdout
    return sum(int(line.split()[0]) + int(line.split()[1]) for line in out.splitlines()[1:] if line.split()[0].isdigit())


def compile_object(name, args, target):
    """posattn_generators' object for one target, through the kernel cache (args: -g generator ...,
    a kernel without Halide's runtime; or -r name, the runtime alone)."""
    folder = OUT / target
    folder.mkdir(parents=True, exist_ok=True)
    features = FEATURES if args[0] == "-r" else FEATURES + "-no_runtime"
    subprocess.run([str(ROOT / "cmake" / "kernel_cache.sh"), str(ROOT / "build" / "posattn_generators"), *args,
                    "-e", "object", "-o", str(folder), f"target={target}-{features}"], check=True, capture_output=True)
    return folder / f"{name}.o"


def kernel_bytes(entry, target):
    name = entry["function"]
    return loaded_bytes(compile_object(name, ["-g", entry["generator"], "-f", name, "-n", name, *entry["params"]], target))


def main():
    kernels = {k["function"]: k for k in manifest.kernels()}
    chosen = {set_name: sorted({f for f in kernels for p in patterns if fnmatch.fnmatchcase(f, p)})
              for set_name, patterns in SETS.items()}
    wanted = sorted({f for names in chosen.values() for f in names})
    sizes = {}
    for label, target in TARGETS.items():
        sizes[label] = {"kernels": {f: kernel_bytes(kernels[f], target) for f in wanted},
                        "halide": loaded_bytes(compile_object("halide_runtime", ["-r", "halide_runtime"], target)),
                        "runtime": loaded_bytes(RUNTIME["arm"])}
        print(label, json.dumps(sizes[label]), flush=True)
    host = ROOT / "build"
    sizes[HOST_LABEL] = {"kernels": {f: loaded_bytes(host / f"lib{f}.a") for f in wanted},
                         "halide": loaded_bytes(host / "libposattn_halide_runtime.a"), "runtime": loaded_bytes(RUNTIME["x86"])}
    # Every kernel of the manifest, as a default build holds them: what choosing a set saves.
    every = {label: sum(loaded_bytes(build / f"lib{f}.a") for f in kernels)
             for label, build in (("arm64 Linux", ROOT / "build-arm"), (HOST_LABEL, ROOT / "build"))}
    (OUT / "sizes.json").write_text(json.dumps(dict(sizes=sizes, every_kernel=every), indent=1))
    write_markdown(sizes, chosen, every)


def kib(n):
    return f"{n / 1024:.0f} KiB"


def write_markdown(sizes, chosen, every):
    labels = list(sizes)
    lines = ["# Sizes: what an app pays for posattn", "",
             "Generated by `bench/sizes.py` (docs/embedding.md): the code and data each piece adds to an app",
             "(text + data of its objects, as `llvm-size` reads them: what stays after stripping).",
             "posattn's runtime and C ABI are compiled here for x86-64 and arm64 Linux (`-Os` in the cross build:",
             "`POSATTN_STATIC_FOR_SIZE`); on Android and iOS (no NDK or Apple SDK on this machine) the arm64",
             "Linux figure stands in for it, marked *. The C++ standard library the app links is not counted.", ""]
    for set_name, names in chosen.items():
        lines += [f"## {set_name}", "", "| | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
        for f in names:
            lines.append(f"| `{f}` | " + " | ".join(kib(sizes[l]["kernels"][f]) for l in labels) + " |")
        kernel_sums = [sum(sizes[l]["kernels"][f] for f in names) for l in labels]
        lines.append("| **kernels** | " + " | ".join(f"**{kib(s)}**" for s in kernel_sums) + " |")
        lines.append("| Halide runtime | " + " | ".join(kib(sizes[l]["halide"]) for l in labels) + " |")
        native = {"arm64 Linux", HOST_LABEL}
        lines.append("| posattn runtime + C ABI | " + " | ".join(
            kib(sizes[l]["runtime"]) + ("" if l in native else "*") for l in labels) + " |")
        totals = [k + sizes[l]["halide"] + sizes[l]["runtime"] for k, l in zip(kernel_sums, labels)]
        lines += ["| **total** | " + " | ".join(f"**{kib(t)}**" for t in totals) + " |", ""]
    lines += ["## What costs the bytes", "",
              "- **Unused kernels**: a default build holds every kernel of the manifest: " +
              ", ".join(f"{kib(n)} of kernels on {label}" for label, n in every.items()) +
              ". An app's build selects its set (`POSATTN_KERNELS`, [embedding.md](embedding.md)).",
              "- **Multi-ISA variants**: an x86-64 Linux kernel holds four ISA levels (AVX-512, AVX2, SSE4.1,",
              "  baseline), each compiled whole; an Android x86_64 build needs one (`x86-64-android-sse41` above).",
              "- **posattn's runtime**: the argument checks, the float64 set-up and the C ABI of every family,",
              "  whatever the set (compiled `-O3` it is 411 KiB on arm64). **Halide's runtime**: once per library.", ""]
    (ROOT / "docs" / "sizes.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
