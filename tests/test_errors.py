"""Bad input: each case gives posattn.Error naming the argument and what was expected, and leaves
every input and a caller-provided output untouched."""
import numpy as np
import pytest

import posattn
from conftest import BASELINES, NATIVE_BUILD
from test_kernels import cuda_devices


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def positions(rng, *shape, high=100):
    return rng.integers(0, high, size=shape).astype(np.int32)


def poisoned(array, value, index=-1):
    """array with `value` at its element `index` in row-major order (array may be a strided view)."""
    array[np.unravel_index(index % array.size, array.shape)] = value
    return array


def attention_args(rng, B=2, Hq=4, Hkv=2, Lq=9, Lk=13, D=16):
    return dict(q=f32(rng, B, Hq, Lq, D), k=f32(rng, B, Hkv, Lk, D), v=f32(rng, B, Hkv, Lk, D),
                out=np.full((B, Hq, Lq, D), 7.0, np.float32))


def bad_cases():
    """(name, call(rng) -> (function, kwargs), expected message fragments)."""
    def attn(**change):
        def make(rng):
            args = attention_args(rng)
            for key, fn in change.items():
                args[key] = fn(rng, args)
            return posattn.attention, args
        return make

    def enc(fn, **args):
        return lambda rng: (fn, {k: (v(rng) if callable(v) else v) for k, v in args.items()})

    return [
        ("attention-q-rank", attn(q=lambda r, a: f32(r, 4, 9, 16)), ["'q'", "rank 3", "expected rank 4"]),
        ("attention-k-head-dim", attn(k=lambda r, a: f32(r, 2, 2, 13, 8)), ["'k'", "D, q's dimension 3"]),
        ("attention-v-length", attn(v=lambda r, a: f32(r, 2, 2, 12, 16)), ["'v'", "Lk, k's dimension 2"]),
        ("attention-q-dtype", attn(q=lambda r, a: a["q"].astype(np.float64)), ["'q'", "float64", "expected float32"]),
        ("attention-q-float16", attn(q=lambda r, a: a["q"].astype(np.float16)), ["'k'", "float32", "expected float16"]),
        ("attention-gqa-heads", attn(q=lambda r, a: f32(r, 2, 3, 9, 16), out=lambda r, a: np.zeros((2, 3, 9, 16), np.float32)),
         ["3 heads", "multiple of k's"]),
        ("attention-lengths-too-long", attn(key_lengths=lambda r, a: np.array([13, 14], np.int32)),
         ["'key_lengths'", "14", "<= Lk = 13"]),
        ("attention-lengths-negative", attn(key_lengths=lambda r, a: np.array([-1, 3], np.int32)),
         ["'key_lengths'", "-1"]),
        ("attention-lengths-shape", attn(key_lengths=lambda r, a: np.array([3], np.int32)), ["'key_lengths'", "B"]),
        *mask_cases(attn),
        ("attention-q-nan", attn(q=lambda r, a: np.where(r.random(a["q"].shape) < 0.01, np.nan, a["q"]).astype(np.float32)),
         ["'q'", "NaN or Inf"]),
        ("attention-v-inf", attn(v=lambda r, a: np.concatenate([a["v"][:, :, :-1], np.full((2, 2, 1, 16), np.inf, np.float32)], 2)),
         ["'v'", "NaN or Inf"]),
        # Scanned in parallel tasks (dense v: one row in three tasks) and strided: every element counts.
        ("attention-v-nan-last-of-many-tasks", attn(k=lambda r, a: f32(r, 2, 2, 3000, 16),
                                                    v=lambda r, a: poisoned(f32(r, 2, 2, 3000, 16), np.nan)),
         ["'v'", "NaN or Inf"]),
        ("attention-k-inf-strided", attn(k=lambda r, a: poisoned(f32(r, 2, 2, 13, 32)[..., ::2], np.inf)),
         ["'k'", "NaN or Inf"]),
        ("attention-k-inf-cache-slice", attn(k=lambda r, a: poisoned(f32(r, 2, 2, 20, 16)[:, :, :13], np.inf, 200)),
         ["'k'", "NaN or Inf"]),
        ("attention-v-nan-broadcast", attn(v=lambda r, a: np.broadcast_to(poisoned(f32(r, 1, 1, 1, 16), np.nan, 5), (2, 2, 13, 16))),
         ["'v'", "NaN or Inf"]),
        ("attention-scale-nan", attn(scale=lambda r, a: float("nan")), ["'scale'", "finite"]),
        ("attention-out-shape", attn(out=lambda r, a: np.zeros((2, 4, 9, 15), np.float32)), ["'out'", "Dv"]),
        ("attention-out-readonly", attn(out=lambda r, a: np.broadcast_to(np.float32(0), (2, 4, 9, 16))), ["'out'", "read-only"]),
        ("attention-out-overlapping", attn(out=lambda r, a: np.lib.stride_tricks.as_strided(
            np.zeros(64, np.float32), (2, 4, 9, 16), (0, 0, 4, 4))), ["'out'", "overlapping"]),
        ("attention-d-zero", attn(q=lambda r, a: f32(r, 2, 4, 9, 0), k=lambda r, a: f32(r, 2, 2, 13, 0)), ["D >= 1"]),
        ("attention-alibi-slopes-length", attn(alibi_slopes=lambda r, a: np.ones(3)), ["'alibi_slopes'", "Hq"]),
        ("attention-alibi-slopes-nan", attn(alibi_slopes=lambda r, a: np.array([0.5, np.nan, 0.1, 0.2])),
         ["'alibi_slopes'", "finite"]),
        ("attention-alibi-form", attn(alibi_slopes=lambda r, a: np.ones(4), alibi_form=lambda r, a: "left"),
         ["'alibi_form'", "'relative'"]),
        ("attention-t5-table-heads", attn(t5_table=lambda r, a: f32(r, 32, 3)), ["'t5_table'", "Hq"]),
        ("attention-t5-too-few-buckets", attn(t5_table=lambda r, a: f32(r, 3, 4)), ["'t5_table'", "3 buckets", "at least 4"]),
        ("attention-t5-max-distance", attn(t5_table=lambda r, a: f32(r, 32, 4), t5_max_distance=lambda r, a: 8),
         ["'t5_max_distance'", "more than 8"]),
        ("attention-t5-table-nan", attn(t5_table=lambda r, a: np.full((32, 4), np.nan, np.float32)), ["'t5_table'", "finite"]),
        ("attention-alibi-and-t5", attn(t5_table=lambda r, a: f32(r, 32, 4), alibi_slopes=lambda r, a: np.ones(4)),
         ["'alibi', 't5', 'rope'", "at most one"]),
        ("attention-rope-q-positions", attn(rope=lambda r, a: dict(q_positions=np.arange(8, dtype=np.int32))),
         ["'q_positions'", "Lq, q's dimension 2"]),
        ("attention-rope-rotary", attn(rope=lambda r, a: dict(rotary_dim=18)), ["'rotary_dim'", "<= D = 16"]),
        ("attention-rope-key", attn(rope=lambda r, a: dict(bse=5.0)), ["'rope'", "'bse'"]),
        ("attention-rope-and-alibi", attn(rope=lambda r, a: {}, alibi_slopes=lambda r, a: np.ones(4)),
         ["more than one", "at most one position encoding"]),
        ("attention-rope-more-queries", lambda rng: (posattn.attention, dict(
            q=f32(rng, 1, 2, 9, 8), k=f32(rng, 1, 2, 5, 8), v=f32(rng, 1, 2, 5, 8), rope={})),
         ["Lq = 9 > Lk = 5", "q_positions"]),
        ("attention-schedule", attn(schedule=lambda r, a: "nonesuch"), ["no kernel", "nonesuch", "hand"]),
        ("attention-window-negative", attn(window=lambda r, a: -3), ["'window'", ">= 0"]),
        ("attention-shaw-even-rows", attn(shaw=lambda r, a: dict(rel_k=f32(r, 8, 16), rel_v=f32(r, 8, 16))),
         ["'rel_k'", "'rel_v'", "8 and 8 rows", "odd count 2K+1"]),
        ("attention-shaw-rows-differ", attn(shaw=lambda r, a: dict(rel_k=f32(r, 9, 16), rel_v=f32(r, 7, 16))),
         ["9 and 7 rows"]),
        ("attention-shaw-heads", attn(shaw=lambda r, a: dict(rel_k=f32(r, 3, 9, 16), rel_v=f32(r, 9, 16))),
         ["'rel_k'", "Hq, q's dimension 1"]),
        ("attention-shaw-width", attn(shaw=lambda r, a: dict(rel_k=f32(r, 9, 16), rel_v=f32(r, 9, 15))),
         ["'rel_v'", "Dv, v's dimension 3"]),
        ("attention-shaw-nan", attn(shaw=lambda r, a: dict(rel_k=np.full((9, 16), np.nan, np.float32), rel_v=f32(r, 9, 16))),
         ["'rel_k'", "NaN or Inf"]),
        ("attention-shaw-missing", attn(shaw=lambda r, a: dict(rel_k=f32(r, 9, 16))), ["'shaw'", "no 'rel_v'"]),
        ("attention-shaw-unknown-key", attn(shaw=lambda r, a: dict(rel_k=f32(r, 9, 16), rel_v=f32(r, 9, 16), k=3)),
         ["'shaw'", "unknown key 'k'"]),
        *[(f"attention-xl-{name}", attn(causal=lambda r, a, causal=causal: causal, transformer_xl=lambda r, a, change=change: {
            **dict(r=f32(r, 13, 16), u=f32(r, 4, 16), v_bias=f32(r, 4, 16)), **change(r)}), fragments)
          for name, causal, change, fragments in [
            ("future-key", False, lambda r: {}, ["'causal' is false", "negative distance"]),
            ("r-rows", True, lambda r: dict(r=f32(r, 12, 16)), ["'r' has 12 rows", "at least 13"]),
            ("r-rows-clamped", True, lambda r: dict(r=f32(r, 4, 16), clamp_len=5), ["'r' has 4 rows", "at least 6"]),
            ("u-shape", True, lambda r: dict(u=f32(r, 4, 15)), ["'u'", "D, q's dimension 3"]),
            ("v-bias-heads", True, lambda r: dict(v_bias=f32(r, 2, 16)), ["'v_bias'", "Hq"]),
            ("u-nan", True, lambda r: dict(u=np.full((4, 16), np.inf, np.float32)), ["'u'", "NaN or Inf"]),
            ("clamp-negative", True, lambda r: dict(clamp_len=-1), ["'clamp_len'", ">= 0"]),
            ("same-length-negative", True, lambda r: dict(same_length=-2), ["'same_length'", ">= 0"]),
            ("r-order", True, lambda r: dict(r_order="reversed"), ["r_order 'reversed'", "'ascending' or 'descending'"]),
        ]],
        *[(f"attention-deberta-{name}", attn(deberta=lambda r, a, change=change: {
            **dict(rel_embeddings=f32(r, 24, 10), w_key=f32(r, 64, 10), w_query=f32(r, 64, 10),
                   max_relative_positions=12), **change(r)}), fragments)
          for name, change, fragments in [
            ("embedding-rows", lambda r: dict(rel_embeddings=f32(r, 23, 10)), ["'rel_embeddings' has 23 rows", "2·span = 24"]),
            ("weight-rows", lambda r: dict(w_key=f32(r, 60, 10)), ["'w_key'", "Hq·D = 64"]),
            ("weight-hidden", lambda r: dict(w_query=f32(r, 64, 9)), ["'w_query'", "hidden"]),
            ("bias-length", lambda r: dict(b_key=f32(r, 63)), ["'b_key'", "Hq·D = 64"]),
            ("bias-without-weight", lambda r: dict(w_query=None, b_query=f32(r, 64)), ["'b_query'", "without its weight"]),
            ("buckets", lambda r: dict(position_buckets=24, rel_embeddings=f32(r, 48, 10)), ["'position_buckets' = 24", "max_relative_positions - 1 > position_buckets/2"]),
            ("p2c-index", lambda r: dict(p2c_index="transposed"), ["p2c_index 'transposed'", "'code' or 'paper'"]),
            ("weight-nan", lambda r: dict(w_key=np.full((64, 10), np.nan, np.float32)), ["'w_key'", "NaN or Inf"]),
            ("no-embeddings", lambda r: dict(rel_embeddings=None), ["'deberta'", "no 'rel_embeddings'"]),
        ]],
        ("attention-shaw-and-rope", attn(rope=lambda r, a: {}, shaw=lambda r, a: dict(rel_k=f32(r, 3, 16), rel_v=f32(r, 3, 16))),
         ["more than one"]),
        ("linear-weight-width", enc(posattn.linear, x=lambda r: f32(r, 5, 8), weight=lambda r: f32(r, 6, 7)),
         ["'weight'", "E, x's dimension 1"]),
        ("linear-bias-length", enc(posattn.linear, x=lambda r: f32(r, 5, 8), weight=lambda r: f32(r, 6, 8),
                                   bias=lambda r: f32(r, 5)), ["'bias'", "O, weight's dimension 0"]),
        ("linear-x-nan", enc(posattn.linear, x=lambda r: np.full((5, 8), np.nan, np.float32), weight=lambda r: f32(r, 6, 8)),
         ["'x'", "NaN or Inf"]),
        # x of 70,000 elements in rows 31 apart (no axes to merge): two scan tasks, the second
        # starting inside row 6553.
        ("linear-x-nan-strided-across-tasks", enc(posattn.linear, x=lambda r: poisoned(f32(r, 7000, 31)[:, :10], np.nan, 65537),
                                                  weight=lambda r: f32(r, 6, 10)), ["'x'", "NaN or Inf"]),
        ("linear-out-shape", enc(posattn.linear, x=lambda r: f32(r, 5, 8), weight=lambda r: f32(r, 6, 8),
                                 out=lambda r: np.zeros((5, 7), np.float32)), ["'out'", "O, weight's dimension 0"]),
        ("sinusoidal-positions-dtype", enc(posattn.sinusoidal, positions=lambda r: r.random(5), d=8),
         ["'positions'", "float64", "expected int32"]),
        ("sinusoidal-positions-int64-overflow", enc(posattn.sinusoidal, positions=lambda r: np.array([2**40]), d=8),
         ["'positions'", "outside int32"]),
        ("sinusoidal-positions-rank", enc(posattn.sinusoidal, positions=lambda r: positions(r, 2, 3, 4), d=8),
         ["'positions'", "rank 3"]),
        ("sinusoidal-base-zero", enc(posattn.sinusoidal, positions=lambda r: positions(r, 5), d=8, base=0.0),
         ["'base'", "value > 0"]),
        ("sinusoidal-base-nan", enc(posattn.sinusoidal, positions=lambda r: positions(r, 5), d=8, base=float("nan")),
         ["'base'", "finite"]),
        ("sinusoidal-layout", enc(posattn.sinusoidal, positions=lambda r: positions(r, 5), d=8, layout="paired"),
         ["'layout'", "'interleaved' or 'half'"]),
        ("sinusoidal-convention", enc(posattn.sinusoidal, positions=lambda r: positions(r, 5), d=8, convention="fairseq"),
         ["'convention'", "'vaswani' or 't2t'"]),
        ("sinusoidal-negative-d", enc(posattn.sinusoidal, positions=lambda r: positions(r, 5), d=-2), ["'d'"]),
        ("sinusoidal-out-list", enc(posattn.sinusoidal, positions=lambda r: positions(r, 2), d=3, out=lambda r: [[0.0] * 3] * 2),
         ["'out' is a list", "expected a NumPy array or a posattn.DeviceArray"]),
        ("rope-out-list", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 2, 4), out=lambda r: [[[[0.0] * 4] * 2]]),
         ["'out' is a list", "expected a NumPy array"]),
        ("sinusoidal-out-shape", enc(posattn.sinusoidal, positions=lambda r: positions(r, 5), d=8,
                                     out=lambda r: np.zeros((5, 9), np.float32)), ["'out'", "expected [5, 8]"]),
        ("sinusoidal-add-positions-length", enc(posattn.sinusoidal_add, x=lambda r: f32(r, 2, 7, 8),
                                                positions=lambda r: positions(r, 2, 6)), ["'positions'", "S"]),
        ("sinusoidal-add-x-rank", enc(posattn.sinusoidal_add, x=lambda r: f32(r, 7, 8), positions=lambda r: positions(r, 7)),
         ["'x'", "rank 2"]),
        ("learned-position-too-large", enc(posattn.learned, table=lambda r: f32(r, 10, 4),
                                           positions=lambda r: np.array([[0, 3], [9, 10]], np.int32)),
         ["'positions'", "holds 10", "table with 10 rows"]),
        ("learned-position-negative", enc(posattn.learned, table=lambda r: f32(r, 10, 4),
                                          positions=lambda r: np.array([0, -1], np.int32)), ["'positions'", "-1"]),
        ("learned-offset-past-end", enc(posattn.learned, table=lambda r: f32(r, 10, 4),
                                        positions=lambda r: np.array([0, 8], np.int32), offset=2),
         ["'positions'", "offset 2", "row 10"]),
        ("learned-negative-after-offset", enc(posattn.learned, table=lambda r: f32(r, 10, 4),
                                              positions=lambda r: np.array([1, -3], np.int32), offset=2), ["row -1"]),
        ("learned-table-dtype", enc(posattn.learned, table=lambda r: r.random((10, 4)), positions=lambda r: positions(r, 3, high=10)),
         ["'table'", "float64"]),
        ("learned-add-table-width", enc(posattn.learned_add, x=lambda r: f32(r, 2, 3, 4), table=lambda r: f32(r, 10, 5),
                                        positions=lambda r: positions(r, 2, 3, high=10)), ["'out'", "table's dimension 1"]),
        ("integer-positions-dtype", enc(posattn.integer, positions=lambda r: r.random(5).astype(np.float32), d=4),
         ["'positions'", "float32", "expected int32"]),
        ("integer-add-x-shape", enc(posattn.integer_add, x=lambda r: f32(r, 2, 7, 8), positions=lambda r: positions(r, 3, 7)),
         ["'positions'", "B, x's dimension 0"]),
        ("normalized-length-zero", enc(posattn.normalized, positions=lambda r: positions(r, 5), d=4, length=0),
         ["'length'", "length >= 1"]),
        ("normalized-mode", enc(posattn.normalized, positions=lambda r: positions(r, 5), d=4, mode="max"),
         ["'mode'", "'minus_one' or 'length'"]),
        ("normalized-all-negative", enc(posattn.normalized, positions=lambda r: -1 - positions(r, 2, 5), d=4),
         ["'positions'", "largest position", "no length"]),
        ("binary-position-too-large", enc(posattn.binary, positions=lambda r: np.array([3, 16], np.int32), d=4),
         ["'positions'", "holds 16", "2^d = 16"]),
        ("binary-position-negative", enc(posattn.binary_add, x=lambda r: f32(r, 1, 2, 40),
                                         positions=lambda r: np.array([5, -1], np.int32)), ["'positions'", "holds -1"]),
        ("sin-only-base-negative", enc(posattn.sin_only, positions=lambda r: positions(r, 5), d=4, base=-2.0),
         ["'base'", "value > 0"]),
        ("sin-only-add-out-dtype", enc(posattn.sin_only_add, x=lambda r: f32(r, 1, 3, 4), positions=lambda r: positions(r, 3),
                                       out=lambda r: np.zeros((1, 3, 4), np.float64)), ["'out'", "float64"]),
        ("rope-rotary-odd", enc(posattn.rope, x=lambda r: f32(r, 1, 2, 5, 8), rotary_dim=5), ["'rotary_dim'", "even"]),
        ("rope-rotary-too-wide", enc(posattn.rope, x=lambda r: f32(r, 1, 2, 5, 8), rotary_dim=10), ["'rotary_dim'", "<= D = 8"]),
        ("rope-positions-length", enc(posattn.rope, x=lambda r: f32(r, 1, 2, 5, 8), positions=lambda r: positions(r, 4)),
         ["'positions'", "L, x's dimension 2"]),
        ("rope-positions-batch", enc(posattn.rope, x=lambda r: f32(r, 2, 2, 5, 8), positions=lambda r: positions(r, 3, 5)),
         ["'positions'", "B, x's dimension 0"]),
        ("rope-x-rank", enc(posattn.rope, x=lambda r: f32(r, 2, 5, 8)), ["'x'", "rank 3", "expected rank 4"]),
        ("rope-base-zero", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), base=0.0), ["'base'", "value > 0"]),
        ("rope-layout", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), layout="llama"), ["'layout'", "'neox' or 'gptj'"]),
        ("rope-scaling-type", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), scaling={"type": "su"}),
         ["'scaling'", "'su'"]),
        ("rope-scaling-no-type", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), scaling={"factor": 2.0}),
         ["'scaling'", "no 'type'"]),
        ("rope-scaling-unknown-key", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), scaling={"type": "linear", "factr": 2.0}),
         ["'scaling'", "'factr'"]),
        ("rope-linear-no-factor", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), scaling={"type": "linear"}),
         ["'scaling.factor'", "> 0"]),
        ("rope-yarn-no-length", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), scaling={"type": "yarn", "factor": 4.0}),
         ["'scaling.original_max_position_embeddings'", "L0 >= 1"]),
        ("rope-factor-nan", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), scaling={"type": "ntk", "factor": float("nan")}),
         ["'scaling.factor'"]),
        ("rope-llama3-factors", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), scaling={
            "type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
            "original_max_position_embeddings": 64}), ["low_freq_factor < high_freq_factor"]),
        ("rope-longrope-list", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8), scaling={
            "type": "longrope", "factor": 2.0, "original_max_position_embeddings": 4, "short_factor": [1.0] * 3,
            "long_factor": [1.0] * 4}), ["'scaling.short_factor'", "3 entries", "rotary_dim/2 = 4"]),
        ("rope-out-overlaps-x", lambda r: (lambda x: (posattn.rope, dict(x=x[..., :8], out=x[..., 1:9])))(f32(r, 1, 2, 3, 9)),
         ["'out' overlaps 'x'", "in place"]),
        ("alibi-slopes-rank", enc(posattn.alibi_bias, slopes=lambda r: r.random((2, 3)), Lq=4, Lk=5), ["'slopes'", "rank 2"]),
        ("alibi-slopes-dtype", enc(posattn.alibi_bias, slopes=lambda r: np.arange(3, dtype=np.int32), Lq=4, Lk=5),
         ["'slopes'", "int32"]),
        ("alibi-slopes-nan", enc(posattn.alibi_bias, slopes=lambda r: np.array([0.5, np.nan]), Lq=4, Lk=5),
         ["'slopes'", "finite"]),
        ("alibi-form", enc(posattn.alibi_bias, slopes=lambda r: r.random(3), Lq=4, Lk=5, form="causal"),
         ["'form'", "'relative', 'key_position' or 'symmetric'"]),
        ("alibi-out-shape", enc(posattn.alibi_bias, slopes=lambda r: r.random(3), Lq=4, Lk=5,
                                out=lambda r: np.zeros((3, 4, 6), np.float32)), ["'out'", "[H, Lq, Lk]"]),
        ("alibi-negative-length", enc(posattn.alibi_bias, slopes=lambda r: r.random(3), Lq=-1, Lk=5), ["'Lq'"]),
        ("complex-order-token-too-large", enc(posattn.complex_order, token_ids=lambda r: np.array([[1, 7]], np.int32),
                                              positions=lambda r: positions(r, 1, 2), amplitude=lambda r: f32(r, 7, 4),
                                              frequency=lambda r: f32(r, 7, 4)),
         ["'token_ids'", "holds 7", "V = 7"]),
        ("complex-order-token-negative", enc(posattn.complex_order, token_ids=lambda r: np.array([-2], np.int32),
                                             positions=lambda r: positions(r, 1), amplitude=lambda r: f32(r, 7, 4),
                                             frequency=lambda r: f32(r, 7, 4)), ["'token_ids'", "holds -2"]),
        ("complex-order-phase-shape", enc(posattn.complex_order, token_ids=lambda r: positions(r, 3, high=7),
                                          positions=lambda r: positions(r, 3), amplitude=lambda r: f32(r, 7, 4),
                                          frequency=lambda r: f32(r, 7, 4), phase=lambda r: f32(r, 7, 5)),
         ["'phase'", "amplitude's shape"]),
        ("complex-order-positions-shape", enc(posattn.complex_order, token_ids=lambda r: positions(r, 2, 3, high=7),
                                              positions=lambda r: positions(r, 2, 4), amplitude=lambda r: f32(r, 7, 4),
                                              frequency=lambda r: f32(r, 7, 4)), ["'positions'", "token_ids' shape"]),
        ("complex-order-same-outputs", lambda r: (lambda o: (posattn.complex_order, dict(
            token_ids=positions(r, 3, high=7), positions=positions(r, 3), amplitude=f32(r, 7, 4),
            frequency=f32(r, 7, 4), real=o, imag=o)))(np.zeros((3, 4), np.float32)), ["'imag' overlaps 'real'"]),
        ("complex-order-init-kind", enc(posattn.complex_order_frequency_init, vocab=3, d=4, kind="fasttext"),
         ["'kind'", "'translation' or 'classification'"]),
        *[(f"floater-{name}", enc(posattn.floater, **{**dict(num_positions=5, p0=lambda r: f32(r, 4),
                                                             W1=lambda r: f32(r, 6, 5), b1=lambda r: f32(r, 6),
                                                             W2=lambda r: f32(r, 4, 7), b2=lambda r: f32(r, 4)), **change}),
           fragments) for name, change, fragments in [
            ("W1-width", dict(W1=lambda r: f32(r, 6, 4)), ["'W1'", "d + 1"]),
            ("W2-width", dict(W2=lambda r: f32(r, 4, 6)), ["'W2'", "hidden + 1"]),
            ("b2-length", dict(b2=lambda r: f32(r, 3)), ["'b2'", "d, p0's last dimension"]),
            ("p0-rank", dict(p0=lambda r: f32(r, 2, 2, 4)), ["'p0'", "rank 3"]),
            ("dt-zero", dict(dt=0.0), ["'dt'", "dt > 0"]),
            ("substeps-zero", dict(substeps=0), ["'substeps'", "1 <= substeps <= 65536"]),
            ("substeps-past-the-bound", dict(substeps=2**62), ["'substeps'", "1 <= substeps <= 65536"]),
            ("method", dict(method="dopri5"), ["'method'", "'rk4_38'"]),
            ("W2-nan", dict(W2=lambda r: np.full((4, 7), np.nan, np.float32)), ["'W2'", "NaN or Inf"]),
            ("negative-positions", dict(num_positions=-1), ["'num_positions'"]),
        ]],
        ("integer-add-out-overlaps-x", lambda r: (lambda b: (posattn.integer_add, dict(
            x=b[..., :-1], positions=positions(r, 4), out=b[..., 1:])))(f32(r, 1, 4, 65)), ["'out' overlaps 'x'"]),
        ("learned-out-overlaps-table", lambda r: (lambda t: (posattn.learned, dict(
            table=t, positions=np.array([0, 1], np.int32), out=t[2:4])))(f32(r, 6, 4)), ["'out' overlaps 'table'"]),
        ("attention-out-overlaps-q", lambda r: (lambda q: (posattn.attention, dict(
            q=q, k=f32(r, 1, 2, 5, 8), v=f32(r, 1, 2, 5, 8), out=q)))(f32(r, 1, 2, 5, 8)), ["'out' overlaps 'q'"]),
        ("floater-no-hidden-unit", enc(posattn.floater, num_positions=4, p0=lambda r: f32(r, 3),
                                       W1=lambda r: f32(r, 0, 4), b1=lambda r: f32(r, 0), W2=lambda r: f32(r, 3, 1),
                                       b2=lambda r: f32(r, 3)), ["'W1'", "hidden unit"]),
        ("floater-unknown-schedule", enc(posattn.floater, num_positions=4, p0=lambda r: f32(r, 3), W1=lambda r: f32(r, 2, 4),
                                         b1=lambda r: f32(r, 2), W2=lambda r: f32(r, 3, 3), b2=lambda r: f32(r, 3),
                                         out=lambda r: np.full((4, 3), 7.0, np.float32), schedule="bogus"),
         ["no kernel", "bogus"]),
        ("integer-unknown-device", enc(posattn.integer, positions=lambda r: positions(r, 3), d=4,
                                       out=lambda r: np.full((3, 4), 7.0, np.float32), device="tpu"),
         ["'device' is 'tpu'", "expected cpu, cuda, opencl or vulkan"]),
        ("attention-shaw-baseline-only-on-cpu", lambda r: (posattn.attention, dict(
            attention_args(r), shaw=dict(rel_k=f32(r, 5, 16), rel_v=f32(r, 5, 16)), device="vulkan", schedule="li2018")),
         ["no kernel posattn_attn_shaw_f32.vulkan with schedule 'li2018'",
          "(compiled schedules: hand)" if NATIVE_BUILD else "this build has no 'vulkan' kernels"]),
        ("rope-scaling-not-a-number", enc(posattn.rope, x=lambda r: f32(r, 1, 1, 3, 8),
                                          scaling={"type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8,
                                                   "attention_factor": None}),
         ["'scaling'", "'attention_factor' = None", "a number"]),
        *defect_cases(attn, enc),
    ]


def aliasing_positions(rng, fn, width=4, **kwargs):
    """fn's call whose out [8, width] shares bytes with its int32 positions [8] (one buffer)."""
    buffer = rng.integers(0, 4, size=64).astype(np.int32)
    return fn, dict(positions=buffer[:8], out=buffer.view(np.float32)[:8 * width].reshape(8, width), **kwargs)


def out_aliases(name, shape):
    """An attention call whose `name` (shape(float32 bytes) of it) shares memory with out."""
    def make(r):
        args = attention_args(r)
        memory = np.full(2 * 4 * 9 * 16, 7.0, np.float32)
        args["out"] = memory.reshape(2, 4, 9, 16)
        args[name] = shape(memory[100:100 + 117])
        if name == "mask":
            args[name][...] = True
        return posattn.attention, args
    return make


def mask_cases(attn):
    """Bad masks, biases, key starts, segments and query lengths (q [2, 4, 9, 16], k [2, 2, 13, 16])."""
    ints = lambda *values: (lambda r, a: np.array(values, np.int32))
    segments = lambda r, a: np.zeros((2, 9), np.int32)
    return [
        ("attention-mask-dtype", attn(mask=lambda r, a: np.ones((9, 13), np.int32)), ["'mask'", "int32", "expected bool"]),
        ("attention-mask-shape", attn(mask=lambda r, a: np.ones((2, 4, 9, 12), bool)),
         ["'mask'", "[2, 4, 9, 12]", "broadcast to [B, Hq, Lq, Lk] = [2, 4, 9, 13]"]),
        ("attention-mask-heads", attn(mask=lambda r, a: np.ones((2, 2, 9, 13), bool)), ["'mask'", "broadcast"]),
        ("attention-mask-rank", attn(mask=lambda r, a: np.ones(13, bool)), ["'mask'", "rank 1"]),
        ("attention-mask-rank-5", attn(mask=lambda r, a: np.ones((1, 2, 4, 9, 13), bool)), ["'mask'", "rank 5"]),
        ("attention-bias-dtype", attn(bias=lambda r, a: np.zeros((9, 13))), ["'bias'", "float64", "expected float32"]),
        ("attention-bias-nan", attn(bias=lambda r, a: poisoned(f32(r, 4, 9, 13), np.nan, 100)), ["'bias'", "NaN"]),
        ("attention-bias-plus-inf", attn(bias=lambda r, a: poisoned(f32(r, 9, 13), np.inf, 7)), ["'bias'", "+inf"]),
        ("attention-bias-shape", attn(bias=lambda r, a: f32(r, 3, 1, 1, 13)), ["'bias'", "[3, 1, 1, 13]"]),
        ("attention-key-starts-past-lk", attn(key_starts=ints(0, 14)), ["'key_starts'", "14", "<= Lk = 13"]),
        ("attention-key-starts-negative", attn(key_starts=ints(-1, 0)), ["'key_starts'", "-1"]),
        ("attention-key-starts-shape", attn(key_starts=ints(1, 2, 3)), ["'key_starts'", "B"]),
        ("attention-query-lengths-past-lq", attn(query_lengths=ints(10, 0)), ["'query_lengths'", "10", "<= Lq = 9"]),
        ("attention-query-lengths-negative", attn(query_lengths=ints(3, -2)), ["'query_lengths'", "-2"]),
        ("attention-q-segments-alone", attn(q_segments=segments), ["'k_segments' is missing", "both or neither"]),
        ("attention-k-segments-alone", attn(k_segments=lambda r, a: np.zeros((2, 13), np.int32)), ["'q_segments' is missing"]),
        ("attention-segments-shape", attn(q_segments=segments, k_segments=lambda r, a: np.zeros((2, 12), np.int32)),
         ["'k_segments'", "Lk, k's dimension 2"]),
        ("attention-segments-dtype", attn(q_segments=lambda r, a: np.zeros((2, 9), np.float32), k_segments=segments),
         ["'q_segments'", "float32"]),
        ("attention-out-aliases-bias", out_aliases("bias", lambda m: m.reshape(9, 13)), ["'out' overlaps 'bias'"]),
        ("attention-out-aliases-mask", out_aliases("mask", lambda m: m.view(bool).reshape(4, 9, 13)), ["'out' overlaps 'mask'"]),
        # Transformer-XL has no r row for a negative distance: a mask that shows a later key is refused.
        ("xl-mask-shows-a-later-key", attn(
            transformer_xl=lambda r, a: {"r": f32(r, 13, 16), "u": f32(r, 4, 16), "v_bias": f32(r, 4, 16)},
            mask=lambda r, a: np.ones((9, 13), bool)), ["'causal' is false", "negative distance"]),
    ]


def defect_cases(attn, enc):
    """Cases found by outside checks (issue 45): each failed, crashed or wrote its output before."""
    x = lambda r: f32(r, 1, 1, 3, 8)
    split_batches = dict(k=lambda r, a: f32(r, 2, 2, 8, 16), v=lambda r, a: f32(r, 2, 2, 8, 16))
    cases = [
        # Batches of unequal key lengths (once run one by one): a later batch's failure must not
        # leave an earlier one's rows in out (the harness checks out is still its poison, 7.0).
        ("attention-split-batches-nan-in-batch-1", attn(
            k=lambda r, a: f32(r, 2, 2, 8, 16), v=lambda r, a: poisoned(f32(r, 2, 2, 8, 16), np.nan, 2 * 8 * 16),
            key_lengths=lambda r, a: np.array([8, 1], np.int32)), ["'v'", "NaN or Inf"]),
        ("attention-split-batches-bad-schedule", attn(**split_batches, key_lengths=lambda r, a: np.array([0, 8], np.int32),
                                                      schedule=lambda r, a: "typo"), ["no kernel", "'typo'"]),
        ("deberta-huge-span", attn(deberta=lambda r, a: dict(rel_embeddings=f32(r, 24, 10), w_key=f32(r, 64, 10),
                                                             max_relative_positions=2**62 + 2**40)),
         ["'rel_embeddings' has 24 rows", "2·span = 2·4611687117939015680"]),
        ("deberta-huge-buckets", attn(deberta=lambda r, a: dict(rel_embeddings=f32(r, 24, 10), w_query=f32(r, 64, 10),
                                                                position_buckets=2**62 + 2**40)),
         ["'rel_embeddings' has 24 rows"]),
        *[(f"{fn.__name__}-out-aliases-positions", lambda r, fn=fn: aliasing_positions(r, fn, d=4),
           ["'out' overlaps 'positions'"])
          for fn in (posattn.integer, posattn.binary, posattn.normalized, posattn.sinusoidal, posattn.sin_only)],
        ("learned-out-aliases-positions", lambda r: aliasing_positions(r, posattn.learned, table=f32(r, 4, 4)),
         ["'out' overlaps 'positions'"]),
        ("rope-negative-seq-len", enc(posattn.rope, x=x, scaling={"type": "dynamic", "factor": 2.0,
                                                                  "original_max_position_embeddings": 4}, seq_len=-1),
         ["'seq_len' is -1", ">= 0"]),
        ("rope-frequencies-negative-seq-len", enc(posattn.rope_frequencies, rotary_dim=8, seq_len=-5), ["'seq_len' is -5"]),
        ("empty-sinusoidal-bad-device", enc(posattn.sinusoidal, positions=lambda r: np.zeros(0, np.int32), d=8, device="gpu"),
         ["'device' is 'gpu'"]),
        ("empty-sinusoidal-bad-schedule", enc(posattn.sinusoidal, positions=lambda r: np.zeros(0, np.int32), d=8,
                                              schedule="typo"), ["no kernel posattn_sinusoidal_f32", "'typo'"]),
        ("empty-attention-bad-schedule", lambda r: (posattn.attention, dict(
            q=f32(r, 1, 2, 0, 8), k=f32(r, 1, 2, 5, 8), v=f32(r, 1, 2, 5, 8), schedule="typo")), ["no kernel", "'typo'"]),
        ("empty-rope-bad-device", enc(posattn.rope, x=lambda r: f32(r, 1, 2, 0, 8), device="tpu"), ["'device' is 'tpu'"]),
        ("empty-linear-bad-schedule", enc(posattn.linear, x=lambda r: f32(r, 0, 8), weight=lambda r: f32(r, 6, 8),
                                          schedule="typo"), ["no kernel posattn_linear_f32"]),
        ("rope-factor-subnormal", enc(posattn.rope, x=x, scaling={"type": "linear", "factor": 1e-320}),
         ["'scaling.factor'", "not subnormal"]),
        ("rope-attention-factor-zero", enc(posattn.rope, x=x, scaling={"type": "yarn", "factor": 2.0, "attention_factor": 0.0,
                                                                       "original_max_position_embeddings": 8}),
         ["'scaling.attention_factor'", "> 0"]),
        ("rope-attention-factor-negative", enc(posattn.rope, x=x, scaling={"type": "longrope", "factor": 2.0,
                                                                           "attention_factor": -1.0,
                                                                           "original_max_position_embeddings": 8,
                                                                           "short_factor": [1.0] * 4,
                                                                           "long_factor": [1.0] * 4}),
         ["'scaling.attention_factor'"]),
        ("rope-ntk-factor-overflows", enc(posattn.rope, x=x, scaling={"type": "ntk", "factor": 1e300}),
         ["'base' and 'scaling.factor'", "NTK base of inf"]),
        ("rope-linear-frequencies-overflow", enc(posattn.rope, x=x, base=1e-300, scaling={"type": "linear", "factor": 1e-100}),
         ["'base' and 'scaling'", "finite frequencies"]),
        *[(f"{name}-base-subnormal", enc(fn, **args, base=1e-310), ["'base'", "not subnormal"])
          for name, fn, args in (("rope", posattn.rope, dict(x=x)),
                                 ("sinusoidal", posattn.sinusoidal, dict(positions=lambda r: positions(r, 5), d=8)),
                                 ("sin-only", posattn.sin_only, dict(positions=lambda r: positions(r, 5), d=8)),
                                 ("rope-frequencies", posattn.rope_frequencies, dict(rotary_dim=8)))],
        ("rope-frequencies-huge-rotary-dim", enc(posattn.rope_frequencies, rotary_dim=2**62), ["'rotary_dim'", "2^24"]),
        ("deberta-bucket-int64-min", enc(posattn.deberta_bucket, delta=[-2**63], position_buckets=8,
                                         max_relative_positions=64), ["'delta'", "-2^63"]),
        ("t5-bucket-int64-min", enc(posattn.t5_bucket, rel=[-2**63]), ["'rel'", "-2^63"]),
        ("t5-bucket-float-rel", enc(posattn.t5_bucket, rel=[1.5]), ["'rel'", "float64", "int64"]),
        ("complex-order-init-negative-vocab", enc(posattn.complex_order_frequency_init, vocab=-1, d=4), ["'vocab' is -1"]),
        ("complex-order-init-huge", enc(posattn.complex_order_frequency_init, vocab=2**20, d=2**30), ["'vocab'", "'d'"]),
        ("alibi-bias-length-past-int32", enc(posattn.alibi_bias, slopes=lambda r: r.random(2), Lq=2**31, Lk=2), ["'Lq'", "2^31"]),
        ("alibi-bias-too-large-to-allocate", enc(posattn.alibi_bias, slopes=lambda r: r.random(2), Lq=2**30, Lk=2**30),
         ["out", "too large to allocate"]),
        # Wrong Python types, named (posattn.ArgumentTypeError: a posattn.Error and a TypeError).
        ("attention-causal-int", attn(causal=lambda r, a: 2), ["'causal' is 2", "True or False"]),
        ("attention-causal-none", attn(causal=lambda r, a: None), ["'causal' is None", "True or False"]),
        ("attention-check-finite-str", attn(check_finite=lambda r, a: "yes"), ["'check_finite'", "True or False"]),
        ("attention-t5-decoder-buckets-not-causal", attn(t5_table=lambda r, a: f32(r, 32, 4), t5_bidirectional=lambda r, a: False),
         ["'t5_bidirectional' is false", "'causal' is false", "causal = true"]),
        ("attention-t5-bidirectional-int", attn(t5_table=lambda r, a: f32(r, 32, 4), t5_bidirectional=lambda r, a: 0),
         ["'t5_bidirectional'", "True or False"]),
        ("binary-signed-none", enc(posattn.binary, positions=lambda r: positions(r, 5), d=8, signed=None),
         ["'signed' is None", "True or False"]),
        ("binary-msb-first-float", enc(posattn.binary_add, x=lambda r: f32(r, 1, 5, 8), positions=lambda r: positions(r, 5),
                                       msb_first=1.0), ["'msb_first'"]),
        ("t5-bucket-bidirectional-str", enc(posattn.t5_bucket, rel=[1, 2], bidirectional="no"), ["'bidirectional'"]),
        ("sinusoidal-d-float", enc(posattn.sinusoidal, positions=lambda r: positions(r, 5), d=8.0),
         ["'d' is 8.0", "an integer"]),
        ("sinusoidal-base-str", enc(posattn.sinusoidal, positions=lambda r: positions(r, 5), d=8, base="1e4"),
         ["'base' is '1e4'", "a real number"]),
        ("attention-window-str", attn(window=lambda r, a: "3"), ["'window' is '3'", "an integer"]),
        ("attention-rope-base-str", attn(rope=lambda r, a: dict(base="1e4")), ["'rope' has 'base' = '1e4'", "a number"]),
        ("attention-rope-not-a-dict", attn(rope=lambda r, a: "neox"), ["'rope' is 'neox'", "a dict or None"]),
        ("attention-shaw-not-a-dict", attn(shaw=lambda r, a: [1, 2]), ["'shaw'", "a dict or None"]),
        ("attention-rope-scaling-not-a-dict", attn(rope=lambda r, a: dict(scaling="yarn")),
         ["'rope' has 'scaling' = 'yarn'", "a dict"]),
        ("attention-rope-positions-str", attn(rope=lambda r, a: dict(q_positions="abc")), ["'q_positions'"]),
        ("attention-xl-clamp-len-str", attn(causal=lambda r, a: True, transformer_xl=lambda r, a: dict(
            r=f32(r, 13, 16), u=f32(r, 4, 16), v_bias=f32(r, 4, 16), clamp_len="3")),
         ["'transformer_xl' has 'clamp_len' = '3'", "an integer"]),
        ("attention-deberta-p2c-index-int", attn(deberta=lambda r, a: dict(rel_embeddings=f32(r, 24, 10), w_key=f32(r, 64, 10),
                                                                           max_relative_positions=12, p2c_index=1)),
         ["'deberta' has 'p2c_index' = 1", "a string"]),
        ("attention-deberta-weight-str", attn(deberta=lambda r, a: dict(rel_embeddings=f32(r, 24, 10), w_key="w")),
         ["'deberta' has 'w_key'", "expected an array"]),
        ("rope-original-length-float", enc(posattn.rope, x=x, scaling={"type": "yarn", "factor": 2.0,
                                                                        "original_max_position_embeddings": 4096.0}),
         ["'original_max_position_embeddings' = 4096.0", "an integer"]),
        ("rope-truncate-int", enc(posattn.rope, x=x, scaling={"type": "yarn", "factor": 2.0, "truncate": 1,
                                                               "original_max_position_embeddings": 8}),
         ["'truncate' = 1", "True or False"]),
        ("rope-scaling-list", enc(posattn.rope, x=x, scaling=["yarn"]), ["'scaling'", "a dict or None"]),
        ("floater-substeps-float", enc(posattn.floater, num_positions=3, p0=lambda r: f32(r, 4), W1=lambda r: f32(r, 6, 5),
                                       b1=lambda r: f32(r, 6), W2=lambda r: f32(r, 4, 7), b2=lambda r: f32(r, 4), substeps=2.5),
         ["'substeps' is 2.5"]),
        ("attention-q-unreadable-dlpack", attn(q=lambda r, a: Unreadable()), ["'q'", "DLPack", "Unreadable"]),
    ]
    if BASELINES:
        cases += [
            ("integer-baseline-too-small", enc(posattn.integer, positions=lambda r: np.arange(1000, dtype=np.int32), d=8,
                                               out=lambda r: np.full((1000, 8), 7.0, np.float32), schedule="adams2019"),
             ["schedule 'adams2019' of posattn_integer_f32", "autoscheduled baseline", "schedule='hand'"]),
            ("attention-baseline-too-small", attn(q=lambda r, a: f32(r, 1, 2, 16, 64), k=lambda r, a: f32(r, 1, 2, 16, 64),
                                                  v=lambda r, a: f32(r, 1, 2, 16, 64),
                                                  out=lambda r, a: np.full((1, 2, 16, 64), 7.0, np.float32),
                                                  schedule=lambda r, a: "adams2019"),
             ["schedule 'adams2019' of posattn_attn_plain_f32", "schedule='hand'"]),
        ]
    return cases


class Unreadable:
    """An array-like whose DLPack export fails (as a bfloat16 torch tensor's does for NumPy)."""
    dtype = "bfloat16"

    def __dlpack__(self, **kwargs):
        raise BufferError("bfloat16 is not supported by NumPy")

    def __dlpack_device__(self):
        return (1, 0)


def test_alibi_slopes_needs_a_head():
    with pytest.raises(posattn.Error, match="'heads' is 0"):
        posattn.alibi_slopes(0)


@pytest.mark.parametrize("name, make, fragments", [pytest.param(*c, id=c[0]) for c in bad_cases()])
def test_bad_input_is_a_clear_error_and_touches_nothing(rng, name, make, fragments):
    fn, kwargs = make(rng)
    arrays = {k: v for k, v in kwargs.items() if isinstance(v, np.ndarray)}
    for key, options in kwargs.items():  # the arrays inside a variant's dict (shaw=, deberta=, …)
        if isinstance(options, dict):
            arrays.update({f"{key}.{k}": v for k, v in options.items() if isinstance(v, np.ndarray)})
    snapshot = {k: v.copy() for k, v in arrays.items()}
    with pytest.raises(posattn.Error) as info:
        fn(**kwargs)
    message = str(info.value)
    assert message.startswith("posattn"), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    for key, before in snapshot.items():
        np.testing.assert_array_equal(arrays[key], before, err_msg=f"{key} was modified")


def test_error_is_a_value_error():
    assert issubclass(posattn.Error, ValueError)


@pytest.mark.skipif(cuda_devices() > 0, reason="this machine has a CUDA device")
def test_device_that_is_absent_is_a_clear_error(rng):
    out = np.full((3, 4), 7.0, np.float32)
    with pytest.raises(posattn.Error, match="cuda") as info:
        posattn.integer(positions(rng, 3), 4, out=out, device="cuda")
    assert str(info.value).startswith("posattn"), info.value
    np.testing.assert_array_equal(out, 7.0)


@pytest.mark.parametrize("encoding", ["sin_only", "integer"])
def test_more_rows_than_the_kernels_number_are_an_error(encoding):
    """B·S beyond 2^30 rows (the kernels number them in int32), from broadcast positions and an
    output of width 0, neither of which takes memory."""
    positions = np.broadcast_to(np.int32(7), (2, 2**29 + 1))
    out = np.empty((2, 2**29 + 1, 0), np.float32)
    with pytest.raises(ValueError, match=r"'positions' gives 1073741826 rows \(B·S\); expected at most 2\^30"):
        getattr(posattn, encoding)(positions, 0, out=out)


def test_more_tokens_than_the_kernels_number_are_an_error():
    """As above for complex-order's tokens, from broadcast token ids and tables and outputs of width 0."""
    ids = np.broadcast_to(np.int32(0), (2**30 + 1,))
    tables = [np.empty((1, 0), np.float32) for _ in range(2)]
    real, imag = (np.empty((2**30 + 1, 0), np.float32) for _ in range(2))
    with pytest.raises(ValueError, match=r"'token_ids' gives 1073741825 rows \(B·S\); expected at most 2\^30"):
        posattn.complex_order(ids, ids, *tables, real=real, imag=imag)

