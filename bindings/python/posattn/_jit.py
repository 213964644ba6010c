"""Kernels compiled at run time: any kernel of this build, with any generator and schedule params,
for this CPU or a GPU API, called through the same runtime, checks and errors as the AOT kernels.

Halide compiles in a helper process, posattn's generator executable (`posattn_generators`: the
build's, an install's libexec/posattn/, or $POSATTN_GENERATORS), and the result is linked against
the libposattn this process runs and loaded into it (posattn.load_kernel). The tuner compiles its
candidates the same way (tune/tune.py), and no second LLVM enters the caller's process (PoCL
brings its own). Compiled kernels are cached on disk ($POSATTN_JIT_CACHE, by default
~/.cache/posattn/jit) by a key of the generator executable's content, the Halide library it runs
(its versioned file name), the generator, its params and the target.
"""
import functools
import hashlib
import json
import os
import pathlib
import re
import subprocess
import tempfile

from . import _posattn

# Kernels loaded into a runtime take its Halide runtime (no_runtime) and its calling convention.
FEATURES = "user_context-large_buffers-no_runtime"
# The build's GPU targets (CMakeLists.txt, POSATTN_GPU_TARGET_<api>); CUDA's lowest capability,
# which runs on every newer GPU too.
GPU_TARGETS = {"cuda": "x86-64-linux-cuda-cuda_capability_80", "opencl": "x86-64-linux-opencl-cl_doubles",
               "vulkan": "x86-64-linux-vulkan-vk_int8-vk_int64-vk_float64"}
_PACKAGE = pathlib.Path(__file__).resolve().parent


def host_target():
    """The CPU target of this machine that the build's multi-target libraries dispatch to."""
    if os.uname().machine in ("aarch64", "arm64"):
        return "arm-64-linux"
    flags = pathlib.Path("/proc/cpuinfo").read_text()
    if " avx512f " in flags and " avx512bw " in flags:
        return "x86-64-linux-avx512_skylake"
    if " avx2 " in flags and " fma " in flags:
        return "x86-64-linux-avx2-fma-f16c-sse41"
    return "x86-64-linux-sse41"


@functools.cache
def built_kernels():
    """{(function, family): (generator, params)}: every kernel of this build, with the generator
    params it was compiled with (tuned schedule params included)."""
    rows = json.loads((_PACKAGE / "built_kernels.json").read_text())["kernels"]
    return {(r["function"], r["family"]): (r["generator"], r["params"]) for r in rows}


@functools.cache
def runtime_library():
    """The libposattn this process runs (the one loaded kernels link against)."""
    for line in pathlib.Path("/proc/self/maps").read_text().splitlines():
        path = line.split(maxsplit=5)[-1]
        if path.endswith("/libposattn.so"):
            return pathlib.Path(path)
    raise _posattn.Error("posattn.jit: libposattn.so is not loaded in this process")


def generator_binary():
    """posattn's generator executable: $POSATTN_GENERATORS, or the one beside this runtime's build
    or install."""
    library = runtime_library()
    candidates = [os.environ.get("POSATTN_GENERATORS"), library.parent / "posattn_generators",
                  library.parents[1] / "libexec/posattn/posattn_generators"]
    for candidate in filter(None, candidates):
        if os.access(candidate, os.X_OK):
            return pathlib.Path(candidate)
    raise _posattn.Error("posattn.jit: no posattn_generators executable beside " + str(library) +
                         " (a pip wheel has none: set POSATTN_GENERATORS to one of a build or an install)")


@functools.cache
def _fingerprint(binary, mtime_ns, size):
    """The generator executable's content and the Halide library it runs, by versioned file name."""
    digest = hashlib.sha256(pathlib.Path(binary).read_bytes()).hexdigest()
    linked = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    halide = re.search(r"libHalide\.so\S* => (\S+)", linked)
    return digest, os.path.basename(os.path.realpath(halide.group(1))) if halide else "static"


def compile_library(binary, generator, symbol, target, params, workdir, *, emit="object", extra_args=(),
                    link_inputs=None, cxx="c++", libdir=None, timeout=None):
    """Runs `generator` of posattn's generator executable `binary` for `symbol` on `target` (the
    runtime's features added) with `params` ("name=value" each) into workdir, then links the
    object, or link_inputs(workdir) where given, into workdir/<symbol>.so against the libposattn
    of libdir (this process's by default). Returns the library; RuntimeError with Halide's message
    (or after `timeout` seconds)."""
    workdir = pathlib.Path(workdir)
    args = [str(binary), *extra_args, "-g", generator, "-f", symbol, "-o", str(workdir), "-e", emit,
            f"target={target}-{FEATURES}", *params]
    try:
        run = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"compile took over {timeout} s") from None
    if run.returncode:
        message = (run.stderr.strip().splitlines() or ["compile failed"])[-1]
        raise RuntimeError(message.removeprefix("Unhandled exception: "))
    libdir = libdir or runtime_library().parent
    library = workdir / f"{symbol}.so"
    inputs = link_inputs(workdir) if link_inputs else [str(workdir / f"{symbol}.o")]
    subprocess.run([cxx, "-shared", "-o", str(library), *inputs, f"-L{libdir}", "-lposattn", f"-Wl,-rpath,{libdir}"],
                   check=True, capture_output=True)
    return library


def _params_text(value, name):
    """{name: value} as the strings a generator takes; ArgumentTypeError naming `name` otherwise."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float, bool))
                                              for k, v in value.items()):
        raise _posattn.ArgumentTypeError(f"posattn.jit: argument '{name}' must be a dict of {{str: str, int, "
                                         f"float or bool}}, got {value!r}")
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


_loaded = {}  # key -> schedule name, the kernels this process loaded


def jit(function, *, params=None, schedule_params=None, device="cpu"):
    """Compiles `function` (a kernel of this build: kernels()) at run time and adds it as a schedule
    of that function on `device`; returns the schedule's name, for any call's schedule=.

    params: generator params {name: value} over those the AOT kernel was compiled with, so that
    jit(function) compiles the AOT kernel itself; schedule_params: {field: value} replacing the AOT
    kernel's (the schedule's fields: docs/autotuning.md). The first call with given arguments
    compiles (seconds to minutes); later ones, in this process or another, load it from the cache."""
    from . import load_kernel  # (the package's, which names bad arguments)
    if not isinstance(function, str):
        raise _posattn.ArgumentTypeError(f"posattn.jit: argument 'function' must be a str, got {function!r}")
    if device not in ("cpu", *GPU_TARGETS):
        raise _posattn.Error(f"posattn.jit: argument 'device' is {device!r}; expected 'cpu' or one of {list(GPU_TARGETS)}")
    target = host_target() if device == "cpu" else GPU_TARGETS[device]
    family = device if device != "cpu" else "arm" if target.startswith("arm") else "x86"
    if (function, family) not in built_kernels():
        raise _posattn.Error(f"posattn.jit: argument 'function' is {function!r}, which this build has no "
                             f"'{device}' kernel of (see posattn.kernels())")
    generator, aot_params = built_kernels()[function, family]
    given = dict(p.split("=", 1) for p in aot_params)
    given.update(_params_text(params or {}, "params"))
    if schedule_params is not None:
        given["schedule_params"] = ",".join(f"{k}:{v}" for k, v in _params_text(schedule_params, "schedule_params").items())
    binary = generator_binary()
    stat = binary.stat()
    key = hashlib.sha256(json.dumps([_fingerprint(str(binary), stat.st_mtime_ns, stat.st_size), generator,
                                     sorted(given.items()), target, FEATURES]).encode()).hexdigest()[:32]
    if key in _loaded:
        return _loaded[key]
    symbol = f"posattn_jit_{key}"
    library = _cache_dir() / key / f"{symbol}.so"
    if not library.exists():
        _compile_into_cache(library, binary, generator, symbol, target, [f"{k}={v}" for k, v in given.items()])
    schedule = f"jit_{key[:16]}"
    load_kernel(str(library), symbol, function, schedule, device)
    _loaded[key] = schedule
    return schedule


def _cache_dir():
    default = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "posattn/jit"
    return pathlib.Path(os.environ.get("POSATTN_JIT_CACHE", default))


def _compile_into_cache(library, binary, generator, symbol, target, params):
    """Compiled in a folder of its own and moved into place whole: the cache never holds a part."""
    library.parent.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=library.parent.parent, prefix=".compiling.") as workdir:
        try:
            compile_library(binary, generator, symbol, target, params, workdir)
        except RuntimeError as e:
            argument = "schedule_params" if "schedule param" in str(e) else "params"
            raise _posattn.Error(f"posattn.jit: argument '{argument}': {e}") from None
        for made in pathlib.Path(workdir).glob(f"{symbol}.[!s]*"):
            made.unlink()  # (only the library is kept)
        try:
            os.rename(workdir, library.parent)
        except OSError:  # another process put it there first
            pass
        os.makedirs(workdir, exist_ok=True)  # (for TemporaryDirectory's cleanup)
