"""The harness's coverage matrix, kernel × backend, from each backend leg's <build>/harness.json
(written by tests/conftest.py). A backend without results is shown as skipped, with the reason."""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# backend: (its build's results, the family its kernels report, why it is absent when it is)
BACKENDS = {
    "x86": (ROOT / "build", "x86", "no results: run `make test`"),
    "arm (qemu)": (ROOT / "build-arm", "arm", "no results: run scripts/build_arm.sh, then scripts/test_arm.sh"),
    "cuda": (None, "cuda", "not built yet: GPU schedules pending (issue 5); no GPU on this machine"),
    "vulkan (lavapipe)": (None, "vulkan", "not built yet: GPU schedules pending (issue 5)"),
    "opencl (pocl)": (None, "opencl", "not built yet: GPU schedules pending (issue 5)"),
}


def cell(counts):
    if counts is None:
        return "-"
    text = f"{counts.get('passed', 0)} passed"
    for outcome in ("failed", "skipped"):
        if counts.get(outcome):
            text += f", {counts[outcome]} {outcome}"
    return text


def main():
    kernels = [k["function"] for k in json.loads((ROOT / "kernels.json").read_text())["kernels"]]
    results, absent = {}, {}
    for backend, (build, family, why) in BACKENDS.items():
        path = build / "harness.json" if build else None
        if path and path.exists():
            results[backend] = {row["kernel"]: row for row in json.loads(path.read_text()) if row["family"] == family}
        else:
            absent[backend] = why
    print("| kernel | " + " | ".join(BACKENDS) + " |")
    print("|---" * (len(BACKENDS) + 1) + "|")
    failed = False
    for kernel in kernels:
        cells = []
        for backend in BACKENDS:
            if backend in absent:
                cells.append("skipped")
                continue
            row = results[backend].get(kernel)
            failed |= row is None or bool(row.get("failed"))
            cells.append(cell(row) if row else "**no cases run**")
        print(f"| {kernel} | " + " | ".join(cells) + " |")
    for backend, why in absent.items():
        print(f"skipped {backend}: {why}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
