"""The library an app embeds (build/embed/libposattn_embed.a, docs/embedding.md) and the example
app on it (examples/embed/decode_step.c), on this leg's build: x86, or AArch64 under qemu; or the
build POSATTN_EMBED_BUILD names (scripts/test_arm.sh: armv7, build-arm32)."""
import os
import re
import shlex
import subprocess

import numpy as np
import pytest

from cases import ATTN_ATOL, ATTN_RTOL, ROPE_ATOL, ROPE_RTOL
from conftest import BUILD, ROOT
from posattn import reference

EMBED_BUILD = ROOT / os.environ["POSATTN_EMBED_BUILD"] if "POSATTN_EMBED_BUILD" in os.environ else BUILD
EMBED = EMBED_BUILD / "embed" / "libposattn_embed.a"
APP = EMBED_BUILD / "embed_decode_step"
HEADER = ROOT / "runtime" / "include" / "posattn" / "posattn.h"
F16_ROUNDOFF, F16_SUBNORMAL = 2.0**-11, 2.0**-25
# How this leg starts one of its build's programs (scripts/test_arm.sh: under qemu).
RUN = shlex.split(os.environ.get("POSATTN_RUN_PREFIX", ""))


def build_tool(name):
    """A binutils program of the build's toolchain (CMAKE_NM: the cross one in the ARM leg)."""
    return re.search(rf"^CMAKE_{name}:FILEPATH=(.*)$", (EMBED_BUILD / "CMakeCache.txt").read_text(), re.M).group(1)


def test_the_embedded_library_exports_the_c_abi_and_nothing_else():
    declared = set(re.findall(r"\b(posattn_\w+)\(", HEADER.read_text()))
    symbols = subprocess.run([build_tool("NM"), "-g", "--defined-only", str(EMBED)], check=True, capture_output=True,
                             text=True).stdout
    exported = {line.split()[-1] for line in symbols.splitlines() if len(line.split()) == 3}
    assert exported == declared


def xorshift_fill(state, count, scale):
    """examples/embed/decode_step.c's fill(): the app's inputs, drawn again here."""
    values = np.empty(count, np.float32)
    for i in range(count):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        values[i] = np.float32(scale) * (np.float32(state >> 8) / np.float32(1 << 23) - np.float32(1))
    return state, values.astype(np.float16)


def linear_bound(x, w):
    """float32 accumulation of x·wᵀ (n·u·Σ|x||w|), then the float16 rounding of the result."""
    return x.shape[-1] * 2.0**-24 * (np.abs(x) @ np.abs(w).T) + F16_SUBNORMAL


def close(actual, expected, atol, rtol, what):
    error = np.abs(actual.astype(np.float64) - expected)
    bad = error > atol + rtol * np.abs(expected)
    assert not bad.any(), f"{what}: {bad.sum()} of {bad.size} elements off, worst {error.max():.3g}"


@pytest.mark.skipif(not APP.exists() and "POSATTN_EMBED_BUILD" not in os.environ,
                    reason="the build has not the app's float16 kernels (POSATTN_KERNELS)")
def test_the_decode_step_app_matches_float64(tmp_path):
    dump = tmp_path / "step.bin"
    run = subprocess.run(RUN + [str(APP), str(dump)], check=True, capture_output=True, text=True, timeout=600)
    sizes = dict(item.split("=") for item in re.search(r"^sizes (.*)$", run.stdout, re.M).group(1).split())
    E, Hq, Hkv, D, capacity, p = (int(sizes[k]) for k in ("E", "Hq", "Hkv", "D", "capacity", "position"))
    assert re.search(r"[1-9]\d* scratch blocks from the app's allocator", run.stdout), run.stdout
    assert re.search(r"^kernel posattn_attn_plain_f16_decode on (x86|arm): ", run.stdout, re.M), run.stdout

    counts = [E, Hq * D * E, Hkv * D * E, Hkv * D * E, E * Hq * D, capacity * Hkv * D, capacity * Hkv * D, Hq * D, Hq * D, E]
    arrays = np.split(np.fromfile(dump, np.float16), np.cumsum(counts)[:-1])
    x, wq, wk, wv, wo, k_cache, v_cache, q, a, y = (a.astype(np.float64) for a in arrays)
    state, drawn = 12345, []
    for count, scale in zip(counts[:7], (1.0, 0.0625, 0.0625, 0.0625, 0.0625, 1.0, 1.0)):
        state, values = xorshift_fill(state, count, scale)
        drawn.append(values.astype(np.float64))
    for name, given, made in zip(("x", "Wq", "Wk", "Wv", "Wo"), (x, wq, wk, wv, wo), drawn):
        assert np.array_equal(given, made), f"{name} is not the app's input"
    wq, wk, wv, wo = wq.reshape(Hq * D, E), wk.reshape(Hkv * D, E), wv.reshape(Hkv * D, E), wo.reshape(E, Hq * D)
    k_cache, v_cache = k_cache.reshape(capacity, Hkv, D), v_cache.reshape(capacity, Hkv, D)
    k_before, v_before = (c.reshape(capacity, Hkv, D) for c in drawn[5:7])
    others = np.arange(capacity) != p
    assert np.array_equal(k_cache[others], k_before[others]) and np.array_equal(v_cache[others], v_before[others])

    # Each stage against float64 of its own float16 inputs.
    f16 = lambda values: values.astype(np.float16).astype(np.float64)  # noqa: E731
    close(v_cache[p].ravel(), x @ wv.T, linear_bound(x, wv), F16_ROUNDOFF, "v appended")
    inv_freq, _ = reference.rope_inv_freq(D)
    for name, got, w, H in (("q", q, wq, Hq), ("k appended", k_cache[p], wk, Hkv)):
        projected = f16(x @ w.T).reshape(1, H, 1, D)  # (one float16 ulp apart from the app's at most)
        expected = reference.rope(projected, np.array([p]), inv_freq)
        ulp = 2.0**-10 * np.abs(projected).max()
        close(got.reshape(1, H, 1, D), expected, ROPE_ATOL + ulp + F16_SUBNORMAL, ROPE_RTOL + F16_ROUNDOFF, name)
    keys, values = (c.transpose(1, 0, 2)[None] for c in (k_cache, v_cache))
    expected = reference.attention(q.reshape(1, Hq, 1, D), keys, values, key_lengths=np.array([p + 1]))
    close(a.reshape(1, Hq, 1, D), expected, ATTN_ATOL + F16_SUBNORMAL, ATTN_RTOL + F16_ROUNDOFF, "attention")
    close(y, a @ wo.T, linear_bound(a, wo), F16_ROUNDOFF, "y")
