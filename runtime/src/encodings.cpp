// The absolute encodings: validate → select → call. Nothing is written before validation passes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;
using detail::positions_2d;
using detail::with_leading_batch;

namespace {

// The view of t's last channel (innermost axis) alone.
Tensor last_channel(const Tensor &t) { return detail::channels(t, t.shape.back() - 1, t.shape.back()); }

// Shapes shared by the encodings: positions [B, S] or [S]/[N] (host memory: the runtime reads
// them); x [B, S, D] and out [..., D], host memory or device buffers of a cuda/opencl call, of one
// storage dtype (x's, or out's for a table), which it returns.
DType check_encoding(const Checker &check, const Tensor *x, const Tensor &positions, const Tensor &out, const CallOptions &call) {
    check.tensor(positions, "positions", DType::int32, {1, 2});
    const DType dtype = check.storage(x ? *x : out, x ? "x" : "out");
    if (x) {
        check.host_or_device(*x, "x", dtype, {3}, call);
        check.host_or_device(out, "out", dtype, {3}, call);
        check.leading_dims(out, "out", *x, "x");
        check.same_or_disjoint(out, "out", *x, "x");
        size_t r = positions.shape.size();
        check.dim(positions, "positions", r - 1, x->shape[1], "S, x's dimension 1");
        if (r == 2) check.dim(positions, "positions", 0, x->shape[0], "B, x's dimension 0");
    } else {
        check.host_or_device(out, "out", dtype, {positions.shape.size() + 1}, call);
        check.leading_dims(out, "out", positions, "positions");
    }
    check.output(out, "out");
    check.disjoint(out, "out", positions, "positions");
    check.row_count(x ? x->shape[0] * x->shape[1] : positions.numel(), "positions");
    return dtype;
}

// One call of an elementwise encoding kernel over out [B, S, D] (or [N, D]), with x for a fused
// call and the positions as its input (null for sin-only, which reads its rows instead); `bind`
// adds the kernel's own arguments.
template <typename Bind>
void run_elementwise(const std::string &function, const Tensor *x, const Tensor *positions, const Tensor &out,
                     const CallOptions &call, Bind bind) {
    Tensor out3 = with_leading_batch(out);
    HalideView out_view(out3, true);
    KernelCall kernel(function, call);
    kernel.arg("out", out_view);
    std::optional<HalideView> pos_view, x_view;
    if (positions) kernel.arg("positions", pos_view.emplace(positions_2d(*positions, out3.shape[0]), false));
    if (x) kernel.arg("x", x_view.emplace(*x, false));
    bind(kernel);
    kernel.run();
    out_view.finish();
}

// Calls fn(b, s, position) for every position s of every sequence b of positions_2d(positions, batch).
template <typename Fn>
void for_each_position(const Tensor &positions, int64_t batch, Fn fn) {
    Tensor p = positions_2d(positions, batch);
    const int32_t *data = static_cast<const int32_t *>(p.data);
    const int64_t B = p.shape[0], S = p.shape[1], stride_b = p.stride(0), stride_s = p.stride(1);
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++) fn(b, s, data[b * stride_b + s * stride_s]);
}

// The n frequencies omega(i) as the kernels take them (detail::fixed_point_turns), kept per
// thread by `key`, so that a repeated call computes neither the pows nor their turns.
template <typename Key, typename Omega>
std::vector<int32_t> kept_fixed_point_turns(const Key &key, int64_t n, Omega omega) {
    return detail::kept_per_thread(key, [&] {
        std::vector<double> omegas(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; i++) omegas[size_t(i)] = omega(i);
        return detail::fixed_point_turns(omegas);
    });
}

// How a trig encoding kernel reads sin/cos(p·ω) (generators/trig.h PositionSplit): from tables
// over the high and the low bits of the positions where those tables are small, at most one table
// row per kTableRowsPerOutputRow rows of the output (a table row costs one or two sines per
// channel, as much as an output row evaluated directly or twice that) and at most table_bytes()
// in all; else, with high_rows 0, evaluated per element. low_bits takes half the bits of the
// positions' range, which makes the two tables about equally long. `table_row_bytes`: one row of
// one table.
// Where a table form (no x) reads tables, it computes the rows sorted by position
// (generators/trig.h OrderedRows), so that consecutive rows read the same table rows; otherwise
// in their own order. The x + PE forms keep their own order: they would read x's rows in position
// order too, which cost as much as the tables' reuse gained (sinusoid x + PE 0.90x, sin-only
// 1.01x, on the benchmark's random positions).
constexpr int64_t kTableRowsPerOutputRow = 8;

// Sorted rows reuse each table row from L1: tables up to 2 MiB (measured faster than evaluating
// on the Intel Xeon up to 1.5 MiB; on the AMD EPYC the sinusoid's 768 KiB tables 1.63x, sin-only's
// 1.11x). Rows in their own order read the tables at random and need them to stay in a core's
// L2 beside the streams of x and out: at most half of it (on the AMD EPYC, 1 MiB L2, the same
// 768 KiB tables ran 0.91x and 0.86x as fast as evaluating every value; on the Intel Xeon, 2 MiB,
// faster: trig.h PositionSplit).
int64_t table_bytes(bool sorted) { return sorted ? int64_t(2) << 20 : detail::half_l2_bytes(); }

// Whether a trig kernel computes its rows sorted by position: the table forms (no x) on CPUs.
// GPU kernels take the rows in their own order (generators/trig.h OrderedRows).
bool sorted_rows(const Tensor *x, const CallOptions &call) { return !x && call.device == "cpu"; }

class PositionTables {
public:
    PositionTables(const Tensor &positions, int64_t batch, int64_t table_row_bytes, bool by_position) {
        int64_t rows = positions_2d(positions, batch).numel();
        if (rows > 0) {
            int32_t lowest = std::numeric_limits<int32_t>::max(), highest = std::numeric_limits<int32_t>::min();
            for_each_position(positions, batch, [&](int64_t, int64_t, int32_t p) {
                lowest = std::min(lowest, p);
                highest = std::max(highest, p);
            });
            // Two tables of about half the positions' bits each; for rows in their own order, where
            // those would not fit, three of about a third (trig.h PositionSplit, fine_bits).
            const double bits = std::log2(double(int64_t(highest) - lowest + 1));
            auto split_fits = [&](int32_t low_bits, int32_t fine_bits) {
                low_bits_ = low_bits, fine_bits_ = fine_bits;
                // Arithmetic shifts: floor(p / 2^low_bits).
                high_first_ = lowest >> low_bits_, high_rows_ = (highest >> low_bits_) - high_first_ + 1;
                int64_t table_rows = high_rows_ + (int64_t(1) << (low_bits_ - fine_bits_)) + (fine_bits_ ? int64_t(1) << fine_bits_ : 0);
                return table_rows * kTableRowsPerOutputRow <= rows && table_rows * table_row_bytes <= table_bytes(by_position);
            };
            if (!split_fits(int32_t(std::lround(bits / 2)), 0) &&
                (by_position || !split_fits(int32_t(std::lround(bits * 2 / 3)), int32_t(std::lround(bits / 3)))))
                low_bits_ = high_first_ = high_rows_ = fine_bits_ = 0;
        }
        // Every row in its own order; with the number of rows of each part where they get sorted
        // by position: stably by the low part, then by the high part (no gathers, no divisions:
        // the sin-only table of [8, 8192, 1024] spent a tenth of its call here single-threaded).
        const bool sort = high_rows_ && by_position;
        std::vector<int64_t> low_starts(sort ? (size_t(1) << low_bits_) + 1 : 0), high_starts(sort ? size_t(high_rows_) + 1 : 0);
        rows_.resize(size_t(rows));
        const int32_t low_mask = (1 << low_bits_) - 1;
        size_t n = 0;
        for_each_position(positions, batch, [&](int64_t b, int64_t s, int32_t p) {
            Row &row = rows_[n++];
            row = {int32_t(s), int32_t(b), (p >> low_bits_) - high_first_, p & low_mask};
            if (sort) low_starts[size_t(row.low) + 1]++, high_starts[size_t(row.high) + 1]++;
        });
        if (sort) {
            std::vector<Row> by_low(rows_.size());
            counting_sort(rows_, low_starts, &Row::low, by_low);
            counting_sort(by_low, high_starts, &Row::high, rows_);
        }
        static_assert(sizeof(Row) == 4 * sizeof(int32_t), "rows are [rows, 4] int32");
        rows_view_.emplace(Tensor{rows_.data(), DType::int32, {rows, 4}, {}}, false);
    }

    void bind(KernelCall &kernel) {
        kernel.arg("low_bits", low_bits_).arg("high_first", high_first_).arg("high_rows", high_rows_).arg("fine_bits", fine_bits_);
        kernel.arg("rows", *rows_view_);
    }

private:
    // A row as the kernel reads it (generators/trig.h OrderedRows): its place and its position's parts.
    struct Row {
        int32_t s, b, high, low;
    };

    // Copies `from` into `to` stably ordered by row.*key, first[k + 1] being the number of rows whose key is k.
    static void counting_sort(const std::vector<Row> &from, std::vector<int64_t> &first, int32_t Row::*key, std::vector<Row> &to) {
        for (size_t k = 1; k < first.size(); k++) first[k] += first[k - 1];
        for (const Row &row : from) to[size_t(first[size_t(row.*key)]++)] = row;
    }

    int32_t low_bits_ = 0, high_first_ = 0, high_rows_ = 0, fine_bits_ = 0;
    std::vector<Row> rows_;  // in the order the kernel computes them
    std::optional<HalideView> rows_view_;
};

void run_sinusoidal(const char *api, const Tensor *x, const Tensor &positions, const Tensor &out,
                    const SinusoidalOptions &o, const CallOptions &call) {
    Checker check(api);
    const DType dtype = check_encoding(check, x, positions, out, call);
    check.positive_normal(o.base, "base");
    const std::string function = detail::typed(x ? "posattn_sinusoidal_add_f32" : "posattn_sinusoidal_f32", dtype);
    if (detail::nothing_to_compute(out, function, call)) return;

    int64_t D = out.shape.back(), pairs = D / 2;
    double exponent_step = o.convention == Convention::vaswani ? (pairs ? 1.0 / double(pairs) : 0.0)
                                                               : 1.0 / double(std::max<int64_t>(pairs - 1, 1));
    Tensor out3 = with_leading_batch(out);
    if (pairs) {
        // The pair views cover channels 0 … 2·pairs−1 only, so a packed copy never carries the odd
        // last channel (written below) back over the caller's.
        std::vector<int32_t> turns = kept_fixed_point_turns(std::tuple(pairs, o.base, exponent_step), pairs,
                                                            [&](int64_t i) { return std::pow(o.base, -double(i) * exponent_step); });
        HalideView turns_view(Tensor{turns.data(), DType::int32, {2, pairs}, {}}, false);
        HalideView out_view(detail::channels(out3, 0, 2 * pairs), true, o.layout);
        KernelCall kernel(function, call);
        kernel.arg("turns", turns_view).arg("out", out_view);
        PositionTables tables(positions, out3.shape[0], pairs * 2 * int64_t(sizeof(float)), sorted_rows(x, call));  // (sin, cos) per pair
        tables.bind(kernel);
        std::optional<HalideView> x_view;
        if (x) kernel.arg("x", x_view.emplace(detail::channels(*x, 0, 2 * pairs), false, o.layout));
        kernel.run();
        out_view.finish();
    }
    if (D % 2) {  // the last channel of an odd d is zero (contract §1): out = x there, or 0
        // (A device handle cannot express a view of one channel: a device out is written back whole
        // from a host image, its other channels as the kernel left them.)
        detail::HostImage out_image(out3, call, out.memory == Memory::device);
        Tensor last = last_channel(out_image.tensor());
        if (x) detail::copy_strided(last_channel(detail::HostImage(*x, call, true).tensor()), last);
        else detail::fill_zero(last);
        out_image.commit();
    }
}

void run_learned(const char *api, const Tensor *x, const Tensor &table, const Tensor &positions, const Tensor &out,
                 int64_t offset, const CallOptions &call) {
    Checker check(api);
    const DType dtype = check_encoding(check, x, positions, out, call);
    check.host_or_device(table, "table", dtype, {2}, call);
    check.dim(out, "out", out.shape.size() - 1, table.shape[1], "D, table's dimension 1");
    check.disjoint(out, "out", table, "table");
    int64_t V = table.shape[0];
    if (offset < INT32_MIN || offset > INT32_MAX) check.fail("argument 'offset' is " + std::to_string(offset) + "; expected a 32-bit value");
    // Every row index positions + offset must lie in the table: checked before any work.
    const int32_t *p = static_cast<const int32_t *>(positions.data);
    detail::for_each_offset<1>(positions.shape, {&positions}, [&](const std::array<int64_t, 1> &o) {
        int64_t row = int64_t(p[o[0]]) + offset;
        if (row < 0 || row >= V)
            check.fail("argument 'positions' holds " + std::to_string(p[o[0]]) + ", and with offset " +
                       std::to_string(offset) + " that is row " + std::to_string(row) + " of a table with " +
                       std::to_string(V) + " rows; expected 0 <= position + offset < " + std::to_string(V));
    });
    const std::string function = detail::typed(x ? "posattn_learned_add_f32" : "posattn_learned_f32", dtype);
    if (detail::nothing_to_compute(out, function, call)) return;

    HalideView table_view(table, false);
    run_elementwise(function, x, &positions, out, call,
                    [&](KernelCall &kernel) { kernel.arg("table", table_view).arg("offset", int32_t(offset)); });
}


// The simple encodings (contract §3): checks shared by every kind, then the kind's kernel.
// (dtype: check_encoding's)
std::string simple_function(const char *kind, const Tensor *x, DType dtype) {
    return detail::typed(std::string("posattn_") + kind + (x ? "_add_f32" : "_f32"), dtype);
}

template <typename Bind>
void run_simple(const char *kind, const Tensor *x, const Tensor *positions, const Tensor &out, DType dtype,
                const CallOptions &call, Bind bind) {
    const std::string function = simple_function(kind, x, dtype);
    if (detail::nothing_to_compute(out, function, call)) return;
    run_elementwise(function, x, positions, out, call, bind);
}

void run_integer(const char *api, const Tensor *x, const Tensor &positions, const Tensor &out, const CallOptions &call) {
    const DType dtype = check_encoding(Checker(api), x, positions, out, call);
    run_simple("integer", x, &positions, out, dtype, call, [](KernelCall &) {});
}

void run_normalized(const char *api, const Tensor *x, const Tensor &positions, const Tensor &out,
                    const NormalizedOptions &o, const CallOptions &call) {
    Checker check(api);
    const DType dtype = check_encoding(check, x, positions, out, call);
    if (o.length < 0) check.fail("argument 'length' is " + std::to_string(o.length) + "; expected length >= 1, or 0 for max(positions) + 1 per sequence");
    // L per sequence: the given length, or the sequence's largest position + 1.
    int64_t batch = with_leading_batch(out).shape[0];
    std::vector<int64_t> lengths(size_t(batch), o.length);
    if (o.length == 0) {
        std::fill(lengths.begin(), lengths.end(), INT64_MIN);
        for_each_position(positions, batch, [&](int64_t b, int64_t, int32_t p) { lengths[b] = std::max(lengths[b], int64_t(p) + 1); });
        for (int64_t b = 0; b < batch && positions.numel(); b++)
            if (lengths[b] < 1)
                check.fail("argument 'positions' has a largest position of " + std::to_string(lengths[b] - 1) +
                           " in sequence " + std::to_string(b) + "; expected one >= 0 when no length is given");
    }
    std::vector<double> inv_length(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; b++) {
        double L = double(lengths[b]);
        inv_length[b] = o.mode == NormalizedMode::length ? 1.0 / L : (L > 1 ? 1.0 / (L - 1) : 0.0);
    }
    HalideView inv_view(Tensor{inv_length.data(), DType::float64, {batch}, {}}, false);
    run_simple("normalized", x, &positions, out, dtype, call, [&](KernelCall &k) { k.arg("inv_length", inv_view); });
}

void run_binary(const char *api, const Tensor *x, const Tensor &positions, const Tensor &out, const BinaryOptions &o,
                const CallOptions &call) {
    Checker check(api);
    const DType dtype = check_encoding(check, x, positions, out, call);
    int64_t d = out.shape.back();
    // p must fit in d bits (contract §3); positions are int32, so d >= 31 only excludes negatives.
    int64_t limit = d >= 31 ? int64_t(1) << 31 : int64_t(1) << d;
    for_each_position(positions, 1, [&](int64_t, int64_t, int32_t p) {
        if (p < 0 || p >= limit)
            check.fail("argument 'positions' holds " + std::to_string(p) + "; expected 0 <= position < 2^d = " +
                       (d >= 63 ? "2^" + std::to_string(d) : std::to_string(int64_t(1) << d)) + " (d = " +
                       std::to_string(d) + " bits)");
    });
    run_simple("binary", x, &positions, out, dtype, call,
               [&](KernelCall &k) { k.arg("signed_bits", o.signed_values).arg("msb_first", o.msb_first); });
}

void run_sin_only(const char *api, const Tensor *x, const Tensor &positions, const Tensor &out, double base,
                  const CallOptions &call) {
    Checker check(api);
    const DType dtype = check_encoding(check, x, positions, out, call);
    check.positive_normal(base, "base");
    // (before the frequencies, which are as many as the channels of an empty out)
    const std::string function = simple_function("sin_only", x, dtype);
    if (detail::nothing_to_compute(out, function, call)) return;
    int64_t d = out.shape.back();
    std::vector<int32_t> turns =
        kept_fixed_point_turns(std::pair(base, d), d, [&](int64_t c) { return std::pow(base, -double(c) / double(d)); });
    HalideView turns_view(Tensor{turns.data(), DType::int32, {2, d}, {}}, false);
    PositionTables tables(positions, with_leading_batch(out).shape[0], d * 2 * int64_t(sizeof(float)), sorted_rows(x, call));  // (sin, cos) per channel
    run_elementwise(function, x, nullptr, out, call, [&](KernelCall &k) {
        k.arg("turns", turns_view);
        tables.bind(k);
    });
}

}  // namespace

namespace detail {
namespace {

// frac(ω/2π) as a 0.64 fixed-point fraction, truncated: ω/2π = p + e exactly enough in double-double
// (1/2π split in two doubles, the product's rounding error recovered by an FMA), with no long
// double, which is a double on iOS and armeabi-v7a. Over 2·10^6 ω in [2^-40, 2^12] it equals a
// 113-bit (__float128) computation bit for bit, where an x87 long double product was off by up to
// 527 units at large ω (AMD EPYC, 2026-12-07, a standalone check).
uint64_t fraction_of_turn(double omega) {
    const double hi = 0x1.45f306dc9c883p-3, lo = -0x1.6b01ec5417056p-57;  // 1/2π = hi + lo
    const double p = omega * hi, e = std::fma(omega, hi, -p) + omega * lo;
    const double scaled = std::ldexp(p - std::floor(p), 64), whole = std::floor(scaled);  // (both exact)
    return uint64_t(whole) + uint64_t(int64_t(std::floor(scaled - whole + std::ldexp(e, 64))));
}

}  // namespace

std::vector<int32_t> fixed_point_turns(const std::vector<double> &omegas) {
    return kept_per_thread(omegas, [&] {
        const size_t n = omegas.size();
        std::vector<int32_t> words(2 * n);
        for (size_t i = 0; i < n; i++) {
            const uint64_t q = fraction_of_turn(omegas[i]);
            auto lo = uint32_t(q), hi = uint32_t(q >> 32) + (lo >> 31);
            words[i] = int32_t(hi);
            words[n + i] = int32_t(lo);
        }
        return words;
    });
}

}  // namespace detail

void sinusoidal(const Tensor &positions, const Tensor &out, const SinusoidalOptions &options, const CallOptions &call) {
    run_sinusoidal("sinusoidal", nullptr, positions, out, options, call);
}

void sinusoidal_add(const Tensor &x, const Tensor &positions, const Tensor &out, const SinusoidalOptions &options,
                    const CallOptions &call) {
    run_sinusoidal("sinusoidal_add", &x, positions, out, options, call);
}

void learned(const Tensor &table, const Tensor &positions, const Tensor &out, int64_t offset, const CallOptions &call) {
    run_learned("learned", nullptr, table, positions, out, offset, call);
}

void learned_add(const Tensor &x, const Tensor &table, const Tensor &positions, const Tensor &out, int64_t offset,
                 const CallOptions &call) {
    run_learned("learned_add", &x, table, positions, out, offset, call);
}

void integer(const Tensor &positions, const Tensor &out, const CallOptions &call) {
    run_integer("integer", nullptr, positions, out, call);
}

void integer_add(const Tensor &x, const Tensor &positions, const Tensor &out, const CallOptions &call) {
    run_integer("integer_add", &x, positions, out, call);
}

void normalized(const Tensor &positions, const Tensor &out, const NormalizedOptions &options, const CallOptions &call) {
    run_normalized("normalized", nullptr, positions, out, options, call);
}

void normalized_add(const Tensor &x, const Tensor &positions, const Tensor &out, const NormalizedOptions &options,
                    const CallOptions &call) {
    run_normalized("normalized_add", &x, positions, out, options, call);
}

void binary(const Tensor &positions, const Tensor &out, const BinaryOptions &options, const CallOptions &call) {
    run_binary("binary", nullptr, positions, out, options, call);
}

void binary_add(const Tensor &x, const Tensor &positions, const Tensor &out, const BinaryOptions &options,
                const CallOptions &call) {
    run_binary("binary_add", &x, positions, out, options, call);
}

void sin_only(const Tensor &positions, const Tensor &out, double base, const CallOptions &call) {
    run_sin_only("sin_only", nullptr, positions, out, base, call);
}

void sin_only_add(const Tensor &x, const Tensor &positions, const Tensor &out, double base, const CallOptions &call) {
    run_sin_only("sin_only_add", &x, positions, out, base, call);
}

}  // namespace posattn
