"""The GPU code inside the AOT libraries, validated by the vendors' own tools: every CUDA kernel's
PTX assembled by ptxas (for the capability it was built for, and sm_90), every Vulkan kernel's
SPIR-V checked by spirv-val. Halide embeds the device code in the host object's .rodata."""
import pathlib
import re
import shutil
import struct
import subprocess

import pytest

from conftest import BUILD, NATIVE_BUILD, manifest

pytestmark = pytest.mark.skipif(not NATIVE_BUILD, reason="GPU kernels are built by the host's own build only")
PTXAS = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
SPIRV_MAGIC = struct.pack("<I", 0x07230203)


def objects(api):
    """The objects of every kernel built for the API (kernels.json): <kernel>_<api>.o, or one
    <kernel>_<api>-<target>.o per target."""
    found = []
    for kernel in manifest():
        if api not in kernel.get("not_on", {}):
            name = f"{kernel['function']}_{api}"
            built = sorted(BUILD.glob(f"{name}.o")) + sorted(BUILD.glob(f"{name}-*.o"))
            assert built, f"no {api} object of {kernel['function']} in {BUILD}"
            found += built
    return found


def object_id(path):
    kernel, _, target = path.stem.partition("-")
    capability = re.search(r"cuda_capability_\d+", target)
    return kernel + (":" + capability.group(0) if capability else "")


def rodata(obj, tmp_path):
    out = tmp_path / (obj.stem + ".rodata")
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.rodata", str(obj), str(out)], check=True)
    return out.read_bytes()


def ptx_modules(data):
    """Each NUL-terminated PTX text (from the line before its .version directive)."""
    for match in re.finditer(rb"\.version \d+\.\d+", data):
        start = data.rfind(b"\0", 0, match.start()) + 1
        yield data[start:data.index(b"\0", match.start())].decode()


OP_FUNCTION_END = 56


def spirv_modules(data):
    """Each SPIR-V module: its 5-word header, then instructions (word count in each first word's
    high half) up to its last OpFunctionEnd before the next module (functions end a module).
    Whatever .rodata holds after it (zeros, or other constants) is not part of it."""
    starts = [m.start() for m in re.finditer(re.escape(SPIRV_MAGIC), data) if m.start() % 4 == 0]
    for start, limit in zip(starts, starts[1:] + [len(data)]):
        at, end = start + 20, None
        while at + 4 <= limit:
            word = struct.unpack_from("<I", data, at)[0]
            count, opcode = word >> 16, word & 0xFFFF
            if count == 0 or at + 4 * count > limit:
                break
            at += 4 * count
            if opcode == OP_FUNCTION_END:
                end = at
        assert end is not None, f"SPIR-V module at {start} has no OpFunctionEnd"
        yield data[start:end]


@pytest.mark.parametrize("obj", objects("cuda") if NATIVE_BUILD else [], ids=object_id)
def test_ptx_assembles(obj, tmp_path):
    modules = list(ptx_modules(rodata(obj, tmp_path)))
    assert modules, f"no PTX in {obj.name}"
    for n, ptx in enumerate(modules):
        built_for = re.search(r"^\.target (sm_\d+)", ptx, re.M).group(1)
        source = tmp_path / f"{n}.ptx"
        source.write_text(ptx)
        for gpu in sorted({built_for, "sm_90"}):
            run = subprocess.run([PTXAS, "--gpu-name", gpu, "-o", str(tmp_path / "out.cubin"), str(source)],
                                 capture_output=True, text=True)
            assert run.returncode == 0, f"ptxas --gpu-name {gpu}: {run.stderr}"


@pytest.mark.parametrize("obj", objects("vulkan") if NATIVE_BUILD else [], ids=object_id)
def test_spirv_validates(obj, tmp_path):
    modules = list(spirv_modules(rodata(obj, tmp_path)))
    assert modules, f"no SPIR-V in {obj.name}"
    for n, module in enumerate(modules):
        binary = tmp_path / f"{n}.spv"
        binary.write_bytes(module)
        run = subprocess.run(["spirv-val", "--target-env", "vulkan1.2", str(binary)], capture_output=True, text=True)
        assert run.returncode == 0, f"spirv-val: {run.stdout}{run.stderr}"
