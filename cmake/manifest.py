"""The manifest's kernels (kernels.json), each storage dtype an entry lists as a kernel of its own:
posattn_attn_plain_f32_decode with "dtypes": ["bf16"] is also posattn_attn_plain_bf16_decode, its
params plus the dtype's ("dtype=bfloat16"), built where the dtype's "not_on" allows, with the f32
kernel's non-temporal twin (x86's large outputs run it) but not its autoscheduled baselines (the
dtype's "why"). "bf16_f32": bfloat16
inputs, a float32 out (posattn_attn_plain_bf16_f32_decode). "gpu_features": per GPU API, the target
features its instances add (vk_float16). "x86_levels": the x86 ISA levels its instances hold above
every x86 kernel's (avx512_zen4 for bfloat16's dot products). Each kernel carries its generator's
"algorithm_version" (the top-level "algorithm_versions"), which tuned records must match.

Run, it prints them as JSON ({"kernels": [...]}) for CMake; tests, tools and scripts import it."""
import json
import pathlib
import sys

MANIFEST = pathlib.Path(__file__).resolve().parents[1] / "kernels.json"


def kernels(path=MANIFEST):
    manifest = json.loads(pathlib.Path(path).read_text())
    expanded = []
    for kernel in manifest["kernels"]:
        expanded.append(dict(kernel, dtype="f32"))
        for name in kernel.get("dtypes", []):
            dtype = manifest["dtypes"][name]
            function = kernel["function"].replace("_f32", f"_{name}", 1)
            assert function != kernel["function"], f"{function}: no _f32 in its name to give the dtype"
            expanded.append(dict(function=function, generator=kernel["generator"], dtype=name,
                                 params=kernel["params"] + dtype["params"], autoschedulers=[],
                                 nontemporal=kernel.get("nontemporal", False),
                                 not_on={**kernel.get("not_on", {}), **dtype.get("not_on", {})}, why=dtype["why"],
                                 gpu_features=dtype.get("gpu_features", {}), x86_levels=dtype.get("x86_levels", [])))
    for kernel in expanded:
        kernel.pop("dtypes", None)
        kernel["algorithm_version"] = manifest["algorithm_versions"][kernel["generator"]]
    return expanded


if __name__ == "__main__":
    json.dump({"kernels": kernels(*sys.argv[1:])}, sys.stdout, ensure_ascii=False)
