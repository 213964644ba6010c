"""Kernel cases for the harness, per manifest function. Sizes are deliberately odd (not multiples
of any vector width or tile) and views deliberately non-contiguous in some cases."""
import numpy as np

import posattn
from posattn import reference
from harness import Case, poisoned
from storage import twins

# Tolerances (absolute + relative to |expected|), per kernel:
# - sinusoidal: the angle p·ω is reduced in float64, so the error does not grow with the position;
#   what is left is the float32 rounding of the reduced argument and of the result plus the
#   ≤ 2 ulp minimax polynomial: well under 1e-6 for values in [−1, 1]. From split positions' tables
#   (generators/trig.h PositionSplit) two such values per product, and the split angle's own
#   rounding (≤ 2.4e-7 at 2^31 radians): ≤ 7e-7.
SIN_ATOL, SIN_RTOL = 1e-6, 2.0**-23
# - learned: a gather is exact, and x + table[·] is one correctly rounded float32 add.
LEARNED_ATOL, LEARNED_RTOL = 0.0, 2.0**-24
# - attention: float32 dot products of length D, exp to ~1 ulp, and float32 sums over Lk keys
#   with an online rescale: a few 1e-6 for unit-variance inputs at these sizes.
ATTN_ATOL, ATTN_RTOL = 2e-5, 1e-5
# - integer, binary: p (|p| < 2^31) rounded once to float32, or an exact bit; normalized: one
#   float64 product rounded to float32; their x + PE forms add one float32 rounding of the sum
#   (integer: two roundings of half an ulp each; normalized: PE's own, ≤ 2^-24 for PE in [0, 1],
#   hence the absolute term).
EXACT_ATOL, ROUNDED_RTOL = 0.0, 2.0**-24
# - rope: cos/sin as for the sinusoid (≤ 1e-7), then a·cos − b·sin in float32: a few ulp of
#   |a| + |b| (≤ ~5 for unit-normal inputs), times the attention factor.
ROPE_ATOL, ROPE_RTOL = 3e-6, 2.0**-22


def _qkv(rng, B, Hq, Hkv, Lq, Lk, D):
    """Fresh float32 q [B, Hq, Lq, D], k and v [B, Hkv, Lk, D]."""
    return tuple(rng.standard_normal(shape).astype(np.float32) for shape in ((B, Hq, Lq, D), (B, Hkv, Lk, D), (B, Hkv, Lk, D)))


def _untouched(*arrays):
    return [a.copy() for a in arrays], list(arrays)


def _strided(a, rng):
    """The same values in a non-contiguous view (every other element of a larger buffer, innermost too)."""
    big = np.empty(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
    big[...] = rng.standard_normal(big.shape).astype(a.dtype) if a.dtype.kind == "f" else 0
    view = big[..., ::2]
    view[...] = a
    return view


# (positions' shape, d, lowest position, width of their range) of calls whose positions the
# runtime splits for the trig tables: (2^low_bits + high rows)·8 <= rows; one position repeated
# (low_bits 0, one row per table) at either end of int32.
SPLIT_POSITIONS = (((3, 700), 70, -1500, 3000), ((1500,), 33, 2**31 - 4000, 4000), ((2, 900), 96, -2**31, 2500),
                   ((20,), 24, 2**31 - 1, 1), ((4, 5), 17, -2**31, 1))

# Lowest positions of calls of [2, 512] positions spanning 2^13, d = 64: two tables (~192 rows)
# would break the runtime's limit of one table row per 8 output rows and three (~64) do not, so
# where the rows run in their own order (x + PE forms; table forms on GPUs) it splits the
# positions three ways (generators/trig.h PositionSplit, fine_bits), and a CPU table form, whose
# rows are sorted, evaluates every value; near 0 and at either end of int32.
THREE_WAY_SPLIT_FROM = (-4096, 2**31 - 2**13, -2**31)


def _three_way_split(kind, pe, **options):
    """Cases of posattn.<kind> and posattn.<kind>_add over THREE_WAY_SPLIT_FROM; pe(positions, d)
    is the float64 reference table."""
    cases = []
    for fused in (False, True):
        name = f"{kind}_add" if fused else kind
        for lowest in THREE_WAY_SPLIT_FROM:
            def run(rng, call, lowest=lowest, fused=fused, name=name):
                positions = (lowest + rng.integers(0, 2**13, size=(2, 512))).astype(np.int32)
                x = rng.standard_normal((2, 512, 64)).astype(np.float32) if fused else None
                before, after = _untouched(*([x, positions] if fused else [positions]))
                out = poisoned((2, 512, 64))
                fn = getattr(posattn, name)  # looked up now: it may be wrapped
                if fused:
                    fn(x, positions, **options, out=out, **call)
                else:
                    fn(positions, 64, **options, out=out, **call)
                expected = pe(positions, 64) + (x.astype(np.float64) if fused else 0)
                return out, expected, SIN_ATOL, SIN_RTOL, before, after
            cases.append(Case(f"posattn_{name}_f32", f"{_label(options)}-split3-P2x512-D64-from{lowest}", run))
    return cases


def sinusoidal_cases():
    cases = []
    for layout in ("interleaved", "half"):
        for convention in ("vaswani", "t2t"):
            for shape, d, base, span in (((37,), 64, 10000.0, 4096), ((3, 29), 33, 10000.0, 10**6),
                                         ((5,), 1, 10000.0, 100), ((2, 7), 2, 500.0, 2**30),
                                         ((130,), 96, 10.0, 2**31 - 1)):
                def run(rng, call, shape=shape, d=d, base=base, span=span, layout=layout, convention=convention):
                    positions = rng.integers(-span, span, size=shape, dtype=np.int64).astype(np.int32)
                    before, after = _untouched(positions)
                    out = poisoned(shape + (d,))
                    posattn.sinusoidal(positions, d, base=base, layout=layout, convention=convention,
                                       out=out, **call)
                    expected = reference.sinusoidal(positions, d, base, layout, convention)
                    return out, expected, SIN_ATOL, SIN_RTOL, before, after
                cases.append(Case("posattn_sinusoidal_f32",
                                  f"{layout}-{convention}-P{'x'.join(map(str, shape))}-D{d}-base{base:g}-span{span}",
                                  run))

    # Many rows over a narrow range of positions: the runtime splits them (generators/trig.h
    # PositionSplit; at most one table row per 8 output rows), near 0 and at either end of int32.
    for layout in ("interleaved", "half"):
        for shape, d, lowest, width in SPLIT_POSITIONS:
            def split(rng, call, shape=shape, d=d, lowest=lowest, width=width, layout=layout):
                positions = (lowest + rng.integers(0, width, size=shape)).astype(np.int32)
                before, after = _untouched(positions)
                out = poisoned(shape + (d,))
                posattn.sinusoidal(positions, d, layout=layout, out=out, **call)
                return out, reference.sinusoidal(positions, d, layout=layout), SIN_ATOL, SIN_RTOL, before, after
            cases.append(Case("posattn_sinusoidal_f32", f"{layout}-split-P{'x'.join(map(str, shape))}-D{d}-from{lowest}-width{width}", split))

    for layout, d in (("interleaved", 20), ("half", 21)):
        def strided_out(rng, call, layout=layout, d=d):
            positions = _strided(rng.integers(0, 5000, size=(4, 19)).astype(np.int32), rng)
            before, after = _untouched(positions)
            out = np.full((4, 19, 2 * d), np.nan, np.float32)[..., ::2]
            posattn.sinusoidal(positions, d, layout=layout, out=out, **call)
            return out, reference.sinusoidal(positions, d, layout=layout), SIN_ATOL, SIN_RTOL, before, after
        cases.append(Case("posattn_sinusoidal_f32", f"{layout}-strided-positions-strided-out-P4x19-D{d}", strided_out))
    return cases


def sinusoidal_add_cases():
    cases = []
    for layout in ("interleaved", "half"):
        for (B, S, D), broadcast, strided, span in (((2, 37, 64), False, False, 10**5), ((3, 11, 33), True, False, 10**5),
                                                    ((2, 9, 48), False, True, 10**5), ((3, 600, 40), True, False, 2000),
                                                    ((2, 700, 600), False, True, 2000)):
            def run(rng, call, B=B, S=S, D=D, broadcast=broadcast, strided=strided, layout=layout, span=span):
                x = rng.standard_normal((B, S, D)).astype(np.float32)
                if strided:
                    x = _strided(x, rng)
                pshape = (S,) if broadcast else (B, S)
                positions = rng.integers(-span, span, size=pshape).astype(np.int32)
                before, after = _untouched(x, positions)
                out = poisoned((B, S, D))
                posattn.sinusoidal_add(x, positions, layout=layout, convention="t2t", out=out, **call)
                expected = x.astype(np.float64) + reference.sinusoidal(np.broadcast_to(positions, (B, S)), D,
                                                                       layout=layout, convention="t2t")
                return out, expected, SIN_ATOL, SIN_RTOL, before, after
            cases.append(Case("posattn_sinusoidal_add_f32",
                              f"{layout}-t2t-B{B}-S{S}-D{D}{'-broadcast' if broadcast else ''}{'-strided' if strided else ''}"
                              f"{'-split' if span < 10**5 else ''}",
                              run))
    for layout in ("interleaved", "half"):
        cases += _three_way_split("sinusoidal", lambda p, d, layout=layout: reference.sinusoidal(p, d, layout=layout),
                                  layout=layout)
    return cases


def learned_cases(fused):
    cases = []
    for (B, S, V, D), offset, broadcast in (((2, 37, 50, 64), 0, False), ((3, 13, 40, 33), 2, False),
                                            ((2, 9, 12, 17), 2, True), ((1, 1, 1, 5), 0, False)):
        def run(rng, call, B=B, S=S, V=V, D=D, offset=offset, broadcast=broadcast):
            table = rng.standard_normal((V, D)).astype(np.float32)
            pshape = (S,) if broadcast else (B, S)
            positions = rng.integers(-offset, V - offset, size=pshape).astype(np.int32)
            if fused:
                x = rng.standard_normal((B, S, D)).astype(np.float32)
                before, after = _untouched(x, table, positions)
                out = poisoned((B, S, D))
                posattn.learned_add(x, table, positions, offset=offset, out=out, **call)
                gathered = reference.learned(table, np.broadcast_to(positions, (B, S)), offset)
                expected = (x.astype(np.float64) + gathered).astype(np.float32).astype(np.float64)
            else:
                before, after = _untouched(table, positions)
                out = poisoned(pshape + (D,))
                posattn.learned(table, positions, offset=offset, out=out, **call)
                expected = reference.learned(table, positions, offset)
            return out, expected, LEARNED_ATOL, LEARNED_RTOL, before, after
        name = f"B{B}-S{S}-V{V}-D{D}-offset{offset}{'-broadcast' if broadcast else ''}"
        cases.append(Case("posattn_learned_add_f32" if fused else "posattn_learned_f32", name, run))
    return cases


# The simple encodings (contract §3), per kind: option variants, positions(rng, shape, d), tolerance.
SIMPLE_KINDS = {
    "integer": ([{}], lambda rng, shape, d: rng.integers(-2**31, 2**31 - 1, size=shape), (EXACT_ATOL, 2 * ROUNDED_RTOL)),
    "normalized": ([dict(mode="minus_one"), dict(mode="length"), dict(length=9000), dict(length=1, mode="minus_one"),
                    dict(length=1, mode="length")],
                   lambda rng, shape, d: rng.integers(0, 5000, size=shape), (2.0**-24, ROUNDED_RTOL)),
    "binary": ([{}, dict(signed=True, msb_first=True), dict(msb_first=True)],
               lambda rng, shape, d: rng.integers(0, 2**min(d, 31), size=shape), (EXACT_ATOL, ROUNDED_RTOL)),
    # The whole int32 range: the kernel reduces p·ω in 32-bit lanes to within 2.8e-7 rad; float64's p·ω is within 2.4e-7.
    "sin_only": ([{}, dict(base=500.0)], lambda rng, shape, d: rng.integers(-2**31, 2**31 - 1, size=shape),
                 (SIN_ATOL, SIN_RTOL)),
}


def _label(options):
    return "-".join(f"{k}{v}" for k, v in options.items()) or "default"


def simple_cases():
    cases = []
    for kind, (variants, make_positions, (atol, rtol)) in SIMPLE_KINDS.items():
        ref = getattr(reference, kind)
        for options in variants:
            shapes = [((37,), 64), ((3, 29), 33), ((5,), 1), ((2, 7), 2)]
            if kind == "integer" and options == variants[0]:
                shapes.append(((2, 300_000), 2))  # 600,000 rows: more tiles of 8 rows than a CUDA grid's y holds
            for shape, d in shapes:
                def run(rng, call, shape=shape, d=d, options=options, kind=kind, ref=ref,
                        make_positions=make_positions, atol=atol, rtol=rtol):
                    positions = make_positions(rng, shape, d).astype(np.int32)
                    before, after = _untouched(positions)
                    out = poisoned(shape + (d,))
                    getattr(posattn, kind)(positions, d, **options, out=out, **call)  # looked up now: it may be wrapped
                    return out, ref(positions, d, **options), atol, rtol, before, after
                cases.append(Case(f"posattn_{kind}_f32", f"{_label(options)}-P{'x'.join(map(str, shape))}-D{d}", run))
            if kind == "sin_only":
                for shape, d, lowest, width in SPLIT_POSITIONS:
                    def split(rng, call, shape=shape, d=d, lowest=lowest, width=width, options=options):
                        positions = (lowest + rng.integers(0, width, size=shape)).astype(np.int32)
                        before, after = _untouched(positions)
                        out = poisoned(shape + (d,))
                        posattn.sin_only(positions, d, **options, out=out, **call)
                        return out, reference.sin_only(positions, d, **options), SIN_ATOL, SIN_RTOL, before, after
                    cases.append(Case("posattn_sin_only_f32", f"{_label(options)}-split-P{'x'.join(map(str, shape))}-D{d}"
                                      f"-from{lowest}-width{width}", split))

                # Split positions with rows in their own order: the x + PE forms' tiles of rows and
                # channels (schedules/cpu/encodings.h), one partial tile wide or several and a partial one.
                for (B, S, D), broadcast in (((3, 600, 40), True), ((2, 700, 600), False)):
                    def split_add(rng, call, B=B, S=S, D=D, broadcast=broadcast, options=options):
                        x = rng.standard_normal((B, S, D)).astype(np.float32)
                        positions = rng.integers(-1000, 1000, size=(S,) if broadcast else (B, S)).astype(np.int32)
                        before, after = _untouched(x, positions)
                        out = poisoned(x.shape)
                        posattn.sin_only_add(x, positions, **options, out=out, **call)
                        expected = x.astype(np.float64) + reference.sin_only(np.broadcast_to(positions, (B, S)), D, **options)
                        return out, expected, SIN_ATOL, SIN_RTOL, before, after
                    cases.append(Case("posattn_sin_only_add_f32",
                                      f"{_label(options)}-split-B{B}-S{S}-D{D}{'-broadcast' if broadcast else ''}", split_add))
                cases += _three_way_split("sin_only", lambda p, d, options=options: reference.sin_only(p, d, **options),
                                          **options)
            for (B, S, D), broadcast, strided in (((2, 37, 64), False, False), ((3, 11, 33), True, False),
                                                  ((2, 9, 48), False, True)):
                def run(rng, call, B=B, S=S, D=D, broadcast=broadcast, strided=strided, options=options,
                        kind=kind, ref=ref, make_positions=make_positions, atol=atol, rtol=rtol):
                    x = rng.standard_normal((B, S, D)).astype(np.float32)
                    if strided:
                        x = _strided(x, rng)
                    positions = make_positions(rng, (S,) if broadcast else (B, S), D).astype(np.int32)
                    before, after = _untouched(x, positions)
                    out = poisoned((B, S, D))
                    getattr(posattn, kind + "_add")(x, positions, **options, out=out, **call)
                    expected = x.astype(np.float64) + ref(np.broadcast_to(positions, (B, S)), D, **options)
                    return out, expected, atol, rtol, before, after
                name = (f"{_label(options)}-B{B}-S{S}-D{D}{'-broadcast' if broadcast else ''}"
                        f"{'-strided' if strided else ''}")
                cases.append(Case(f"posattn_{kind}_add_f32", name, run))
    return cases


def rope_cases():
    cases = []
    yarn = {"type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64}
    llama3 = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 64}
    # (B, H, L, D, rotary_dim, positions, scaling, view); views of x: contiguous, "blhd" ([B, L, H, D]
    # memory seen as [B, H, L, D], as projections produce), "strided" (inner stride 2), "inplace";
    # of the output: "strided-out", "blhd-out", "offset-out" (4 bytes past an aligned start).
    configs = [
        (2, 3, 37, 64, None, "2d", None, "contiguous"),
        (1, 4, 50, 128, None, None, yarn, "contiguous"),
        (2, 2, 19, 96, 32, "1d", llama3, "blhd"),
        (1, 3, 23, 40, 24, "2d", {"type": "linear", "factor": 4.0}, "strided"),
        (2, 2, 17, 64, None, "2d", {"type": "ntk", "factor": 2.0}, "inplace"),
        (1, 2, 33, 64, 16, "2d", {"type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}, "inplace"),
        (1, 2, 9, 36, 20, "1d", {"type": "longrope", "short_factor": [1.0 + 0.1 * c for c in range(10)],
                                 "long_factor": [1.0 + 0.5 * c for c in range(10)],
                                 "original_max_position_embeddings": 8, "max_position_embeddings": 64}, "contiguous"),
        (1, 1, 1, 8, None, "2d", None, "contiguous"),                              # decode: one position
        # Short sequences, whose store-stage tiles cover groups of heads: decoding 32 heads in one
        # group, in place and into [B, L, H, D] memory; 5 heads of 50 positions in groups of 2, the
        # last one past H.
        (2, 32, 1, 128, None, "2d", None, "contiguous"),
        (1, 32, 3, 64, None, "2d", None, "inplace"),
        (2, 9, 2, 32, None, "1d", None, "blhd-out"),
        (1, 5, 50, 64, None, "2d", None, "contiguous"),
        # Several tiles and a tail tile into strided, [B, L, H, D] and misaligned (one float off)
        # outputs: the x86 twin's non-temporal stores at every alignment.
        (1, 3, 150, 40, None, "2d", None, "strided-out"),
        (2, 2, 131, 64, None, "1d", None, "blhd-out"),
        (1, 2, 70, 24, None, None, None, "offset-out"),
    ]
    for layout in ("neox", "gptj"):
        for B, H, L, D, r, pos_kind, scaling, view in configs:
            def run(rng, call, B=B, H=H, L=L, D=D, r=r, pos_kind=pos_kind, scaling=scaling, view=view,
                    layout=layout):
                x = rng.standard_normal((B, H, L, D)).astype(np.float32)
                if view == "blhd":
                    x = np.ascontiguousarray(x.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
                elif view == "strided":
                    x = _strided(x, rng)
                positions = {"2d": lambda: rng.integers(-2**20, 2**20, size=(B, L)),
                             "1d": lambda: rng.integers(0, 300, size=L), None: lambda: None}[pos_kind]()
                if positions is not None:
                    positions = positions.astype(np.int32)
                    before, after = _untouched(positions)
                else:
                    before, after = [], []
                seq_len = int(np.max(positions)) + 1 if positions is not None else L
                inv, af = reference.rope_inv_freq(r or D, scaling=scaling, seq_len=seq_len)
                expected = reference.rope(x, np.arange(L) if positions is None else positions, inv, af, layout, r)
                if view == "inplace":
                    out = x
                else:
                    before, after = before + [x.copy()], after + [x]
                    out = {"strided-out": lambda: _strided(poisoned((B, H, L, D)), rng),
                           "blhd-out": lambda: poisoned((B, L, H, D)).transpose(0, 2, 1, 3),
                           "offset-out": lambda: poisoned((B * H * L * D + 1,))[1:].reshape(B, H, L, D)}.get(
                        view, lambda: poisoned((B, H, L, D)))()
                posattn.rope(x, positions, layout=layout, rotary_dim=r, scaling=scaling, out=out, **call)
                return out, expected, ROPE_ATOL * af, ROPE_RTOL, before, after
            name = (f"{layout}-B{B}-H{H}-L{L}-D{D}{f'-r{r}' if r else ''}-positions{pos_kind}"
                    f"-{scaling['type'] if scaling else 'unscaled'}-{view}")
            cases.append(Case("posattn_rope_partial_f32" if r and r < D else "posattn_rope_f32", name, run))
    return cases


def complex_order_cases():
    cases = []
    # (token shape, V, d, frequency init, phase, strided output, positions below). Positions are 1-based
    # in the model; any int32 here: over the whole range, angles reach 2^32 right angles. The last two
    # have tables of 4 and 6 MiB, beyond half the L2 of any core, and at most 8 words per token: CPU
    # calls run their tokens sorted by word (runtime/src/complex_order.cpp), the others in order.
    configs = [((3, 29), 50, 33, "classification", False, False, 10**4),
               ((41,), 7, 64, "translation", True, False, 10**4), ((2, 5), 1000, 17, "random", True, True, 10**4),
               ((1, 1), 1, 1, "translation", False, False, 10**4), ((4, 9), 300, 40, "random", False, False, 2**31),
               ((4, 300), 8192, 64, "random", False, False, 10**4), ((1100,), 8192, 64, "classification", True, True, 10**4)]
    for shape, V, d, init, with_phase, strided, max_position in configs:
        def run(rng, call, shape=shape, V=V, d=d, init=init, with_phase=with_phase, strided=strided,
                max_position=max_position):
            ids = rng.integers(0, V, size=shape).astype(np.int32)
            positions = rng.integers(-max_position, max_position, size=shape).astype(np.int32)
            amplitude = rng.standard_normal((V, d)).astype(np.float32)
            frequency = (rng.uniform(0, 2, (V, d)) if init == "random"
                         else reference.complex_order_frequency_init(V, d, init)).astype(np.float32)
            phase = rng.uniform(-np.pi, np.pi, (V, d)).astype(np.float32) if with_phase else None
            inputs = [a for a in (ids, positions, amplitude, frequency, phase) if a is not None]
            before, after = _untouched(*inputs)
            real, imag = (np.full(shape + (2 * d,), np.nan, np.float32)[..., ::2] if strided else poisoned(shape + (d,))
                          for _ in range(2))
            posattn.complex_order(ids, positions, amplitude, frequency, phase, real=real, imag=imag, **call)
            expected = np.stack(reference.complex_order(ids, positions, amplitude, frequency, phase))
            # |r| <= ~5: the sinusoid's absolute error scaled by the amplitude.
            return np.stack([real, imag]), expected, 5 * SIN_ATOL, SIN_RTOL, before, after
        name = (f"T{'x'.join(map(str, shape))}-V{V}-D{d}-{init}{'-phase' if with_phase else ''}"
                f"{'-strided' if strided else ''}{'-int32_positions' if max_position == 2**31 else ''}")
        cases.append(Case("posattn_complex_order_phase_f32" if with_phase else "posattn_complex_order_f32", name, run))
    return cases


def floater_cases():
    cases = []
    # float32 steps round each stage to ~1 ulp of the state; over S steps the rounding errors add up
    # like a random walk: ~2^-24·|p|·√S·(a few), which this bound covers with a wide margin.
    def tolerance(expected, steps):
        return 1e-6 * max(1.0, float(np.abs(expected).max())) * np.sqrt(steps), 0.0

    for method in ("rk4_38", "rk4", "midpoint", "euler"):
        for batch, N, d, hidden, dt, substeps in ((None, 40, 16, 16, 0.01, 5), (3, 25, 33, 70, 0.05, 3),
                                                  (2, 1, 8, 5, 0.01, 5), (None, 12, 64, 130, 0.1, 2)):
            def run(rng, call, batch=batch, N=N, d=d, hidden=hidden, dt=dt, substeps=substeps, method=method):
                p0 = rng.standard_normal(((batch,) if batch else ()) + (d,)).astype(np.float32)
                W1 = (rng.standard_normal((hidden, d + 1)) / np.sqrt(d)).astype(np.float32)
                W2 = (rng.standard_normal((d, hidden + 1)) / np.sqrt(hidden)).astype(np.float32)
                b1, b2 = rng.standard_normal(hidden).astype(np.float32), rng.standard_normal(d).astype(np.float32)
                before, after = _untouched(p0, W1, b1, W2, b2)
                out = poisoned(((batch,) if batch else ()) + (N, d))
                posattn.floater(N, p0, W1, b1, W2, b2, dt=dt, substeps=substeps, method=method, out=out,
                                **call)
                expected = reference.floater(N, p0, W1, b1, W2, b2, dt, substeps, method)
                return (out, expected, *tolerance(expected, max(N - 1, 1) * substeps), before, after)
            name = f"{f'batch{batch}-' if batch else ''}N{N}-D{d}-hidden{hidden}-dt{dt}-substeps{substeps}"
            cases.append(Case(f"posattn_floater_step_{method}_f32", name, run))
    return cases


def alibi_cases():
    cases = []
    for form in ("relative", "key_position", "symmetric"):
        for H, Lq, Lk, slopes, view in ((12, 37, 37, "alibi", "contiguous"), (3, 5, 70, "random32", "contiguous"),
                                        (8, 40, 23, "alibi", "strided"), (1, 1, 300, "random64", "contiguous")):
            def run(rng, call, H=H, Lq=Lq, Lk=Lk, slopes=slopes, view=view, form=form):
                m = {"alibi": lambda: reference.alibi_slopes(H),
                     "random64": lambda: rng.uniform(-1, 1, H),
                     "random32": lambda: rng.uniform(-1, 1, H).astype(np.float32)}[slopes]()
                before, after = _untouched(m)
                out = poisoned((H, Lq, Lk)) if view == "contiguous" else np.full((H, Lq, 2 * Lk), np.nan, np.float32)[..., ::2]
                posattn.alibi_bias(m, Lq, Lk, form=form, out=out, **call)
                return out, reference.alibi_bias(m, Lq, Lk, form), EXACT_ATOL, ROUNDED_RTOL, before, after
            cases.append(Case("posattn_alibi_bias_f32", f"{form}-H{H}-Lq{Lq}-Lk{Lk}-{slopes}-{view}", run))
    return cases


def plain_attention_function(Hq, Hkv, Lq, Lk, window):
    """The kernel the runtime runs plain attention with (runtime/src/attention.cpp): its decode1,
    decode and decode8 shape classes for at most 1, 4 and 8 query rows per tile (one query folds a
    GQA group's q heads into rows), its window class for a window narrower than the keys."""
    narrowed = 0 < window < Lk
    rows = Hq // Hkv if Lq == 1 and Hq > Hkv and not narrowed else Lq
    for most, shape_class in ((1, "_decode1"), (4, "_decode"), (8, "_decode8")):
        if rows <= most:
            return "posattn_attn_plain_f32" + shape_class
    return "posattn_attn_plain_f32_window" if narrowed else "posattn_attn_plain_f32"


def attention_cases():
    cases = []
    # (B, Hq, Hkv, Lq, Lk, D, Dv, causal, lengths, scale, layout, window)
    configs = [
        (2, 4, 4, 37, 37, 16, 16, False, None, None, "contiguous", 0),
        (2, 4, 4, 37, 37, 16, 16, True, None, None, "contiguous", 0),
        (1, 2, 2, 5, 50, 32, 32, True, None, None, "contiguous", 0),            # Lq < Lk, bottom-right
        (1, 2, 2, 40, 23, 8, 8, True, None, None, "contiguous", 0),             # Lq > Lk: first rows fully masked
        (2, 6, 2, 33, 70, 24, 24, False, None, None, "contiguous", 0),          # GQA
        (1, 4, 1, 17, 129, 64, 64, True, None, None, "contiguous", 0),          # MQA
        (3, 2, 2, 19, 300, 16, 24, False, [300, 0, 7], 0.3, "contiguous", 0),   # padding, empty batch, Dv != D
        (2, 2, 1, 1, 301, 64, 64, True, [301, 200], None, "contiguous", 0),     # decode: one query
        # Decoding with GQA runs a group's q heads as the rows of one tile (runtime/src/attention.cpp):
        (1, 8, 2, 1, 77, 32, 24, False, None, None, "strided", 0),              # strided views, Dv != D
        (2, 6, 2, 1, 90, 16, 16, True, [90, 33], None, "blhd", 0),              # [B, L, H, D], padding
        (2, 4, 2, 1, 60, 16, 16, True, None, None, "contiguous", 20),           # a window: not folded
        (1, 4, 4, 1, 33, 64, 64, False, [20], None, "contiguous", 0),           # one query, no GQA, padding
        (2, 8, 8, 1, 131, 128, 96, True, [131, 60], None, "strided", 0),        # ... D = 128, Dv = 96, strided
        (1, 3, 3, 3, 40, 16, 24, True, None, None, "strided", 0),               # 3 queries (speculative decoding)
        (2, 16, 2, 1, 50, 32, 32, True, [50, 9], None, "contiguous", 0),        # a group of 8: an 8-row tile
        (1, 14, 2, 1, 90, 64, 40, False, None, None, "strided", 0),             # a group of 7, strided, Dv != D
        (1, 2, 2, 6, 70, 16, 16, True, [50], None, "blhd", 0),                  # 6 queries (speculative decoding)
        (1, 18, 2, 1, 50, 32, 32, True, None, None, "contiguous", 0),           # a group of 9: the plain tiles
        (1, 16, 2, 1, 50, 32, 32, True, None, None, "contiguous", 9),           # ... but with a window, one row
        (2, 8, 2, 3, 30, 16, 16, True, [30, 0], None, "contiguous", 0),         # GQA, 3 queries, an empty batch
        (1, 2, 1, 3, 2, 8, 8, True, None, None, "contiguous", 0),               # 3 queries, 2 keys: a row masked
        (1, 8, 2, 1, 70, 40, 40, True, None, None, "contiguous", 0),            # D not whole 16-channel vectors
        (1, 8, 8, 128, 128, 64, 64, True, None, None, "contiguous", 0),
        (2, 4, 2, 29, 45, 32, 32, True, [45, 30], None, "blhd", 0),             # [B, L, H, D] views
        (1, 2, 2, 21, 21, 12, 12, False, None, None, "strided", 0),             # inner stride 2
        (2, 4, 2, 45, 300, 32, 32, True, [300, 170], None, "contiguous", 64),  # sliding window, GQA, padding
        (1, 2, 2, 37, 37, 16, 16, False, None, None, "contiguous", 5),          # window without causal
        # Windows over several key blocks, whose blocks before a tile's window are skipped:
        (1, 4, 2, 300, 900, 32, 32, True, None, None, "contiguous", 100),      # Lq < Lk, GQA
        (1, 2, 2, 600, 600, 16, 16, False, None, None, "contiguous", 130),     # without causal
        (2, 2, 2, 40, 700, 16, 16, True, [700, 200], None, "contiguous", 50),  # batch 1: no visible key, rows 0
        (1, 8, 2, 1, 1000, 64, 64, True, None, None, "contiguous", 300),       # decode
        # Every key length below Lk (a static KV cache): the runtime runs the first max(key_lengths)
        # keys, the positions kept by the lookahead and window it passes.
        (2, 8, 2, 1, 600, 64, 64, True, [300, 170], None, "contiguous", 0),    # decode, GQA folded
        (2, 4, 2, 30, 500, 32, 32, True, [260, 100], None, "contiguous", 0),
        (1, 2, 2, 30, 400, 16, 16, False, [350], None, "contiguous", 80),     # a window, not causal
        (1, 2, 2, 40, 700, 16, 16, True, [500], None, "contiguous", 64),      # every row's window past the keys: 0
        (2, 2, 2, 5, 40, 16, 16, True, [0, 0], None, "contiguous", 0),        # no key in any batch: 0
        (2, 4, 2, 29, 60, 32, 32, True, [45, 30], None, "blhd", 0),           # of [B, L, H, D] views
        (1, 2, 2, 21, 40, 12, 12, False, [30], None, "strided", 0),           # of views with inner stride 2
        # Head sizes of LLaMA and Gemma (a GPU block's shared memory grew with D, past CUDA's 48 KiB):
        (1, 8, 2, 1, 150, 128, 128, True, None, None, "contiguous", 0),         # D = 128, GQA decode
        (1, 2, 2, 40, 70, 256, 256, True, None, None, "contiguous", 0),         # D = 256
    ]
    for B, Hq, Hkv, Lq, Lk, D, Dv, causal, lengths, scale, layout, window in configs:
        def run(rng, call, B=B, Hq=Hq, Hkv=Hkv, Lq=Lq, Lk=Lk, D=D, Dv=Dv, causal=causal, lengths=lengths,
                scale=scale, layout=layout, window=window):
            def make(shape):
                a = rng.standard_normal(shape).astype(np.float32)
                if layout == "blhd":  # the layout projections produce, seen as [B, H, L, D]
                    a = np.ascontiguousarray(a.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
                elif layout == "strided":
                    a = _strided(a, rng)
                return a
            q, k, v = make((B, Hq, Lq, D)), make((B, Hkv, Lk, D)), make((B, Hkv, Lk, Dv))
            key_lengths = None if lengths is None else np.array(lengths, np.int32)
            before, after = _untouched(q, k, v)
            out = poisoned((B, Hq, Lq, Dv))
            posattn.attention(q, k, v, scale=scale, causal=causal, key_lengths=key_lengths, window=window, out=out,
                              **call)
            expected = reference.attention(q, k, v, scale, causal, key_lengths, window=window)
            return out, expected, ATTN_ATOL, ATTN_RTOL, before, after
        name = (f"B{B}-Hq{Hq}-Hkv{Hkv}-Lq{Lq}-Lk{Lk}-D{D}-Dv{Dv}{'-causal' if causal else ''}"
                f"{'-lengths' + '_'.join(map(str, lengths)) if lengths else ''}{f'-scale{scale}' if scale else ''}-{layout}"
                f"{f'-window{window}' if window else ''}")
        cases.append(Case(plain_attention_function(Hq, Hkv, Lq, Lk, window), name, run))
    return cases


def alibi_attention_cases():
    cases = []
    # (B, Hq, Hkv, Lq, Lk, D, causal, key lengths, form, slopes)
    configs = [
        (2, 4, 4, 37, 37, 16, True, None, "relative", "alibi"),
        (1, 6, 2, 9, 70, 32, True, [70], "key_position", "alibi"),      # GQA, Lq < Lk
        (2, 3, 3, 33, 33, 24, False, [33, 20], "symmetric", "alibi"),   # non-power-of-two heads, padding
        (1, 4, 1, 17, 129, 64, False, None, "relative", "random"),      # MQA, bidirectional, any slopes
        (1, 2, 2, 1, 301, 64, True, None, "relative", "alibi"),         # decode
        # Slopes up to 2: weights down to e^-600, through the range softmax_exp flushes to 0 (< 2^-63).
        (1, 4, 2, 24, 300, 32, False, None, "symmetric", "steep"),
    ]
    for B, Hq, Hkv, Lq, Lk, D, causal, lengths, form, slopes in configs:
        def run(rng, call, B=B, Hq=Hq, Hkv=Hkv, Lq=Lq, Lk=Lk, D=D, causal=causal, lengths=lengths, form=form,
                slopes=slopes):
            q, k, v = _qkv(rng, B, Hq, Hkv, Lq, Lk, D)
            m = {"alibi": lambda: reference.alibi_slopes(Hq), "random": lambda: rng.uniform(0, 0.5, Hq),
                 "steep": lambda: rng.uniform(0.5, 2.0, Hq)}[slopes]()
            key_lengths = None if lengths is None else np.array(lengths, np.int32)
            before, after = _untouched(q, k, v, m)
            out = poisoned((B, Hq, Lq, D))
            posattn.attention(q, k, v, causal=causal, key_lengths=key_lengths, alibi_slopes=m, alibi_form=form,
                              out=out, **call)
            expected = reference.attention(q, k, v, None, causal, key_lengths,
                                           bias=reference.alibi_bias(m, Lq, Lk, form)[None])
            return out, expected, ATTN_ATOL, ATTN_RTOL, before, after
        name = (f"B{B}-Hq{Hq}-Hkv{Hkv}-Lq{Lq}-Lk{Lk}-D{D}{'-causal' if causal else ''}"
                f"{'-lengths' + '_'.join(map(str, lengths)) if lengths else ''}-{form}-{slopes}")
        cases.append(Case("posattn_attn_alibi_f32", name, run))
    return cases


def t5_attention_cases():
    cases = []
    # (B, Hq, Hkv, Lq, Lk, D, causal, key lengths, bidirectional, buckets, max distance, scale)
    configs = [
        (2, 4, 4, 37, 37, 16, False, None, True, 32, 128, None),           # encoder self-attention
        (1, 6, 2, 9, 300, 32, True, [300], False, 32, 128, None),          # decoder, GQA, Lq < Lk
        (2, 3, 3, 33, 70, 24, True, [70, 41], False, 8, 20, 0.2),          # padding, explicit scale
        (1, 2, 1, 1, 301, 64, True, None, False, 32, 128, None),           # decode
        (1, 1, 1, 5, 5, 8, False, None, True, 32, 128, None),              # one head: a [buckets, 1] table
    ]
    for B, Hq, Hkv, Lq, Lk, D, causal, lengths, bidirectional, buckets, max_distance, scale in configs:
        def run(rng, call, B=B, Hq=Hq, Hkv=Hkv, Lq=Lq, Lk=Lk, D=D, causal=causal, lengths=lengths,
                bidirectional=bidirectional, buckets=buckets, max_distance=max_distance, scale=scale):
            q, k, v = _qkv(rng, B, Hq, Hkv, Lq, Lk, D)
            table = rng.standard_normal((buckets, Hq)).astype(np.float32)
            key_lengths = None if lengths is None else np.array(lengths, np.int32)
            before, after = _untouched(q, k, v, table)
            out = poisoned((B, Hq, Lq, D))
            posattn.attention(q, k, v, scale=scale, causal=causal, key_lengths=key_lengths, t5_table=table,
                              t5_bidirectional=bidirectional, t5_max_distance=max_distance, out=out, **call)
            bias = reference.t5_bias(table, Lq, Lk, bidirectional, max_distance)[None]
            expected = reference.attention(q, k, v, 1.0 if scale is None else scale, causal, key_lengths, bias=bias)
            return out, expected, ATTN_ATOL, ATTN_RTOL, before, after
        name = (f"B{B}-Hq{Hq}-Hkv{Hkv}-Lq{Lq}-Lk{Lk}-D{D}{'-causal' if causal else ''}"
                f"{'-lengths' + '_'.join(map(str, lengths)) if lengths else ''}-"
                f"{'bidirectional' if bidirectional else 'decoder'}-buckets{buckets}-max{max_distance}"
                f"{f'-scale{scale}' if scale else ''}")
        cases.append(Case("posattn_attn_t5_f32", name, run))
    return cases


def rope_attention_cases():
    cases = []
    yarn = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}
    # (B, Hq, Hkv, Lq, Lk, D, causal, layout, rotary_dim, positions, scaling)
    configs = [
        (2, 4, 4, 37, 37, 64, True, "neox", None, "default", None),
        (1, 6, 2, 9, 70, 32, True, "gptj", None, "default", yarn),           # GQA, Lq < Lk
        (2, 3, 3, 33, 45, 48, False, "neox", 16, "explicit", None),          # partial rotary, explicit positions
        (1, 4, 1, 17, 129, 64, True, "gptj", 32, "explicit", {"type": "linear", "factor": 2.0}),  # MQA
        (1, 2, 2, 1, 301, 64, True, "neox", None, "default", None),          # decode
    ]
    for B, Hq, Hkv, Lq, Lk, D, causal, layout, r, positions, scaling in configs:
        def run(rng, call, B=B, Hq=Hq, Hkv=Hkv, Lq=Lq, Lk=Lk, D=D, causal=causal, layout=layout, r=r,
                positions=positions, scaling=scaling):
            q, k, v = _qkv(rng, B, Hq, Hkv, Lq, Lk, D)
            if positions == "explicit":  # any integers, per batch, e.g. with a KV cache offset
                qp = rng.integers(0, 10**4, size=(B, Lq)).astype(np.int32)
                kp = rng.integers(0, 10**4, size=(B, Lk)).astype(np.int32)
            else:
                qp, kp = np.arange(Lk - Lq, Lk), np.arange(Lk)
            before, after = _untouched(q, k, v)
            out = poisoned((B, Hq, Lq, D))
            rope = dict(layout=layout, rotary_dim=r, scaling=scaling)
            if positions == "explicit":
                rope.update(q_positions=qp, k_positions=kp)
            posattn.attention(q, k, v, causal=causal, rope=rope, out=out, **call)
            inv, af = reference.rope_inv_freq(r or D, scaling=scaling, seq_len=int(np.max(kp)) + 1)
            expected = reference.attention(reference.rope(q, qp, inv, af, layout, r),
                                           reference.rope(k, kp, inv, af, layout, r), v, None, causal)
            return out, expected, ATTN_ATOL, ATTN_RTOL, before, after
        name = (f"B{B}-Hq{Hq}-Hkv{Hkv}-Lq{Lq}-Lk{Lk}-D{D}{'-causal' if causal else ''}-{layout}"
                f"{f'-r{r}' if r else ''}-{positions}-{scaling['type'] if scaling else 'unscaled'}")
        cases.append(Case("posattn_attn_rope_f32", name, run))
    return cases


def _lengths_name(lengths):
    return "-lengths" + "_".join(map(str, lengths)) if lengths else ""


def shaw_attention_cases():
    cases = []
    # (B, Hq, Hkv, Lq, Lk, D, Dv, K, per-head tables, causal, key lengths, window)
    configs = [
        (2, 4, 4, 37, 37, 16, 16, 4, False, False, None, 0),
        (1, 6, 2, 9, 70, 32, 24, 16, True, True, [70], 0),        # GQA, Lq < Lk, per-head tables, Dv != D
        (2, 3, 3, 33, 300, 24, 24, 64, False, True, [300, 41], 0),  # padding, K spanning several key blocks
        (1, 2, 1, 1, 301, 64, 64, 128, True, True, None, 0),      # decode
        (1, 4, 4, 50, 50, 16, 16, 2, False, False, None, 9),      # sliding window
        (1, 2, 2, 300, 600, 16, 16, 4, False, True, None, 70),    # ... over several key blocks
        (1, 2, 2, 111, 40, 8, 8, 8, False, False, None, 0),       # queries outnumber keys, not causal
    ]
    for B, Hq, Hkv, Lq, Lk, D, Dv, K, per_head, causal, lengths, window in configs:
        def run(rng, call, B=B, Hq=Hq, Hkv=Hkv, Lq=Lq, Lk=Lk, D=D, Dv=Dv, K=K, per_head=per_head, causal=causal,
                lengths=lengths, window=window):
            q, k, _ = _qkv(rng, B, Hq, Hkv, Lq, Lk, D)
            v = rng.standard_normal((B, Hkv, Lk, Dv)).astype(np.float32)
            lead = (Hq,) if per_head else ()
            rel_k = rng.standard_normal(lead + (2 * K + 1, D)).astype(np.float32)
            rel_v = rng.standard_normal(lead + (2 * K + 1, Dv)).astype(np.float32)
            key_lengths = None if lengths is None else np.array(lengths, np.int32)
            before, after = _untouched(q, k, v, rel_k, rel_v)
            out = poisoned((B, Hq, Lq, Dv))
            posattn.attention(q, k, v, causal=causal, key_lengths=key_lengths, window=window,
                              shaw={"rel_k": rel_k, "rel_v": rel_v}, out=out, **call)
            expected = reference.shaw_attention(q, k, v, rel_k, rel_v, causal=causal, key_lengths=key_lengths,
                                                window=window)
            return out, expected, ATTN_ATOL, ATTN_RTOL, before, after
        name = (f"B{B}-Hq{Hq}-Hkv{Hkv}-Lq{Lq}-Lk{Lk}-D{D}-Dv{Dv}-K{K}-{'per_head' if per_head else 'shared'}"
                f"{'-causal' if causal else ''}{_lengths_name(lengths)}{f'-window{window}' if window else ''}")
        cases.append(Case("posattn_attn_shaw_f32", name, run))
    return cases


def transformer_xl_attention_cases():
    cases = []
    # (B, Hq, Hkv, Lq (segment), Lk (memory + segment), D, per-head r, clamp_len, same_length, key lengths)
    configs = [
        (2, 4, 4, 37, 37, 16, False, 0, 0, None),        # no memory
        (1, 6, 2, 33, 100, 32, True, 0, 0, None),        # memory of 67, GQA, per-head r
        (2, 3, 3, 29, 290, 24, False, 40, 0, None),      # clamp_len
        (1, 4, 4, 45, 80, 16, True, 0, 50, [80]),        # same_length (mem_len 50)
        (1, 2, 2, 300, 700, 16, False, 0, 120, None),    # ... over several key blocks (those before skipped)
        (2, 2, 1, 1, 301, 64, False, 0, 0, [301, 150]),  # decode with memory, padding
        (1, 4, 2, 33, 100, 32, True, 0, 0, "descending"),  # r as HF keeps it, by descending distance
        (1, 2, 2, 29, 90, 16, False, 30, 0, "descending"),
    ]
    for B, Hq, Hkv, Lq, Lk, D, per_head, clamp_len, same_length, lengths in configs:
        order = "descending" if lengths == "descending" else "ascending"
        lengths = None if lengths == "descending" else lengths

        def run(rng, call, B=B, Hq=Hq, Hkv=Hkv, Lq=Lq, Lk=Lk, D=D, per_head=per_head, clamp_len=clamp_len,
                same_length=same_length, lengths=lengths, order=order):
            q, k, v = _qkv(rng, B, Hq, Hkv, Lq, Lk, D)
            r = rng.standard_normal(((Hq,) if per_head else ()) + (Lk, D)).astype(np.float32)
            u, v_bias = (rng.standard_normal((Hq, D)).astype(np.float32) for _ in range(2))
            key_lengths = None if lengths is None else np.array(lengths, np.int32)
            before, after = _untouched(q, k, v, r, u, v_bias)
            out = poisoned((B, Hq, Lq, D))
            given = r if order == "ascending" else np.ascontiguousarray(r[..., ::-1, :])  # HF's pos_emb
            posattn.attention(q, k, v, causal=True, key_lengths=key_lengths, out=out, **call,
                              transformer_xl={"r": given, "u": u, "v_bias": v_bias, "clamp_len": clamp_len,
                                              "same_length": same_length, "r_order": order})
            expected = reference.transformer_xl_attention(q, k, v, r, u, v_bias, clamp_len, same_length,
                                                          key_lengths=key_lengths)
            return out, expected, ATTN_ATOL, ATTN_RTOL, before, after
        name = (f"B{B}-Hq{Hq}-Hkv{Hkv}-Lq{Lq}-Lk{Lk}-D{D}-{'per_head' if per_head else 'shared'}"
                f"{f'-clamp{clamp_len}' if clamp_len else ''}{f'-same_length{same_length}' if same_length else ''}"
                f"{_lengths_name(lengths)}{'-descending' if order == 'descending' else ''}")
        cases.append(Case("posattn_attn_xl_f32", name, run))
    return cases


def deberta_attention_cases():
    cases = []
    # (B, Hq, Hkv, Lq, Lk, D, terms, position buckets, max relative positions, p2c index, causal, key lengths)
    configs = [
        (2, 4, 4, 37, 37, 16, "c2p+p2c", -1, 24, "code", False, None),
        (1, 6, 2, 33, 70, 32, "c2p+p2c", 16, 64, "code", False, [70]),   # log buckets, GQA, Lq < Lk
        (2, 3, 3, 45, 45, 24, "c2p", 8, 40, "code", False, [45, 20]),   # one term, padding
        (1, 2, 2, 29, 29, 16, "p2c", -1, 12, "paper", True, None),      # the paper's p2c index, causal
        (1, 4, 4, 300, 300, 64, "c2p+p2c", 256, 512, "paper", False, None),  # v3's 256 buckets
        (1, 2, 2, 150, 150, 32, "c2p+p2c", 64, 40, "code", False, None),  # buckets that jump rows
        # Queries outnumbering keys (negative positions), not causal: each tile sees every key.
        (1, 1, 1, 64, 3, 8, "c2p", -1, 8, "code", False, None),
        (1, 2, 2, 111, 40, 8, "c2p+p2c", -1, 8, "code", False, None),
        (1, 2, 1, 200, 16, 16, "p2c", 8, 64, "paper", False, None),
    ]
    for B, Hq, Hkv, Lq, Lk, D, terms, buckets, max_rel, p2c_index, causal, lengths in configs:
        def run(rng, call, B=B, Hq=Hq, Hkv=Hkv, Lq=Lq, Lk=Lk, D=D, terms=terms, buckets=buckets, max_rel=max_rel,
                p2c_index=p2c_index, causal=causal, lengths=lengths):
            q, k, v = _qkv(rng, B, Hq, Hkv, Lq, Lk, D)
            span = buckets if buckets > 0 else max_rel
            hidden = 40
            emb = rng.standard_normal((2 * span + 3, hidden)).astype(np.float32)
            weights = {}
            for term, w, b in (("c2p", "w_key", "b_key"), ("p2c", "w_query", "b_query")):
                if term in terms:
                    weights[w] = (rng.standard_normal((Hq * D, hidden)) / np.sqrt(hidden)).astype(np.float32)
                    weights[b] = rng.standard_normal(Hq * D).astype(np.float32)
            key_lengths = None if lengths is None else np.array(lengths, np.int32)
            before, after = _untouched(q, k, v, emb, *weights.values())
            out = poisoned((B, Hq, Lq, D))
            options = dict(position_buckets=buckets, max_relative_positions=max_rel, p2c_index=p2c_index, **weights)
            posattn.attention(q, k, v, causal=causal, key_lengths=key_lengths, out=out, **call,
                              deberta=dict(rel_embeddings=emb, **options))
            expected = reference.deberta_attention(q, k, v, emb, causal=causal, key_lengths=key_lengths, **options)
            return out, expected, ATTN_ATOL, ATTN_RTOL, before, after
        name = (f"B{B}-Hq{Hq}-Hkv{Hkv}-Lq{Lq}-Lk{Lk}-D{D}-{terms}-buckets{buckets}-max{max_rel}-{p2c_index}"
                f"{'-causal' if causal else ''}{_lengths_name(lengths)}")
        cases.append(Case("posattn_attn_deberta_f32", name, run))
    return cases


def linear_cases():
    cases = []
    # (N, E, O, bias, layout)
    # (E = 0: an empty sum, so out is the bias, or zero, in every row)
    for N, E, O, bias, layout in [(37, 40, 48, True, "contiguous"), (300, 129, 77, False, "contiguous"),
                                  (5, 16, 33, True, "strided"), (1, 1, 1, True, "contiguous"),
                                  (6, 0, 9, True, "contiguous"), (3, 0, 5, False, "contiguous")]:
        def run(rng, call, N=N, E=E, O=O, bias=bias, layout=layout):
            x = rng.standard_normal((N, E)).astype(np.float32)
            w = rng.standard_normal((O, E)).astype(np.float32)
            b = rng.standard_normal(O).astype(np.float32) if bias else None
            if layout == "strided":
                x, w = _strided(x, rng), _strided(w, rng)
            before, after = _untouched(x, w, *([b] if bias else []))
            out = poisoned((N, O))
            posattn.linear(x, w, b, out=out, **call)
            expected = x.astype(np.float64) @ w.astype(np.float64).T + (0 if b is None else b)
            # E float32 products summed in float32: a few ulp of Σ|x·w| (≤ ~√E·3 here).
            return out, expected, 1e-5 * np.sqrt(E), 1e-5, before, after
        cases.append(Case("posattn_linear_f32", f"N{N}-E{E}-O{O}{'-bias' if bias else ''}-{layout}", run))
    return cases


def all_cases(built=()):
    """Every case, and the float16 and bfloat16 twins (tests/storage.py) of those whose kernel has
    an instance of that type among `built` functions."""
    cases = (sinusoidal_cases() + sinusoidal_add_cases() + learned_cases(False) + learned_cases(True)
             + simple_cases() + complex_order_cases() + floater_cases() + rope_cases() + alibi_cases()
             + linear_cases() + attention_cases() + alibi_attention_cases() + t5_attention_cases()
             + rope_attention_cases() + shaw_attention_cases() + transformer_xl_attention_cases()
             + deberta_attention_cases() + masked_attention_cases())
    return cases + twins(cases, set(built))


# Masks, biases, left padding, packed segments and padded queries (posattn.attention's mask, bias,
# key_starts, q_segments/k_segments, query_lengths) on every variant: each a random instance.
def _random_masks(rng, kind, B, Hq, Lq, Lk):
    """posattn.attention's masking arguments of one kind, as arrays (the reference takes the same)."""
    if kind == "mask":  # per batch and head, some rows fully masked
        mask = rng.random((B, Hq, Lq, Lk)) < 0.7
        mask[:, :, rng.integers(0, Lq, size=2)] = False
        return {"mask": mask}
    if kind in ("row-runs", "head-runs"):  # each row one run of True keys: all, some or none (key ranges)
        lo = rng.integers(0, Lk, size=(B, Hq if kind == "head-runs" else 1, Lq, 1))
        hi = rng.integers(lo, Lk + 1)
        lo[rng.random(lo.shape) < 0.25], hi[rng.random(hi.shape) < 0.25] = 0, Lk
        return {"mask": (np.arange(Lk) >= lo) & (np.arange(Lk) < hi)}
    if kind == "padding-mask":  # [B, 1, 1, Lk], as a tokenizer's attention_mask
        return {"mask": (np.arange(Lk)[None] < rng.integers(1, Lk + 1, size=(B, 1)))[:, None, None]}
    if kind == "bias":  # float bias for every head, -inf in places, and a rank-2 mask
        bias = rng.standard_normal((1, Hq, Lq, Lk)).astype(np.float32)
        bias[rng.random(bias.shape) < 0.1] = -np.inf
        return {"bias": bias, "mask": rng.random((Lq, Lk)) < 0.9}
    if kind == "left-padding":
        starts = rng.integers(0, Lk // 2, size=B).astype(np.int32)
        return {"key_starts": starts, "key_lengths": rng.integers(starts + 1, Lk + 1).astype(np.int32)}
    if kind in ("segments", "segments-apart"):  # packed documents; or ids whose keys are not one run
        if kind == "segments":
            k_segments = np.sort(rng.integers(0, 4, size=(B, Lk)), axis=1)
        else:
            k_segments = rng.integers(0, 3, size=(B, Lk))
        q_segments = k_segments[:, Lk - Lq:] if Lq <= Lk else rng.integers(0, 5, size=(B, Lq))
        return {"q_segments": q_segments.astype(np.int32), "k_segments": k_segments.astype(np.int32)}
    if kind == "query-lengths":  # with a bias broadcast over batches and queries
        return {"query_lengths": rng.integers(0, Lq + 1, size=B).astype(np.int32),
                "bias": rng.standard_normal((1, Hq, 1, Lk)).astype(np.float32)}
    raise ValueError(kind)


def _fully_masked_rows(expected_call, masks, q, k, v):
    """Rows the reference gives no visible key (its output there is 0 exactly, from v = 1)."""
    ones = np.ones_like(v)
    return np.all(expected_call(q, k, ones, **masks) == 0, axis=-1)


def _variant(rng, name, B, Hq, Lq, Lk, D):
    """(posattn.attention keyword arguments, reference(q, k, v, causal, masks), inputs) of a variant."""
    if name == "plain":
        return {}, lambda q, k, v, causal, masks: reference.attention(q, k, v, None, causal, **masks), []
    if name in ("alibi", "t5"):
        if name == "alibi":
            m = reference.alibi_slopes(Hq)
            kwargs, scale = {"alibi_slopes": m, "alibi_form": "key_position"}, None
        else:
            table = rng.standard_normal((32, Hq)).astype(np.float32)
            kwargs, scale = {"t5_table": table}, 1.0

        def expected(q, k, v, causal, masks):
            masks = dict(masks)
            if name == "alibi":  # key positions counted from each batch's first valid key
                starts = masks.get("key_starts", np.zeros(B, np.int32))
                own = m[None, :, None, None] * (np.arange(Lk)[None, None, None] - starts[:, None, None, None])
            else:
                own = reference.t5_bias(table, Lq, Lk, True, 128)[None]
            masks["bias"] = own + masks.get("bias", 0.0)
            return reference.attention(q, k, v, scale, causal, **masks)
        return kwargs, expected, list(kwargs.values())[:1]
    if name == "rope":
        def expected(q, k, v, causal, masks):  # default positions count from each batch's first valid key
            starts = masks.get("key_starts", np.zeros(B, np.int32))[:, None]
            kp = np.maximum(np.arange(Lk)[None] - starts, 0)
            qp = kp[:, Lk - Lq:]
            inv, af = reference.rope_inv_freq(D, seq_len=int(kp.max()) + 1)
            return reference.attention(reference.rope(q, qp, inv, af), reference.rope(k, kp, inv, af), v, None, causal,
                                       **masks)
        return {"rope": {}}, expected, []
    if name == "shaw":
        rel_k, rel_v = (rng.standard_normal((9, D)).astype(np.float32) for _ in range(2))
        return ({"shaw": {"rel_k": rel_k, "rel_v": rel_v}},
                lambda q, k, v, causal, masks: reference.shaw_attention(q, k, v, rel_k, rel_v, causal=causal, **masks),
                [rel_k, rel_v])
    if name == "xl":
        r = rng.standard_normal((Lk, D)).astype(np.float32)
        u, v_bias = (rng.standard_normal((Hq, D)).astype(np.float32) for _ in range(2))
        return ({"transformer_xl": {"r": r, "u": u, "v_bias": v_bias}},
                lambda q, k, v, causal, masks: reference.transformer_xl_attention(q, k, v, r, u, v_bias, causal=causal, **masks),
                [r, u, v_bias])
    if name == "deberta":
        emb = rng.standard_normal((2 * 16, 24)).astype(np.float32)
        w = {"w_key": (rng.standard_normal((Hq * D, 24)) / 5).astype(np.float32),
             "w_query": (rng.standard_normal((Hq * D, 24)) / 5).astype(np.float32)}
        options = dict(position_buckets=8, max_relative_positions=16, **w)
        return ({"deberta": dict(rel_embeddings=emb, **options)},
                lambda q, k, v, causal, masks: reference.deberta_attention(q, k, v, emb, causal=causal, **options, **masks),
                [emb, *w.values()])
    raise ValueError(name)


MASK_KINDS = ("mask", "row-runs", "head-runs", "padding-mask", "bias", "left-padding", "segments", "segments-apart", "query-lengths")


def masked_attention_cases():
    cases = []
    functions = {"plain": "posattn_attn_plain_f32", "alibi": "posattn_attn_alibi_f32", "t5": "posattn_attn_t5_f32",
                 "rope": "posattn_attn_rope_f32", "shaw": "posattn_attn_shaw_f32", "xl": "posattn_attn_xl_f32",
                 "deberta": "posattn_attn_deberta_f32"}
    # (variant, B, Hq, Hkv, Lq, Lk, D, causal): Lq < Lk, several key blocks of every schedule.
    shapes = [(variant, 2, 4, 2, 45, 300, 16, variant == "xl") for variant in functions]
    shapes += [("plain", 2, 4, 4, 37, 37, 16, True),      # causal self-attention
               ("plain", 2, 8, 2, 1, 90, 32, True),       # decoding, the GQA group folded into rows
               ("rope", 2, 4, 4, 37, 37, 32, True), ("alibi", 2, 4, 4, 37, 37, 16, True)]
    for variant, B, Hq, Hkv, Lq, Lk, D, causal in shapes:
        for kind in MASK_KINDS:
            def run(rng, call, variant=variant, B=B, Hq=Hq, Hkv=Hkv, Lq=Lq, Lk=Lk, D=D, causal=causal, kind=kind):
                q, k, v = _qkv(rng, B, Hq, Hkv, Lq, Lk, D)
                masks = _random_masks(rng, kind, B, Hq, Lq, Lk)
                kwargs, expected_of, tables = _variant(rng, variant, B, Hq, Lq, Lk, D)
                before, after = _untouched(q, k, v, *tables, *masks.values())
                out = poisoned((B, Hq, Lq, D))
                posattn.attention(q, k, v, causal=causal, **masks, **kwargs, out=out, **call)
                expected = expected_of(q, k, v, causal, masks)
                empty = _fully_masked_rows(lambda *a, **m: expected_of(*a, causal, m), masks, q, k, v)
                assert (out[empty] == 0).all(), "a row with no visible key is not exactly 0"
                return out, expected, ATTN_ATOL, ATTN_RTOL, before, after
            cases.append(Case(functions[variant], f"B{B}-Hq{Hq}-Hkv{Hkv}-Lq{Lq}-Lk{Lk}-D{D}{'-causal' if causal else ''}-{kind}", run))
    return cases
