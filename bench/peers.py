"""posattn against what its users would run instead, on the calls they make: torch (SDPA, the eager
HF code of RoPE and x + PE), ONNX Runtime (its MultiHeadAttention) and ggml (llama.cpp's CPU flash
attention, where scripts/ggml.sh has built it), each in its own natural layout, with default
arguments and allocated outputs; posattn also with out= (its best case).

Every case is timed round-robin (the order rotating each round; each sample after a pause and
untimed calls: sample()) and each ratio is the median of the per-round ratios peer time /
posattn time (above 1: posattn is faster), so that this shared machine's drift cancels. A sample
is one call, or the mean of back-to-back calls where one call is under 20 ms. Every peer's output
is checked against posattn's before it is timed.

    make peers    # .venv-peers (torch, onnxruntime), their interop tests, then this table
"""
import argparse
import ctypes
import pathlib
import platform
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

import posattn
from posattn import _probes

THREADS = 2
H, D = 8, 64
GGML = pathlib.Path(__file__).resolve().parent.parent / "build-ggml"


class Case:
    def __init__(self, name, flops, posattn_call, peers, best, atol=1e-4):
        # flops: per call (0 for memory-bound cases); peers: {name: call}; best: posattn with out=;
        # atol: how far a peer's float32 result may be from posattn's.
        self.name, self.flops, self.posattn, self.peers, self.best = name, flops, posattn_call, peers, best
        self.atol = atol


def ort_mha(B, Hq, Lq, Lk, Dh, causal):
    """An ONNX Runtime session of one com.microsoft MultiHeadAttention ([B, L, H·D] in and out)."""
    io = lambda name, L: helper.make_tensor_value_info(name, TensorProto.FLOAT, [B, L, Hq * Dh])
    node = helper.make_node("MultiHeadAttention", ["query", "key", "value"], ["output"], domain="com.microsoft",
                            num_heads=Hq, unidirectional=int(causal))
    graph = helper.make_graph([node], "mha", [io("query", Lq), io("key", Lk), io("value", Lk)], [io("output", Lq)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = THREADS, 1
    # Its pool's threads spin after a run by default, and took the cores of the side timed next.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def ggml_library():
    """scripts/ggml.sh's library of ggml's flash attention (bench/ggml_attention.c), or None."""
    path = GGML / "libggml_attention.so"
    if not path.exists():
        return None
    lib = ctypes.CDLL(str(path))
    lib.ggml_attention_new.restype = ctypes.c_void_p
    lib.ggml_attention_new.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 6 + [ctypes.c_int]
    lib.ggml_attention_run.argtypes = [ctypes.c_void_p]
    return lib


GGML_LIB = ggml_library()


def ggml_attention(q, k, v):
    """A call of ggml_flash_attn_ext on q, k, v (its graph built once, as llama.cpp's), returning
    its result as [B, Hq, Lq, Dv] (a view: ggml writes [B, Lq, Hq, Dv])."""
    (B, Hq, Lq, Dh), (_, Hkv, Lk, _) = q.shape, k.shape
    out = np.empty((B, Lq, Hq, Dh), np.float32)
    pointer = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    graph = GGML_LIB.ggml_attention_new(pointer(q), pointer(k), pointer(v), pointer(out), B, Hq, Hkv, Lq, Lk, Dh, THREADS)
    run, result = GGML_LIB.ggml_attention_run, out.transpose(0, 2, 1, 3)
    return lambda: (run(graph), result)[1]


def attention_case(rng, B, Hq, Hkv, Lq, Lk, Dh, causal, name=None):
    q = rng.standard_normal((B, Hq, Lq, Dh), dtype=np.float32)
    k, v = (rng.standard_normal((B, Hkv, Lk, Dh), dtype=np.float32) for _ in range(2))
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    # (torch's is_causal is top-left aligned, posattn's causal bottom-right: equal where Lq = Lk or not causal.)
    peers = {"torch SDPA": lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal,
                                                                                     enable_gqa=Hq != Hkv)}
    if Hq == Hkv and (Lq == Lk or not causal):
        session = ort_mha(B, Hq, Lq, Lk, Dh, causal)
        feeds = {name: np.ascontiguousarray(a.transpose(0, 2, 1, 3).reshape(B, a.shape[2], -1))
                 for name, a in zip(("query", "key", "value"), (q, k, v))}
        peers["ORT MHA"] = lambda: session.run(None, feeds)[0].reshape(B, Lq, Hq, Dh).transpose(0, 2, 1, 3)
    if GGML_LIB and (Lq == 1 or not causal):  # (no mask: a causal one is ggml's own KQ mask tensor)
        peers["ggml flash_attn_ext"] = ggml_attention(q, k, v)
    out = np.empty((B, Hq, Lq, Dh), np.float32)
    pairs = Lq * Lk / 2 if causal and Lq == Lk else Lq * Lk
    name = name or f"attention B{B} H{Hq} L{Lq} D{Dh}{' causal' if causal else ''}"
    return Case(name, 4 * B * Hq * pairs * Dh, lambda: posattn.attention(q, k, v, causal=causal), peers,
                lambda: posattn.attention(q, k, v, causal=causal, out=out))


def storage_attention_case(rng, dtype, B, Hq, Hkv, Lq, Lk, Dh, causal, name):
    """Attention on torch tensors of a 16-bit dtype (bfloat16, float16) as a model holds them:
    posattn takes and returns them (through DLPack), torch's SDPA runs in that dtype."""
    tq = torch.from_numpy(rng.standard_normal((B, Hq, Lq, Dh), dtype=np.float32)).to(dtype)
    tk, tv = (torch.from_numpy(rng.standard_normal((B, Hkv, Lk, Dh), dtype=np.float32)).to(dtype) for _ in range(2))
    out = torch.empty((B, Hq, Lq, Dh), dtype=dtype)
    sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, enable_gqa=Hq != Hkv)
    pairs = Lq * Lk / 2 if causal and Lq == Lk else Lq * Lk
    # (torch's bfloat16 SDPA rounds its intermediates to bfloat16; posattn's keep float32: 2^-7 apart.)
    return Case(name, 4 * B * Hq * pairs * Dh, lambda: posattn.attention(tq, tk, tv, causal=causal), {"torch SDPA": sdpa},
                lambda: posattn.attention(tq, tk, tv, causal=causal, out=out), atol=2**-6)


def rope_case(rng, shape=(2, 32, 4096, 128)):
    """RoPE of q as HF's apply_rotary_pos_emb runs it: cos and sin of every position precomputed
    (the model's rotary embedding), then q·cos + rotate_half(q)·sin."""
    x = rng.standard_normal(shape, dtype=np.float32)
    L, Dh = shape[-2:]
    inv = 1.0 / (10000.0 ** (torch.arange(0, Dh, 2, dtype=torch.float32) / Dh))
    angles = torch.outer(torch.arange(L, dtype=torch.float32), inv)
    cos, sin = (torch.cat((f(angles), f(angles)), -1) for f in (torch.cos, torch.sin))
    tx = torch.from_numpy(x)

    def hf():
        half = tx.shape[-1] // 2
        return tx * cos + torch.cat((-tx[..., half:], tx[..., :half]), -1) * sin
    out = np.empty_like(x)
    # (float32 angles p·inv_freq are off by up to ~L·2^-24 radians: HF's cos and sin too.)
    return Case(f"rope {list(shape)}", 0, lambda: posattn.rope(x), {"torch eager (HF)": hf},
                lambda: posattn.rope(x, out=out), atol=L * 2**-24 * 4 * float(np.abs(x).max()))


def sinusoidal_add_case(rng, shape=(8, 8192, 1024)):
    """x + PE as a model with a sinusoid table runs it: the table made once, then added."""
    x = rng.standard_normal(shape, dtype=np.float32)
    positions = np.arange(shape[1], dtype=np.int32)
    table = torch.from_numpy(posattn.sinusoidal(positions, shape[2]))
    tx = torch.from_numpy(x)
    out = np.empty_like(x)
    return Case(f"sinusoidal_add {list(shape)}", 0, lambda: posattn.sinusoidal_add(x, positions),
                {"torch eager x + pe": lambda: tx + table}, lambda: posattn.sinusoidal_add(x, positions, out=out))


def cases(rng, quick):
    lengths = (64, 512, 2048) if quick else (16, 64, 128, 256, 512, 2048, 8192)
    for L in lengths:
        for Dh in ((64,) if quick else (64, 128)):
            for causal in (False, True):
                yield attention_case(rng, 1, H, H, L, L, Dh, causal)
    yield attention_case(rng, 1, 1, 1, 1, 1, 64, False, "attention [1, 1, 1, 64]")
    yield attention_case(rng, 1, 8, 8, 1, 16, 64, False, "decode step [1, 8, 1, 64] x 16 keys")
    yield attention_case(rng, 1, 8, 8, 1, 4096, 128, False, "decode [1, 8, 1, 128] x 4096 keys")
    for Hq in (16, 32, 64):  # GQA ratios 2, 4, 8
        yield attention_case(rng, 1, Hq, 8, 1, 4096, 128, False, f"decode GQA {Hq}/8 [1, {Hq}, 1, 128] x 4096 keys")
    yield rope_case(rng)
    yield sinusoidal_add_case(rng)
    for dtype, short in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        yield storage_attention_case(rng, dtype, 1, H, H, 2048, 2048, 64, True, f"{short} attention B1 H8 L2048 D64 causal")
        yield storage_attention_case(rng, dtype, 1, 32, 8, 1, 4096, 128, False, f"{short} decode GQA 32/8 [1, 32, 1, 128] x 4096 keys")


def _float32(result):
    """A result as a float32 NumPy array (a 16-bit torch tensor widened)."""
    return result.float().numpy() if isinstance(result, torch.Tensor) else np.asarray(result, np.float32)


def agree(case):
    """Each peer's result against posattn's (the same computation, up to float32 rounding)."""
    expected = _float32(case.posattn())
    for name, call in case.peers.items():
        got = _float32(call())
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-3, atol=case.atol):
            raise SystemExit(f"peers: {name} disagrees with posattn on {case.name}: max |diff| "
                             f"{np.max(np.abs(got - expected)) if got.shape == expected.shape else got.shape}")


def sample(call, calls):
    """The mean time of back-to-back calls as a loop of them runs: after a pause, in which the
    pool threads of the side timed before stop spin-waiting (OpenMP's, ggml's and torch's spin
    after a call by default: ggml's made a posattn decode step that followed it 1.37x slower, AMD
    EPYC Zen 3, 2026-12-06), and as many untimed calls, which wake this side's own."""
    time.sleep(0.02)
    for _ in range(calls):
        call()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls


def measure(case, rounds):
    """Median time of each side (posattn, posattn out=, peers) and median per-round ratios to posattn."""
    sides = {"posattn": case.posattn, "posattn out=": case.best, **case.peers}
    first = sample(case.posattn, 3)
    calls = max(1, min(1000, int(20e-3 / first)))  # samples of >= ~20 ms (this shared machine's bandwidth
    # comes and goes in stretches of tens of ms)
    times = {name: [] for name in sides}
    names = list(sides)
    for round_ in range(rounds):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            times[name].append(sample(sides[name], calls))
    ratios = {name: statistics.median(t / p for t, p in zip(times[name], times["posattn"])) for name in names[1:]}
    return {name: statistics.median(t) for name, t in times.items()}, ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a few shapes (a smoke run)")
    parser.add_argument("--only", default="", help="the cases whose name contains this text")
    args = parser.parse_args()
    posattn.set_num_threads(THREADS)
    torch.set_num_threads(THREADS)
    peak = max(_probes.fma_peak_gflops(THREADS, repeats=1, iterations=4_000_000) for _ in range(5))
    ggml = f", ggml (llama-cpp-python {(GGML / 'version').read_text().strip()}'s)" if GGML_LIB else ", no ggml (scripts/ggml.sh)"
    print(f"{platform.processor() or platform.machine()}, {THREADS} threads; torch {torch.__version__}, onnxruntime "
          f"{ort.__version__}, onnx {onnx.__version__}{ggml}; FMA peak {peak:.0f} GFLOP/s (best of 5); {args.rounds} rounds\n")
    print("| call | posattn ms | % of FMA peak | allocating / out= speed | torch | torch / posattn | ORT | ORT / posattn "
          "| ggml | ggml / posattn |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for case in cases(rng, args.quick):
        if args.only not in case.name:
            continue
        agree(case)
        times, ratios = measure(case, args.rounds)
        def cell(prefix):
            name = next((n for n in case.peers if n.startswith(prefix)), None)
            return "n/a | n/a" if name is None else f"{times[name] * 1e3:.3g} | {ratios[name]:.2f}x"
        percent = f"{100 * case.flops / times['posattn'] / 1e9 / peak:.0f}%" if case.flops else "-"
        print(f"| {case.name} | {times['posattn'] * 1e3:.3g} | {percent} | {ratios['posattn out=']:.2f} "
              f"| {cell('torch')} | {cell('ORT')} | {cell('ggml')} |", flush=True)

if __name__ == "__main__":
    sys.exit(main())
