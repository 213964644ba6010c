"""KERPLE and FIRE as posattn calls, and the same attention in NumPy float64 (check.py, bench.py)."""
import numpy as np

import posattn


def load(library):
    """Adds the kernels of libcustom_attention.so to posattn's runtime."""
    for variant in ("kerple", "fire"):
        posattn.load_kernel(str(library), f"{variant}_attention", f"{variant}_attention")


def parameters(rng, heads, hidden=32):
    """Learned parameters as a trained model might hold them (float32)."""
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    return {
        "kerple": {"r1": f32(rng.uniform(0.5, 2.0, heads)), "r2": f32(rng.uniform(0.1, 1.5, heads))},
        "fire": {"w1": f32(rng.normal(0, 1, hidden)), "b1": f32(rng.normal(0, 0.5, hidden)),
                 "w2": f32(rng.normal(0, 0.3, (heads, hidden))), "b2": f32(rng.normal(0, 0.3, heads)),
                 "c": 0.7, "threshold": 64.0},
    }


def custom(variant, params):
    """attention's custom= argument: the kernel, its buffers and its scalars."""
    return {"kernel": f"{variant}_attention",
            "inputs": {k: v for k, v in params.items() if isinstance(v, np.ndarray)},
            "scalars": {k: v for k, v in params.items() if not isinstance(v, np.ndarray)}}


def bias(variant, p, Lq, Lk):
    """The variant's bias [H, Lq, Lk] in float64, for query positions Lk − Lq … Lk − 1."""
    i = np.arange(Lq, dtype=np.float64)[:, None] + (Lk - Lq)
    j = np.arange(Lk, dtype=np.float64)[None, :]
    p = {k: np.asarray(v, np.float64) for k, v in p.items()}
    if variant == "kerple":
        return -p["r1"][:, None, None] * np.log1p(p["r2"][:, None, None] * np.abs(i - j))
    psi = lambda x: np.log1p(p["c"] * x)  # noqa: E731
    x = psi(np.maximum(i - j, 0)) / psi(np.maximum(p["threshold"], i))
    hidden = np.maximum(x[..., None] * p["w1"] + p["b1"], 0)
    return np.einsum("ijr,hr->hij", hidden, p["w2"]) + p["b2"][:, None, None]


def reference(q, k, v, bias, key_lengths):
    """Causal (bottom-right) attention with GQA and padded keys in float64: softmax(q·kᵀ/√D + bias)·v."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    Lq, Lk = q.shape[2], k.shape[2]
    logits = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(q.shape[3]) + bias
    i = np.arange(Lq)[:, None] + (Lk - Lq)
    j = np.arange(Lk)[None, :]
    visible = (j <= i)[None, None] & (j < np.asarray(key_lengths)[:, None, None, None])
    logits = np.where(visible, logits, -np.inf)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return np.einsum("bhij,bhjd->bhid", weights / weights.sum(axis=-1, keepdims=True), v)
