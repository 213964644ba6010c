"""The harness's coverage matrix, kernel × backend, from each leg's <build>/harness.json (written
by tests/conftest.py): passed / failed / skipped counts, "not built" where kernels.json says why
a kernel is not built for a GPU API, and the reasons for every skip. "<api> buffers": the same
cases with their float32 operands as device buffers the caller owns; "<api> reversed": with every
array operand a view with negative and padded strides in every outer axis."""
import collections
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "cmake"))
import manifest  # noqa: E402 (cmake/manifest.py: a kernel per storage dtype)
# backend: (the build whose leg ran it, the family its kernels report)
BACKENDS = {
    "x86": ("build", "x86"),
    "arm (qemu)": ("build-arm", "arm"),
    "opencl (PoCL)": ("build", "opencl"),
    "opencl buffers": ("build", "opencl-buffers"),
    "opencl reversed": ("build", "opencl-reversed"),
    "vulkan (lavapipe)": ("build", "vulkan"),
    "vulkan reversed": ("build", "vulkan-reversed"),
    "cuda": ("build", "cuda"),
    "cuda buffers": ("build", "cuda-buffers"),
    "cuda reversed": ("build", "cuda-reversed"),
}


def main():
    kernels = manifest.kernels()
    legs = {}
    for build in {b for b, _ in BACKENDS.values()}:
        path = ROOT / build / "harness.json"
        legs[build] = json.loads(path.read_text()) if path.exists() else None
    print("| kernel | " + " | ".join(BACKENDS) + " |")
    print("|---" * (len(BACKENDS) + 1) + "|")
    not_built, notes, failed = collections.defaultdict(list), set(), False
    for kernel in kernels:
        cells = []
        for backend, (build, family) in BACKENDS.items():
            why_not = kernel.get("not_on", {}).get(family.partition("-")[0])
            rows = [r for r in legs[build] or [] if r["kernel"] == kernel["function"] and r["family"] == family]
            if why_not:
                cells.append("not built")
                not_built[why_not].append(f"{kernel['function'].removeprefix('posattn_')}.{family}")
            elif legs[build] is None:
                cells.append("no results")
                notes.add(f"{backend}: no results in {build}/ (run make test)")
            elif not rows:
                cells.append("**no cases ran**")
                failed = True
            else:
                counts = rows[0]
                text = ", ".join(f"{counts[o]} {o}" for o in ("passed", "failed", "skipped") if counts.get(o))
                cells.append(f"**{text}**" if counts.get("failed") else text)
                failed |= bool(counts.get("failed"))
                notes.update(f"skipped on {backend}: {reason}" for reason in counts["skip_reasons"])
        print(f"| {kernel['function']} | " + " | ".join(cells) + " |")
    for why, where in not_built.items():
        print(f"not built ({', '.join(where)}): {why}")
    for note in sorted(notes):
        print(note)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
