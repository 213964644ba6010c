// Vectorizable sines: from a float64 angle, or from a fixed-point fraction of a turn; and the
// split of positions that lets an encoding read sin/cos(p·ω) from two small tables instead.
//
// Halide's sin/cos call libm per lane (no vectorization), and fast_sin is only accurate to 1e-5.
// Positional angles p·ω reach ~2^31, where a float32 product already has an absolute error of
// hundreds of radians. Where ω is a fixed frequency the runtime passes ω/2π in fixed point and
// the reduction is done in 32-bit lanes (fixed_point_turn, sin_of_turns: the sinusoid, sin-only);
// where it is an arbitrary float (RoPE's scaled frequencies, complex-order tables) the angle
// arrives as float64, is reduced by multiples of π/2 in float64, and only the reduced argument
// |r| ≤ π/4 goes through float32 minimax polynomials (sin_quarter_turns: Cephes sinf/cosf
// coefficients, ≤ 1 ulp on that interval).
#pragma once

#include <functional>
#include <vector>

#include "Halide.h"

namespace posattn {

// Whether LLVM fuses a·b + c into one FMA (exact product) on this target's CPU code. GPU code is
// excluded: OpenCL C compilers contract at will, so device code keeps the exact split below.
inline bool contracts_to_fma(const Halide::Target &target) {
    using Halide::Target;
    if (target.has_gpu_feature()) return false;
    return target.arch == Target::ARM ||
           target.features_any_of({Target::FMA, Target::AVX512, Target::AVX512_Skylake, Target::AVX512_Cannonlake,
                                   Target::AVX512_SapphireRapids, Target::AVX512_Zen4, Target::AVX512_Zen5});
}

// (sin, cos) of r + quadrant·π/2 as float32, for a reduced |r| ≤ π/4 (Float(32)) and the two low
// bits of quadrant (Int(32) or UInt(32)): Cephes' sinf and cosf polynomials, ≤ 1 ulp on that
// interval, one of them each value's, and exact at multiples of π/2 (sin 0 = 0, cos 0 = 1).
inline Halide::Tuple sin_cos_of_quadrant(const Halide::Expr &r, const Halide::Expr &quadrant) {
    using namespace Halide;
    Expr r2 = r * r;
    Expr sin_r = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f));
    Expr cos_r = 1.0f - 0.5f * r2 +
                 r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
    // Odd quadrants swap the two; the sine is negated in quadrants 2 and 3, the cosine in 1 and 2.
    Expr q = cast<uint32_t>(quadrant), odd = (q & 1) == 1;
    auto negated_if = [](Expr value, Expr sign_bit) { return reinterpret<float>(reinterpret<uint32_t>(value) ^ sign_bit); };
    return {negated_if(select(odd, cos_r, sin_r), (q & 2) << 30), negated_if(select(odd, sin_r, cos_r), ((q + 1) & 2) << 30)};
}

// sin(angle + quarter_turns·π/2) as float32; angle is Float(64), quarter_turns Int(32).
// quarter_turns = 1 gives the cosine exactly, without rounding π/2 into the angle.
inline Halide::Expr sin_quarter_turns(Halide::Expr angle, Halide::Expr quarter_turns, const Halide::Target &target) {
    using namespace Halide;
    // k, the nearest integer to angle·2/π. On CPUs by adding 1.5·2^52: the sum's low bits are
    // k mod 2^51 (two instructions; Halide's round and floor of float64 split AVX-512 vectors in
    // halves). Not on GPUs: Halide 21 marks no SPIR-V operation NoContraction, and lavapipe's
    // compiler folded (x + 1.5·2^52) − 1.5·2^52 back into x, an unrounded k (sines off by ~1e-4
    // from angles ~2^22 on). GPUs truncate x ± 1/2 to an integer instead, and make k of its two
    // halves: lavapipe on CPUs without AVX-512 rounds and truncates float64 only below ~2^24 (it
    // returned x itself above; Mesa 22, AMD EPYC 7003), and its compiler folds a float → int →
    // float round trip into such a truncation.
    const Expr shifter(0x1.8p52);
    Expr k_bits;  // an integer whose two low bits are k's
    auto nearest = [&](Expr x) {
        if (target.has_gpu_feature()) {
            k_bits = cast<int64_t>(x + select(x < 0, Expr(-0.5), Expr(0.5)));
            return cast<double>(k_bits >> 16) * Expr(65536.0) + cast<double>(k_bits & 0xffff);
        }
        Expr shifted = strict_float(x + shifter);
        k_bits = reinterpret<int64_t>(shifted);
        return strict_float(shifted - shifter);
    };
    Expr k, r;
    if (contracts_to_fma(target)) {
        // Two-part Cody-Waite: angle − k·pio2_1 is one FMA (exact product, one rounding of a result
        // ≤ π/4), so the reduction is good to ~|k|·2^-107 for any |k| < 2^51. The tail product is
        // strict so that neither the simplifier nor LLVM folds pio2_2 into pio2_1.
        const Expr pio2_1(1.5707963267948966), pio2_2(6.123233995736766e-17);
        k = nearest(strict_float(angle * Expr(0.6366197723675814)));
        r = cast<float>((angle - k * pio2_1) - strict_float(k * pio2_2));
    } else {
        // π/2 split so that k·pio2_hi is exact for |k| < 2^32 (pio2_hi has 21 significant bits).
        // Every float64 constant is a sum of parts exact in float32: Halide 21's OpenCL C writes
        // float64 constants through float32, which would otherwise round them. strict_float: the
        // simplifier would otherwise fold the parts back into one constant.
        const Expr pio2_hi(0x1.921fbp+0), pio2_mid(0x1.5110b4p-22), pio2_lo(0x1.84698ap-48);
        const Expr two_over_pi_hi(0x1.45f306p-1), two_over_pi_lo(0x1.b93910p-26);
        k = nearest(strict_float(angle * two_over_pi_hi + angle * two_over_pi_lo));
        r = cast<float>(strict_float(((angle - k * pio2_hi) - k * pio2_mid) - k * pio2_lo));
    }
    return sin_cos_of_quadrant(r, cast<int32_t>(k_bits & 3) + quarter_turns)[0];
}

// sin(2π·turns/2^32) as float32 (≤ 2 ulp) for a 0.32 fixed-point fraction of a turn (UInt(32),
// wrapping: integer arithmetic does the whole argument reduction exactly). The nearest half turn
// is taken out (its parity is the sign) and r = 2π·rest ∈ [−π/2, π/2] goes through an odd
// polynomial of degree 9 (a relative-error least-squares fit on that interval, 6e-9).
inline Halide::Expr sin_of_turns(Halide::Expr turns) {
    using namespace Halide;
    const Expr quarter_turn(uint32_t(1) << 30), sign_bit(uint32_t(1) << 31);
    Expr sign = (turns + quarter_turn) & sign_bit;        // an odd number of half turns
    Expr rest = reinterpret<int32_t>(turns << 1) >> 1;    // turns − half turns, in [−2^30, 2^30)
    Expr r = cast<float>(rest) * 1.4629180792671596e-09f;  // 2π / 2^32
    Expr r2 = r * r;
    Expr poly = -0.16666659712791443f +
                r2 * (0.00833306647837162f + r2 * (-0.00019809602235909551f + r2 * 2.6057803097501164e-06f));
    Expr value = r + r * r2 * poly;
    return reinterpret<float>(reinterpret<uint32_t>(value) ^ sign);
}

// The turn of `position` (Int(32)) at a frequency of Q turns per position, as sin_of_turns takes
// it: Q is a 0.64 fixed-point fraction, passed as two int32 words (runtime: fixed_point_turns),
// q_high = hi + [lo ≥ 2^31] and q_low = lo read as signed. The high word of p·Q mod 2^64 is then
// p·q_high + p·q_low / 2^32 mod 2^32, in 32-bit lanes and without float64: the first term wraps
// exactly in integers; the second, the carry (|p·q_low / 2^32| ≤ 2^30), is one float32 product
// (three roundings of 2^−24 relative), so the turn is within 2^−31 + 1.5·2^−56·|p| turn of p·Q:
// ~6e−9 rad for |p| < 2^24, 2.8e−7 rad at |p| = 2^31, about float64's own rounding of p·ω there.
// An exact carry takes a 32×32→64-bit product, which AVX-512 makes of two half-width multiplies
// and five shuffles (sin-only's loop: 27 vector instructions against 22): on the AMD EPYC the
// sin-only and sinusoid x + PE of [1, 256, 1024] (in cache) took 108 and 85 µs with it, 90 and
// 77 µs so; of [8, 8192, 1024], 19.1 and 16.7 against 18.1 and 15.7 ms (alternated runs).
// Unsigned, so that it wraps.
inline Halide::Expr fixed_point_turn(const Halide::Expr &position, const Halide::Expr &q_high, const Halide::Expr &q_low) {
    using namespace Halide;
    Expr carry = cast<int32_t>(cast<float>(position) * 0x1p-32f * cast<float>(q_low));
    // A no-op max: Halide folds uint32(int32(f)) into uint32(f), which differs for a negative f.
    return cast<uint32_t>(position) * cast<uint32_t>(q_high) + cast<uint32_t>(max(carry, -(1 << 30)));
}

// (sin, cos)(2π·turns/2^32) as float32 for a 0.32 fixed-point turn (UInt(32)), exact at quarter
// turns (cos 0 = 1, which one odd polynomial over a half turn misses by an ulp): the nearest
// quarter turn is taken out and the rest, |r| ≤ π/4, goes through sin_cos_of_quadrant.
inline Halide::Tuple sin_cos_of_turns(const Halide::Expr &turns) {
    using namespace Halide;
    Expr quadrant = (turns + Expr(uint32_t(1) << 29)) >> 30;
    Expr rest = reinterpret<int32_t>(turns - (quadrant << 30));  // in [−2^29, 2^29)
    return sin_cos_of_quadrant(cast<float>(rest) * 1.4629180792671596e-09f, quadrant);  // 2π / 2^32
}

// (sin, cos) of a + b from those of a and of b.
inline Halide::Tuple sin_cos_of_sum(const Halide::Tuple &a, const Halide::Tuple &b) {
    return {a[0] * b[1] + a[1] * b[0], a[1] * b[1] - a[0] * b[0]};
}

// A position p = (high_first + high)·2^low_bits + low, so that sin/cos(p·ω) are the angle sum of
// row `high` of a table over the high parts and row `low` of one over the low parts: two loads and
// two FMAs per value where evaluating the sine costs ~20 vector operations (on the Intel Xeon, the
// sinusoid and sin-only tables 1.40x and 1.54x faster for sequential positions, 1.2x for random
// ones; their time then sits on the tables' loads). The runtime
// picks low_bits ≈ half the bits of the positions' range, or high_rows = 0 (evaluate every value)
// where the tables would not be small, and splits each position itself (OrderedRows). The turns
// of the parts add up exactly (fixed_point_turn); each table value is within 2 ulp, so a sum is
// within ~3e-7 of the float64 reference typically.
// With fine_bits > 0 the low part is split again, low = coarse·2^fine_bits + fine, into a table of
// coarse parts and one of fine parts: three tables of ~2^(bits/3) rows instead of two of
// ~2^(bits/2), for rows in their own order, which read the tables at random and so need them in a
// core's L2 beside the streams of x and out (runtime/src/encodings.cpp), at two more loads and
// four more FMAs per value.
struct PositionSplit {
    Halide::Expr low_bits, high_first, high_rows, fine_bits;  // scalar int32 inputs

    // The tables, over (channel, table row).
    struct Tables {
        Halide::Func high{"high_table"}, low{"low_table"}, fine{"fine_table"};
        std::vector<Halide::Func> all() const { return {high, low, fine}; }
    };

    Halide::Expr uses_tables() const { return high_rows > 0; }
    Halide::Expr uses_fine_table() const { return fine_bits > 0; }  // (tells only where uses_tables())
    // The ways a kernel reads (sin, cos), as nested conditions to specialize on
    // (schedules/specialize.h): from tables, and then from three of them.
    std::vector<Halide::Expr> paths() const { return {uses_tables(), uses_fine_table()}; }

    // The position of parts (high, low); without tables (low_bits = high_first = 0), high itself.
    // It fits in int32: (high_first + high)·2^low_bits is p rounded down to a multiple of 2^low_bits.
    Halide::Expr position(const Halide::Expr &high, const Halide::Expr &low) const {
        return (high_first + high) * (1 << low_bits) + low;
    }

    // Defines the tables over (channel c, table row) from sin_cos(position), the (sin, cos) of
    // position·ω_c, and returns (sin, cos) of the position of parts (high, low) read from them
    // (clamped, which also bounds the tables for Halide).
    Halide::Tuple from_tables(const Tables &tables, const Halide::Var &c, const Halide::Var &row, const Halide::Expr &high,
                              const Halide::Expr &low, const std::function<Halide::Tuple(Halide::Expr)> &sin_cos) const {
        using Halide::clamp;
        tables.high(c, row) = sin_cos(position(row, 0));
        tables.low(c, row) = sin_cos(row * (1 << fine_bits));
        tables.fine(c, row) = sin_cos(row);
        Halide::Expr fine_mask = (1 << fine_bits) - 1;
        Halide::Tuple coarse = tables.low(c, clamp(low >> fine_bits, 0, (1 << (low_bits - fine_bits)) - 1));
        Halide::Tuple low_part = Halide::select(uses_fine_table(), sin_cos_of_sum(coarse, tables.fine(c, clamp(low & fine_mask, 0, fine_mask))), coarse);
        return sin_cos_of_sum(tables.high(c, clamp(high, 0, Halide::max(high_rows, 1) - 1)), low_part);
    }
};

// The output rows of an encoding of positions [B, S] in the order the runtime gives them, each
// with two values of its own: rows(·, n) = (s, b, value 0, value 1) of the n-th row computed. The
// trig encodings' values are their position's parts, (high, low) (PositionSplit; high = p and
// low = 0 without tables); complex-order's, its token's word and position, sorted by word (its
// tables are then read in address order, each row once where it repeats). Sorted by position where a table form
// (no x) reads tables, so that consecutive rows read the same table rows, from L1 (the sinusoid and sin-only
// tables of [8, 8192, 1024] with random positions 1.21x and 1.37x faster than in the rows' own
// order, alternated call by call on the Intel Xeon); the rows' own order otherwise. Given, not
// derived from a row number and the positions (a chain of four divisions and a gather before
// each row's first load): with that and the runtime's sort without divisions, the sin-only table
// went from 79% to 88% of the copy stream and its x + PE from 77% to 80% (61 pairs each, Intel Xeon).
// The kernel writes the k-th row where it belongs (write()), each row once. GPU kernels take the
// rows in their own order (the runtime sorts them for CPU calls only) and write out purely, which
// a scatter over k cannot do: out is then never read, so a caller's device buffer needs no host
// side and a host one is not uploaded before the call.
struct OrderedRows {
    OrderedRows(Halide::Func rows, Halide::Expr S, Halide::Expr B) : rows(rows), S(S), B(B), k(0, S * B, "k") {}

    Halide::Func rows;
    Halide::Expr S, B;
    Halide::RDom k;  // over the rows, in order

    // Clamped: they address the output.
    Halide::Expr s_of(const Halide::Expr &n) const { return Halide::clamp(rows(0, n), 0, S - 1); }
    Halide::Expr b_of(const Halide::Expr &n) const { return Halide::clamp(rows(1, n), 0, B - 1); }
    Halide::Expr value_of(int which, const Halide::Expr &n) const { return rows(2 + which, n); }
    Halide::Expr high_of(const Halide::Expr &n) const { return value_of(0, n); }
    Halide::Expr low_of(const Halide::Expr &n) const { return value_of(1, n); }

    // Defines out(channels…, s, b) as value_of_row(n) (an Expr, or a Tuple for a Tuple out, of the
    // channels) in the n-th row: an undefined pure definition, then the update over n = k; or, with
    // the rows in their own order (`in_order`: n = b·S + s), the pure definition alone.
    void write(Halide::Func out, const std::vector<Halide::Var> &channels,
               const std::function<Halide::Tuple(Halide::Expr)> &value_of_row, bool in_order) const {
        Halide::Var s("s"), b("b");
        std::vector<Halide::Var> pure = channels;
        pure.insert(pure.end(), {s, b});
        if (in_order) {
            // (S ≥ 1 where there are rows; as max(S, 1), the row is not simplified against the
            // fused loop of (s, b) into a select on S == 0, a bool SPIR-V cannot pass to a kernel.)
            out(pure) = value_of_row(b * Halide::max(S, 1) + s);
            return;
        }
        Halide::Tuple value = value_of_row(k);
        std::vector<Halide::Expr> undefined;
        for (const Halide::Expr &e : value.as_vector()) undefined.push_back(Halide::undef(e.type()));
        out(pure) = Halide::Tuple(undefined);
        std::vector<Halide::Expr> at(channels.begin(), channels.end());
        at.insert(at.end(), {s_of(k), b_of(k)});
        out(at) = value;
    }
    void write(Halide::Func out, const std::vector<Halide::Var> &channels,
               const std::function<Halide::Expr(Halide::Expr)> &value_of_row, bool in_order) const {
        write(out, channels, [&](Halide::Expr n) { return Halide::Tuple(std::vector<Halide::Expr>{value_of_row(n)}); }, in_order);
    }

    // The input's shape as the runtime passes it (dense [n, 4]), and its estimates.
    template <typename RowsInput>
    static void constrain(RowsInput &input) {
        input.dim(0).set_bounds(0, 4).dim(1).set_stride(4);
        input.set_estimates({{0, 4}, {0, 4096 * 8}});
    }
};

}  // namespace posattn
