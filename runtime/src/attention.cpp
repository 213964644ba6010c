// Fused attention: validate → select → call. Nothing is written before validation passes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <set>
#include <unordered_map>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

namespace {

// float32 x as int64, saturated at ±2^62 (and 2^62 for NaN): a bucket of huge parameters, which the
// callers clamp to their tables, without the undefined behaviour of converting an out-of-range float.
int64_t saturated(float x) {
    constexpr float limit = 0x1p62f;
    return x < limit ? (x > -limit ? int64_t(x) : -(int64_t(1) << 62)) : int64_t(1) << 62;
}

}  // namespace

int64_t t5_bucket(int64_t rel, bool bidirectional, int64_t num_buckets, int64_t max_distance) {
    int64_t max_exact = (bidirectional ? num_buckets / 2 : num_buckets) / 2;
    if (max_exact < 1 || max_distance <= max_exact)
        Checker("t5_bucket").fail("arguments 'num_buckets' = " + std::to_string(num_buckets) + " and 'max_distance' = " +
                                  std::to_string(max_distance) +
                                  "; expected at least 4 buckets (2 one-directional) and max_distance > num_buckets/4 "
                                  "(/2 one-directional)");
    if (rel == INT64_MIN) Checker("t5_bucket").fail("argument 'rel' holds -2^63; expected a value > -2^63");
    int64_t bucket = 0, n = rel < 0 ? -rel : 0;
    if (bidirectional) {
        num_buckets /= 2;
        bucket = rel > 0 ? num_buckets : 0;
        n = rel < 0 ? -rel : rel;
    }
    if (n < max_exact) return bucket + n;
    // float32 throughout, as torch: log(n / max_exact) / log(max_distance / max_exact)·(nb − max_exact).
    float ratio = float(n) / float(max_exact);
    float scaled = std::log(ratio) / float(std::log(double(max_distance) / double(max_exact))) * float(num_buckets - max_exact);
    return bucket + max_exact + std::min(saturated(scaled), num_buckets - 1 - max_exact);
}

int64_t deberta_bucket(int64_t delta, int64_t position_buckets, int64_t max_relative_positions) {
    if (position_buckets <= 0) return delta;
    int64_t mid = position_buckets / 2, max_position = max_relative_positions < 1 ? 512 : max_relative_positions;
    if (mid < 1 || max_position - 1 <= mid)
        Checker("deberta_bucket").fail("arguments 'position_buckets' = " + std::to_string(position_buckets) +
                                       " and 'max_relative_positions' = " + std::to_string(max_position) +
                                       "; expected position_buckets >= 2 and max_relative_positions - 1 > position_buckets/2");
    if (delta == INT64_MIN) Checker("deberta_bucket").fail("argument 'delta' holds -2^63; expected a value > -2^63");
    int64_t magnitude = delta < 0 ? -delta : delta;
    if (magnitude <= mid) return delta;
    // float32 throughout, as HF: ceil(log(|δ| / mid) / log((max_position − 1) / mid) · (mid − 1)) + mid.
    float ratio = float(magnitude) / float(mid);
    float span = std::log(float(double(max_position - 1) / double(mid)));
    int64_t bucket = saturated(std::ceil(std::log(ratio) / span * float(mid - 1))) + mid;
    return delta < 0 ? -bucket : bucket;
}

namespace {

// The query tile and key block of every schedule are at most this; the per-offset tables below
// are padded by it (the kernel checks its reads against their bounds).
constexpr int64_t kOffsetPadding = 4096;

// Plain attention's decode shape classes, each with the most query rows per tile (Lq, or a GQA
// group's q heads when one query is folded into rows) it runs: its query tile on CPUs
// (schedules/attention.h; tests/cases.py plain_attention_function states the same rule).
constexpr std::pair<int64_t, const char *> kDecodeClasses[] = {{1, "_decode1"}, {4, "_decode"}, {8, "_decode8"}};
#if defined(__x86_64__)
constexpr bool kX86 = true;
#else
constexpr bool kX86 = false;
#endif

// A per-offset table as attention kernels read it: entry δ + Lk − 1 for every query − key offset
// δ = i − j of rows i ∈ [0, Lq) and keys j ∈ [0, Lk), from −kOffsetPadding, with padding on both
// sides for the rows and keys that tiles compute past Lq and Lk and never use. Consecutive query
// rows read consecutive entries, so the kernel loads them as dense vectors.
template <typename T>
struct ByOffset {
    int64_t Lq, Lk;
    std::vector<T> values;
    int64_t size() const { return Lq + Lk - 1 + 2 * kOffsetPadding; }
    template <typename Fn>
    void for_each(Fn fn) const {
        for (int64_t delta = -(Lk - 1); delta <= Lq - 1; delta++) fn(delta, size_t(delta + Lk - 1 + kOffsetPadding));
    }
};

// The table rows of every offset, rebased to the rows used: [first, first + count). The padding
// repeats the rows of the first and last offsets, so the index stays monotone in the offset over
// the whole table (the kernels find a key group's rows from its two ends).
struct RowsByOffset : ByOffset<int32_t> {
    int64_t first = 0, count = 1;
};
template <typename RowOf>
RowsByOffset rows_by_offset(int64_t Lq, int64_t Lk, RowOf row_of) {
    RowsByOffset rows{{Lq, Lk, {}}};
    rows.values.assign(size_t(rows.size()), 0);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    rows.for_each([&](int64_t delta, size_t at) {
        int64_t row = row_of(delta);  // a row of a table with an int32 extent
        rows.values[at] = int32_t(row);
        lo = std::min(lo, row);
        hi = std::max(hi, row);
    });
    if (lo > hi) return rows;
    rows.first = lo, rows.count = hi - lo + 1;
    rows.for_each([&](int64_t, size_t at) { rows.values[at] -= int32_t(lo); });
    auto begin = rows.values.begin() + kOffsetPadding, end = rows.values.end() - kOffsetPadding;
    std::fill(rows.values.begin(), begin, *begin);
    std::fill(end, rows.values.end(), *(end - 1));
    return rows;
}

// A relative table [R, C] shared by every head or [Hq, R, C] (finite float32): its row count.
int64_t table_rows(const Checker &check, const Tensor &t, const char *name, int64_t Hq, int64_t C, const char *C_what) {
    check.tensor(t, name, DType::float32, {2, 3});
    size_t rank = t.shape.size();
    if (rank == 3) check.dim(t, name, 0, Hq, "Hq, q's dimension 1");
    check.dim(t, name, rank - 1, C, C_what);
    check.finite_values(t, name);
    return t.shape[rank - 2];
}
// Its rows [first, first + count) as the kernel's [Hq, count, C] (a zero head stride when shared).
Tensor head_rows(const Tensor &t, int64_t Hq, int64_t first, int64_t count) {
    bool shared = t.shape.size() == 2;
    int64_t row_stride = t.stride(shared ? 0 : 1), channel_stride = t.stride(shared ? 1 : 2);
    return Tensor{static_cast<float *>(t.data) + first * row_stride, DType::float32, {Hq, count, t.shape.back()},
                  {shared ? 0 : t.stride(0), row_stride, channel_stride}};
}

// What an encoding adds to one attention call: the kernel, its arguments, and the data they view.
struct EncodingArgs {
    std::string function = "posattn_attn_plain_f32";
    double default_scale = 0;  // 0: 1/sqrt(D)
    int64_t window = INT64_MAX;
    std::deque<std::vector<float>> floats;
    std::deque<std::vector<int32_t>> ints;
    std::deque<HalideView> views;
    std::vector<std::function<void(KernelCall &)>> bind;

    void tensor(const char *name, const Tensor &t) { bind_view(name, views.emplace_back(t, false)); }
    // A per-offset table, [offsets] or [heads, offsets], viewed from −kOffsetPadding.
    template <typename T>
    void by_offset(const char *name, ByOffset<T> &&table, std::optional<int64_t> heads = std::nullopt) {
        std::vector<T> &data = owned<T>().emplace_back(std::move(table.values));
        std::vector<int64_t> shape{table.size()};
        if (heads) shape.insert(shape.begin(), *heads);
        HalideView &v = views.emplace_back(Tensor{data.data(), std::is_same_v<T, float> ? DType::float32 : DType::int32, shape, {}}, false);
        v.buffer()->dim[0].min = int32_t(-kOffsetPadding);
        bind_view(name, v);
    }
    template <typename T>
    void scalar(const char *name, T value) {
        bind.push_back([name, value](KernelCall &k) { k.arg(name, value); });
    }

private:
    void bind_view(const char *name, HalideView &v) {
        bind.push_back([name, &v](KernelCall &k) { k.arg(name, v); });
    }
    template <typename T>
    std::deque<std::vector<T>> &owned() {
        if constexpr (std::is_same_v<T, float>) return floats; else return ints;
    }
};

struct Shape {
    int64_t B, Hq, Lq, D, Hkv, Lk, Dv;
};

// A per-batch int32 vector [B] (key lengths, key starts, query lengths), each value in [0, limit].
std::vector<int32_t> per_batch(const Checker &check, const std::optional<Tensor> &given, const char *name, const Shape &s,
                               int32_t fallback, int64_t limit, const char *limit_what) {
    std::vector<int32_t> values(size_t(s.B), fallback);
    if (!given) return values;
    check.tensor(*given, name, DType::int32, {1});
    check.dim(*given, name, 0, s.B, "B, q's dimension 0");
    for (int64_t b = 0; b < s.B; b++) {
        int32_t n = static_cast<const int32_t *>(given->data)[b * given->stride(0)];
        if (n < 0 || n > limit)
            check.fail(std::string("argument '") + name + "' holds " + std::to_string(n) + " at batch " + std::to_string(b) +
                       "; expected 0 <= " + name + "[b] <= " + limit_what + " = " + std::to_string(limit));
        values[size_t(b)] = n;
    }
    return values;
}

// A mask or bias as the kernel reads it, [B, Hq, Lq, Lk]: numpy broadcasting from rank 2 to 4,
// each dimension 1 (a zero stride) or the full extent. A float32 bias may be a device buffer.
Tensor broadcast(const Checker &check, const Tensor &t, const char *name, DType dtype, const Shape &s, const CallOptions &call) {
    if (dtype == DType::float32) check.host_or_device(t, name, dtype, {2, 3, 4}, call);
    else check.tensor(t, name, dtype, {2, 3, 4});
    const std::vector<int64_t> full{s.B, s.Hq, s.Lq, s.Lk};
    Tensor view{t.data, dtype, full, {0, 0, 0, 0}, t.memory};
    if (t.memory == Memory::device && t.shape.back() != s.Lk)
        check.fail(std::string("argument '") + name + "' is device memory of shape " + shape_string(t.shape) +
                   "; expected its last dimension to be Lk = " + std::to_string(s.Lk) + " (a broadcast of keys is host memory only)");
    const size_t skipped = 4 - t.shape.size();
    for (size_t axis = skipped; axis < 4; axis++) {
        int64_t extent = t.shape[axis - skipped];
        if (extent != 1 && extent != full[axis])
            check.fail(std::string("argument '") + name + "' has shape " + shape_string(t.shape) +
                       "; expected it to broadcast to [B, Hq, Lq, Lk] = " + shape_string(full) + " (each dimension 1 or the full extent)");
        if (extent != 1) view.strides[axis] = t.stride(axis - skipped);
    }
    return view;
}

// Element (b, h, i, j) of a [B, Hq, Lq, Lk] boolean mask view.
bool mask_byte(const Tensor &mask, int64_t b, int64_t h, int64_t i, int64_t j) {
    return static_cast<const uint8_t *>(mask.data)[b * mask.strides[0] + h * mask.strides[1] + i * mask.strides[2] + j * mask.strides[3]];
}

// The keys of each segment id of one batch's k_segments: [first, end) of its first and last key,
// and whether every id's keys are one run.
struct SegmentRuns {
    std::unordered_map<int32_t, std::pair<int64_t, int64_t>> keys;
    bool contiguous = true;
};
SegmentRuns segment_runs(const Tensor &k_segments, int64_t b, int64_t Lk) {
    SegmentRuns runs;
    for (int64_t j = 0; j < Lk; j++) {
        int32_t id = static_cast<const int32_t *>(k_segments.data)[b * k_segments.stride(0) + j * k_segments.stride(1)];
        auto [at, fresh] = runs.keys.try_emplace(id, j, j + 1);
        if (fresh) continue;
        if (at->second.second != j) runs.contiguous = false;
        at->second.second = j + 1;
    }
    return runs;
}

// The first nonzero byte of row[from, to) (to if none), and one past the last (from if none):
// 64 bytes at a time, which compilers vectorize, as a mask's rows can be long runs of zeros.
bool any_set(const uint8_t *bytes, int64_t n) {
    uint8_t any = 0;
    for (int64_t k = 0; k < n; k++) any |= bytes[k];
    return any != 0;
}
constexpr int64_t kScanChunk = 64;
int64_t first_set(const uint8_t *row, int64_t from, int64_t to) {
    while (to - from >= kScanChunk && !any_set(row + from, kScanChunk)) from += kScanChunk;
    while (from < to && !row[from]) from++;
    return from;
}
int64_t last_set_end(const uint8_t *row, int64_t from, int64_t to) {
    while (to - from >= kScanChunk && !any_set(row + to - kScanChunk, kScanChunk)) to -= kScanChunk;
    while (to > from && !row[to - 1]) to--;
    return to;
}

// The True keys of a row of a mask within keys [first, end): from its first to one past its last,
// and whether every key between is True (the row is one run: its mask is that key range alone).
struct MaskRun {
    int64_t lo, hi;
    bool run;
};
MaskRun mask_run(const Tensor &mask, int64_t b, int64_t h, int64_t i, int64_t first, int64_t end, std::vector<uint8_t> &copy) {
    const uint8_t *row = static_cast<const uint8_t *>(mask.data) + b * mask.strides[0] + h * mask.strides[1] + i * mask.strides[2];
    if (mask.strides[3] != 1) {  // a strided row (a transposed or key-broadcast view) scanned as a copy
        copy.resize(size_t(end));
        for (int64_t j = first; j < end; j++) copy[size_t(j)] = row[j * mask.strides[3]];
        row = copy.data();
    }
    const int64_t lo = first_set(row, first, end);
    if (lo == end) return {end, first, true};  // no True key (a union over heads ignores it)
    const int64_t hi = last_set_end(row, lo, end);
    return {lo, hi, std::memchr(row + lo, 0, size_t(hi - lo)) == nullptr};
}
// Over the mask's heads (one where it broadcasts them): the union of their True keys, a run where
// every head's row is the same run.
MaskRun mask_row(const Tensor &mask, int64_t b, int64_t i, int64_t first, int64_t end, int64_t heads, std::vector<uint8_t> &copy) {
    MaskRun row{end, first, true};
    for (int64_t h = 0; h < heads; h++) {
        MaskRun head = mask_run(mask, b, h, i, first, end, copy);
        row = {std::min(row.lo, head.lo), std::max(row.hi, head.hi),
               head.run && row.run && (h == 0 || (head.lo == row.lo && head.hi == row.hi))};
    }
    return row;
}

// What each query row may see besides the causal and window limits (generators/attention.h
// KeyMasks): its keys [first, end), made from the key lengths and starts, its segment's keys and
// the query lengths, and the mask and bias where given. Segments whose keys are not one run are
// folded into the mask.
struct Visibility {
    std::vector<int32_t> first, end;  // [B, Lq], or [B] shared by every row (per_row false)
    // Laid out alike: the least first key of the rows from each on, the greatest end of the rows up
    // to it (KeyMasks::from, until: the bounds of the key blocks a tile visits).
    std::vector<int32_t> from, until;
    bool per_row = false;
    std::vector<int32_t> starts;  // [B], the first key of each batch (0 where not given)
    std::optional<Tensor> mask, bias;  // [B, Hq, Lq, Lk] views
    std::vector<uint8_t> made_mask;
    int32_t longest = 0;  // the greatest end
    int64_t widest = 0;   // the most keys of one row's range

    // Row i of batch b may see keys [first, end).
    std::pair<int64_t, int64_t> keys(int64_t b, int64_t i, int64_t Lq) const {
        size_t at = size_t(per_row ? b * Lq + i : b);
        return {first[at], end[at]};
    }
    // Whether key j in row i's range is unmasked for some head.
    bool visible(int64_t b, int64_t i, int64_t j, int64_t Hq) const {
        if (!mask) return true;
        for (int64_t h = 0; h < Hq; h++)
            if (mask_byte(*mask, b, h, i, j)) return true;
        return false;
    }
};

int32_t segment_id(const Tensor &t, int64_t b, int64_t i) {
    return static_cast<const int32_t *>(t.data)[b * t.stride(0) + i * t.stride(1)];
}

// The mask of segments some of whose keys are apart: the caller's mask (if any) and same segment.
Tensor segment_mask(const AttentionOptions &o, const std::optional<Tensor> &mask, const Shape &s, std::vector<uint8_t> &bytes) {
    const int64_t H = mask && mask->strides[1] ? s.Hq : 1;
    bytes.assign(size_t(s.B * H * s.Lq * s.Lk), 0);
    Tensor made{bytes.data(), DType::boolean, {s.B, H, s.Lq, s.Lk}, {}};
    for (int64_t b = 0; b < s.B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < s.Lq; i++) {
                int32_t id = segment_id(*o.q_segments, b, i);
                for (int64_t j = 0; j < s.Lk; j++) {
                    bool allowed = !mask || mask_byte(*mask, b, h, i, j);
                    bytes[size_t(((b * H + h) * s.Lq + i) * s.Lk + j)] = allowed && segment_id(*o.k_segments, b, j) == id;
                }
            }
    made.strides = {H * s.Lq * s.Lk, H > 1 ? s.Lq * s.Lk : 0, s.Lk, 1};
    made.shape[1] = s.Hq;
    return made;
}

Visibility visibility(const Checker &check, const AttentionOptions &o, const Shape &s, const CallOptions &call) {
    Visibility vis;
    const int32_t Lk = int32_t(s.Lk);  // (Lq + Lk <= 2^30, checked before)
    std::vector<int32_t> lengths = per_batch(check, o.key_lengths, "key_lengths", s, Lk, s.Lk, "Lk");
    vis.starts = per_batch(check, o.key_starts, "key_starts", s, 0, s.Lk, "Lk");
    std::vector<int32_t> query_lengths = per_batch(check, o.query_lengths, "query_lengths", s, int32_t(s.Lq), s.Lq, "Lq");
    if (bool(o.q_segments) != bool(o.k_segments))
        check.fail(std::string("argument '") + (o.q_segments ? "k_segments" : "q_segments") + "' is missing; expected q_segments and k_segments both or neither");
    if (o.q_segments)
        for (auto [t, name, L, L_what] : {std::tuple{&*o.q_segments, "q_segments", s.Lq, "Lq, q's dimension 2"},
                                          {&*o.k_segments, "k_segments", s.Lk, "Lk, k's dimension 2"}}) {
            check.tensor(*t, name, DType::int32, {2});
            check.dim(*t, name, 0, s.B, "B, q's dimension 0");
            check.dim(*t, name, 1, L, L_what);
        }
    if (o.mask) vis.mask = broadcast(check, *o.mask, "mask", DType::boolean, s, call);
    if (o.bias) {
        vis.bias = broadcast(check, *o.bias, "bias", DType::float32, s, call);
        if (o.check_finite) check.finite_values(*o.bias, "bias", call, true);  // −inf masks a key
    }
    vis.per_row = o.q_segments || o.query_lengths || (vis.mask && vis.mask->strides[2] != 0);
    const int64_t rows = vis.per_row ? s.Lq : 1;
    // A row's range is narrowed to its mask's True keys, so that the kernel skips the key blocks
    // outside them; a mask whose every row is one run (all True, causal, padding, a window, block
    // diagonal) is those ranges alone, and the kernel then runs without it.
    const int64_t mask_heads = vis.mask && vis.mask->strides[1] ? s.Hq : 1;
    bool mask_is_ranges = true;
    std::vector<uint8_t> copy;
    bool apart = false;
    for (int64_t b = 0; b < s.B; b++) {
        SegmentRuns runs;
        if (o.k_segments) runs = segment_runs(*o.k_segments, b, s.Lk);
        apart |= !runs.contiguous;
        for (int64_t i = 0; i < rows; i++) {
            int64_t first = vis.starts[size_t(b)], end = lengths[size_t(b)];
            if (o.q_segments) {
                auto run = runs.keys.find(segment_id(*o.q_segments, b, i));
                if (run == runs.keys.end()) end = 0;
                else first = std::max(first, run->second.first), end = std::min(end, run->second.second);
            }
            if (vis.per_row && i >= query_lengths[size_t(b)]) end = 0;
            if (vis.mask && first < end) {
                MaskRun run = mask_row(*vis.mask, b, i, first, end, mask_heads, copy);
                first = run.lo, end = run.hi, mask_is_ranges &= run.run;
            }
            if (first >= end) first = Lk, end = 0;  // no key: out of every other row's way in from and until
            vis.first.push_back(int32_t(first));
            vis.end.push_back(int32_t(end));
            vis.longest = std::max(vis.longest, int32_t(end));
            vis.widest = std::max(vis.widest, end - first);
        }
    }
    vis.from = vis.first, vis.until = vis.end;
    for (int64_t b = 0; b < s.B; b++)
        for (int64_t i = 1; i < rows; i++) {
            size_t at = size_t(b * rows + i);
            vis.until[at] = std::max(vis.until[at], vis.until[at - 1]);
            size_t back = size_t(b * rows + rows - 1 - i);
            vis.from[back] = std::min(vis.from[back], vis.from[back + 1]);
        }
    if (mask_is_ranges) vis.mask.reset();
    if (apart) vis.mask = segment_mask(o, vis.mask, s, vis.made_mask);
    return vis;
}

void alibi_args(const Checker &check, const AlibiAttention &alibi, const Shape &s, EncodingArgs &args) {
    std::vector<float> &slopes = args.floats.emplace_back();
    for (double m : check.real_vector(alibi.slopes, "alibi_slopes", s.Hq, "Hq, q's dimension 1")) slopes.push_back(float(m));
    args.function = "posattn_attn_alibi_f32";
    args.tensor("slopes", Tensor{slopes.data(), DType::float32, {s.Hq}, {}});
    args.scalar("alibi_form", int32_t(alibi.form));
}

// T5: the bias table[bucket(key − query), h] of every offset and head, bias_by_offset(δ, h).
void t5_args(const Checker &check, const T5Attention &t5, const Shape &s, bool causal, EncodingArgs &args) {
    const Tensor &table = t5.table;
    // One-directional buckets give every future key the bucket of distance 0: T5's decoder masks
    // them. Without the mask a query would see its future silently, so that is refused.
    if (!t5.bidirectional && !causal && s.Lq > 1)
        check.fail("argument 't5_bidirectional' is false (decoder buckets, which do not tell future keys apart) and "
                   "'causal' is false; expected causal = true, as in T5's decoder (or bidirectional buckets)");
    check.tensor(table, "t5_table", DType::float32, {2});
    check.dim(table, "t5_table", 1, s.Hq, "Hq, q's dimension 1");
    int64_t buckets = table.shape[0], max_exact = (t5.bidirectional ? buckets / 2 : buckets) / 2;
    if (max_exact < 1)
        check.fail("argument 't5_table' has " + std::to_string(buckets) + " buckets; expected at least " +
                   (t5.bidirectional ? "4 (bidirectional)" : "2"));
    if (t5.max_distance <= max_exact)
        check.fail("argument 't5_max_distance' is " + std::to_string(t5.max_distance) + "; expected more than " +
                   std::to_string(max_exact) + " (half the buckets of one direction)");
    check.finite_values(table, "t5_table");
    RowsByOffset bucket = rows_by_offset(s.Lq, s.Lk, [&](int64_t delta) {
        return t5_bucket(-delta - (s.Lk - s.Lq), t5.bidirectional, buckets, t5.max_distance);  // rel = j − p_i
    });
    ByOffset<float> bias{s.Lq, s.Lk, std::vector<float>(size_t(bucket.size() * s.Hq))};
    const float *values = static_cast<const float *>(table.data);
    for (int64_t h = 0; h < s.Hq; h++)
        for (int64_t o = 0; o < bucket.size(); o++)
            bias.values[size_t(h * bucket.size() + o)] =
                values[(bucket.first + bucket.values[size_t(o)]) * table.stride(0) + h * table.stride(1)];
    args.function = "posattn_attn_t5_f32";
    args.default_scale = 1.0;
    args.by_offset("bias_by_offset", std::move(bias), s.Hq);
}

// RoPE: positions as [B, L] views (defaults: keys 0 … Lk−1 counted from each batch's first valid
// key, as HF's positions from the cumulative sum of its attention mask; queries the last Lq of
// them) and the frequencies of the rotated channels.
void rope_args(const Checker &check, const RopeAttention &rope, const Shape &s, const std::vector<int32_t> &starts,
               EncodingArgs &args) {
    if (s.Lk > INT32_MAX) check.fail("argument 'k' has Lk = " + std::to_string(s.Lk) + "; expected Lk <= 2^31-1 for default positions");
    const bool shifted = std::any_of(starts.begin(), starts.end(), [](int32_t start) { return start > 0; });
    std::vector<int32_t> &defaults = args.ints.emplace_back();
    for (int64_t b = 0; b < (shifted ? s.B : 1); b++)
        for (int64_t j = 0; j < s.Lk; j++) defaults.push_back(int32_t(std::max<int64_t>(j - (shifted ? starts[size_t(b)] : 0), 0)));
    auto positions = [&](const std::optional<Tensor> &given, const char *name, int64_t L, int64_t first, const char *L_what) {
        return given ? check.positions(*given, name, s.B, L, L_what, "B, q's dimension 0")
                     : Tensor{defaults.data() + first, DType::int32, {s.B, L}, {shifted ? s.Lk : 0, 1}};
    };
    Tensor q_positions = positions(rope.q_positions, "q_positions", s.Lq, std::max<int64_t>(s.Lk - s.Lq, 0), "Lq, q's dimension 2");
    Tensor k_positions = positions(rope.k_positions, "k_positions", s.Lk, 0, "Lk, k's dimension 2");
    if (!rope.q_positions && s.Lq > s.Lk)
        check.fail("argument 'q' has Lq = " + std::to_string(s.Lq) + " > Lk = " + std::to_string(s.Lk) +
                   "; expected explicit q_positions then (the default puts queries at the last Lq key positions)");
    int64_t seq_len = rope.seq_len ? rope.seq_len : detail::max_position_plus_one(k_positions);
    int64_t r = rope.rotary_dim ? rope.rotary_dim : s.D;
    if (r > s.D) check.fail("argument 'rotary_dim' is " + std::to_string(r) + "; expected rotary_dim <= D = " + std::to_string(s.D));
    RopeFrequencies f = rope_frequencies(r, rope.base, rope.scaling, seq_len);
    std::vector<int32_t> &turns = args.ints.emplace_back(detail::fixed_point_turns(f.inv_freq));
    args.function = "posattn_attn_rope_f32";
    args.tensor("q_positions", q_positions);
    args.tensor("k_positions", k_positions);
    args.tensor("turns", Tensor{turns.data(), DType::int32, {2, int64_t(f.inv_freq.size())}, {}});
    args.scalar("attention_factor", f.attention_factor);
    args.scalar("rope_layout", int32_t(rope.layout));
}

// Shaw: one clipped index j − p_i ∈ [−K, K] for both tables.
void shaw_args(const Checker &check, const ShawAttention &shaw, const Shape &s, EncodingArgs &args) {
    int64_t rows = table_rows(check, shaw.rel_k, "rel_k", s.Hq, s.D, "D, q's dimension 3");
    int64_t value_rows = table_rows(check, shaw.rel_v, "rel_v", s.Hq, s.Dv, "Dv, v's dimension 3");
    if (rows % 2 == 0 || value_rows != rows)
        check.fail("arguments 'rel_k' and 'rel_v' have " + std::to_string(rows) + " and " + std::to_string(value_rows) +
                   " rows; expected the same odd count 2K+1 (distances −K … K)");
    int64_t K = rows / 2;
    RowsByOffset index = rows_by_offset(s.Lq, s.Lk, [&](int64_t delta) {
        return std::clamp(-delta - (s.Lk - s.Lq), -K, K) + K;
    });
    args.function = "posattn_attn_shaw_f32";
    args.tensor("rel_k", head_rows(shaw.rel_k, s.Hq, index.first, index.count));
    args.tensor("rel_v", head_rows(shaw.rel_v, s.Hq, index.first, index.count));
    args.by_offset("rel_index", std::move(index));
}

// Transformer-XL: the distance p_i − j, clamped to clamp_len; same_length is a sliding window.
void transformer_xl_args(const Checker &check, const TransformerXLAttention &xl, const Shape &s, bool causal,
                         const Visibility &vis, EncodingArgs &args) {
    int64_t rows = table_rows(check, xl.r, "r", s.Hq, s.D, "D, q's dimension 3");
    // HF keeps r by descending distance (row R − 1 − d for distance d): the same rows read backwards.
    const Tensor r = xl.descending ? detail::flipped(xl.r, xl.r.shape.size() - 2) : xl.r;
    for (auto [bias, name] : {std::pair{&xl.u, "u"}, {&xl.v_bias, "v_bias"}}) {
        check.tensor(*bias, name, DType::float32, {2});
        check.dim(*bias, name, 0, s.Hq, "Hq, q's dimension 1");
        check.dim(*bias, name, 1, s.D, "D, q's dimension 3");
        check.finite_values(*bias, name);
    }
    if (xl.clamp_len < 0) check.fail("argument 'clamp_len' is " + std::to_string(xl.clamp_len) + "; expected >= 0 (0: no clamp)");
    if (xl.same_length < 0) check.fail("argument 'same_length' is " + std::to_string(xl.same_length) + "; expected >= 0 (0: off)");
    if (xl.same_length > 0) args.window = xl.same_length;
    if (!causal)  // r has no row for a negative distance: no query may see a later key
        for (int64_t b = 0; b < s.B; b++)
            for (int64_t i = 0; i < s.Lq; i++) {
                const auto [first, end] = vis.keys(b, i, s.Lq);
                for (int64_t p = i + s.Lk - s.Lq, j = std::max(p + 1, first); j < end; j++)
                    if (vis.visible(b, i, j, s.Hq))
                        check.fail("argument 'causal' is false and key " + std::to_string(j) + " of batch " + std::to_string(b) +
                                   " is visible to query " + std::to_string(i) + " at position " + std::to_string(p) +
                                   "; expected no visible key at a negative distance (causal = true, or masks that hide it)");
            }
    int64_t farthest = std::min(s.Lk - 1, args.window - 1);
    if (xl.clamp_len > 0) farthest = std::min(farthest, xl.clamp_len);
    if (rows <= farthest)
        check.fail("argument 'r' has " + std::to_string(rows) + " rows; expected at least " + std::to_string(farthest + 1) +
                   " (distances 0 … min(Lk − 1, clamp_len))");
    int64_t last = xl.clamp_len > 0 ? std::min(xl.clamp_len, rows - 1) : rows - 1;
    RowsByOffset index = rows_by_offset(s.Lq, s.Lk, [&](int64_t delta) {
        return std::clamp(delta + s.Lk - s.Lq, int64_t(0), last);  // masked offsets read any valid row
    });
    args.function = "posattn_attn_xl_f32";
    args.tensor("r", head_rows(r, s.Hq, index.first, index.count));
    args.tensor("u", xl.u);
    args.tensor("v_bias", xl.v_bias);
    args.by_offset("rel_index", std::move(index));
}

// DeBERTa: both terms' tables projected from the relative embeddings rows they use; a term that
// is off reads one zero row.
void deberta_args(const Checker &check, const DebertaAttention &de, const Shape &s, const CallOptions &call,
                  EncodingArgs &args) {
    const Tensor &emb = de.rel_embeddings;
    check.tensor(emb, "rel_embeddings", DType::float32, {2});
    check.finite_values(emb, "rel_embeddings");
    int64_t max_rel = de.max_relative_positions < 1 ? 512 : de.max_relative_positions;
    int64_t span = de.position_buckets > 0 ? de.position_buckets : max_rel;
    if (emb.shape[0] / 2 < span)  // (2·span may overflow)
        check.fail("argument 'rel_embeddings' has " + std::to_string(emb.shape[0]) + " rows; expected at least 2·span = " +
                   (span <= INT64_MAX / 2 ? std::to_string(2 * span) : "2·" + std::to_string(span)) +
                   " (span: position_buckets, else max_relative_positions)");
    if (de.position_buckets > 0) deberta_bucket(0, de.position_buckets, max_rel);  // checks the bucket parameters
    int64_t hidden = emb.shape[1], HD = s.Hq * s.D;
    // Every argument is checked before either projection runs.
    auto term_on = [&](const std::optional<Tensor> &w, const std::optional<Tensor> &bias, const char *w_name,
                       const char *b_name) {
        if (!w) {
            if (bias) check.fail(std::string("argument '") + b_name + "' is given without its weight; expected both or neither");
            return false;
        }
        check.tensor(*w, w_name, DType::float32, {2});
        check.dim(*w, w_name, 0, HD, "Hq·D = " + std::to_string(HD));
        check.dim(*w, w_name, 1, hidden, "hidden, rel_embeddings' dimension 1");
        check.finite_values(*w, w_name);
        if (bias) {
            check.tensor(*bias, b_name, DType::float32, {1});
            check.dim(*bias, b_name, 0, HD, "Hq·D = " + std::to_string(HD));
            check.finite_values(*bias, b_name);
        }
        return true;
    };
    bool c2p = term_on(de.w_key, de.b_key, "w_key", "b_key"), p2c = term_on(de.w_query, de.b_query, "w_query", "b_query");
    // The projections run the linear kernel's schedule of the same name where it has one (the
    // autoscheduled baselines), else its hand schedule (a tuning candidate of the attention kernel).
    CallOptions projection = call;
    if (!detail::find_kernel("posattn_linear_f32", call)) projection.schedule = "hand";
    auto term = [&](bool on, const std::optional<Tensor> &w, const std::optional<Tensor> &bias, bool paper_index,
                    const char *table_name, const char *index_name) {
        std::vector<float> &table = args.floats.emplace_back();
        if (!on) {
            table.assign(size_t(s.D), 0.0f);
            args.tensor(table_name, Tensor{table.data(), DType::float32, {s.Hq, 1, s.D}, {0, 0, 1}});
            RowsByOffset first_row{{s.Lq, s.Lk, {}}};
            first_row.values.assign(size_t(first_row.size()), 0);
            args.by_offset(index_name, std::move(first_row));
            return;
        }
        RowsByOffset index = rows_by_offset(s.Lq, s.Lk, [&](int64_t delta) {
            int64_t bucket = deberta_bucket(paper_index ? -delta : delta, de.position_buckets, max_rel);
            return std::clamp(bucket + span, int64_t(0), 2 * span - 1);
        });
        table.resize(size_t(index.count * HD));
        int64_t row_stride = emb.stride(0);
        Tensor rows{static_cast<float *>(emb.data) + index.first * row_stride, DType::float32, {index.count, hidden},
                    {row_stride, emb.stride(1)}};
        linear(rows, *w, bias, Tensor{table.data(), DType::float32, {index.count, HD}, {}}, projection);
        args.tensor(table_name, Tensor{table.data(), DType::float32, {s.Hq, index.count, s.D}, {s.D, HD, 1}});
        args.by_offset(index_name, std::move(index));
    };
    term(c2p, de.w_key, de.b_key, false, "c2p_table", "c2p_index");
    term(p2c, de.w_query, de.b_query, de.p2c_index == DebertaP2cIndex::paper, "p2c_table", "p2c_index");
    args.function = "posattn_attn_deberta_f32";
    args.default_scale = 1.0 / std::sqrt(double(s.D) * double(1 + int(c2p) + int(p2c)));
}

// The DType of a kernel argument's Halide type, where posattn's tensors hold it.
std::optional<DType> dtype_of(halide_type_t type) {
    for (DType d : {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean, DType::float16, DType::bfloat16})
        if (type == detail::halide_type(d)) return d;
    return std::nullopt;
}
std::string type_name(halide_type_t type) {
    std::optional<DType> d = dtype_of(type);
    return d ? dtype_name(*d) : "a type posattn's tensors do not hold (Halide type code " + std::to_string(type.code) + ", " +
                                    std::to_string(type.bits) + " bits)";
}

// A variant of one's own (CustomAttention): its inputs by the kernel's argument names, each of the
// kernel's type and rank; every argument the kernel adds to posattn's given, and no other; q of
// the kernel's storage type (posattn's own kernels are named by theirs).
void custom_args(const Checker &check, const CustomAttention &custom, const CallOptions &call, DType dtype, EncodingArgs &args) {
    static const std::set<std::string_view> posattn_arguments{
        "__user_context", "q", "k", "v", "key_first", "key_end", "keys_from", "keys_until", "mask", "bias", "masked",
        "scale", "lookahead", "window", "out"};
    const halide_filter_metadata_t *meta = detail::require_kernel(custom.kernel, call).metadata();
    std::set<std::string> taken;
    for (int a = 0; a < meta->num_arguments; a++) {
        const halide_filter_argument_t &formal = meta->arguments[a];
        const std::string name = formal.name, of_kernel = "' of kernel " + custom.kernel + " (" + type_name(formal.type);
        if (name == "q" && formal.type != detail::halide_type(dtype))
            check.fail(std::string("argument 'q' has dtype ") + dtype_name(dtype) + "; kernel " + custom.kernel + " takes " + type_name(formal.type));
        if (posattn_arguments.count(name)) continue;
        taken.insert(name);
        if (formal.kind != halide_argument_kind_input_scalar) {
            auto given = custom.inputs.find(name);
            if (given == custom.inputs.end())
                check.fail("argument 'custom.inputs' has no '" + name + "'; expected the input '" + name + of_kernel + ", rank " +
                           std::to_string(formal.dimensions) + ")");
            const std::string label = "custom.inputs['" + name + "']";
            if (!dtype_of(formal.type)) check.fail("argument '" + label + "': kernel " + custom.kernel + " takes " + type_name(formal.type));
            check.tensor(given->second, label.c_str(), *dtype_of(formal.type), {size_t(formal.dimensions)});
            if (given->second.dtype != DType::float64 && detail::halide_type(given->second.dtype).code == halide_type_float)
                check.finite_values(given->second, label.c_str());
            args.tensor(given->first.c_str(), given->second);
            continue;
        }
        auto given = custom.scalars.find(name);
        if (given == custom.scalars.end())
            check.fail("argument 'custom.scalars' has no '" + name + "'; expected the scalar '" + name + of_kernel + ")");
        const char *arg = given->first.c_str();
        const double value = given->second;
        const std::string label = "custom.scalars['" + name + "']";
        check.finite(value, label.c_str());
        if (formal.type == halide_type_of<float>()) args.scalar(arg, float(value));
        else if (formal.type == halide_type_of<double>()) args.scalar(arg, value);
        else if (formal.type == halide_type_of<int32_t>() && value == std::trunc(value) && std::abs(value) <= INT32_MAX)
            args.scalar(arg, int32_t(value));
        else
            check.fail("argument '" + label + "' is " + std::to_string(value) + "; expected a value of the kernel's type, " +
                       type_name(formal.type) + (formal.type == halide_type_of<int32_t>() ? " (integral)" : ""));
    }
    auto refuse_others = [&](const char *field, const auto &given) {
        for (const auto &entry : given)
            if (!taken.count(entry.first))
                check.fail(std::string("argument 'custom.") + field + "' has '" + entry.first + "', which kernel " + custom.kernel +
                           " does not take");
    };
    refuse_others("inputs", custom.inputs);
    refuse_others("scalars", custom.scalars);
    args.function = custom.kernel;
}

// What a variant's arguments are made from: the call, checked so far, and its key ranges.
struct Call {
    const Checker &check;
    const AttentionOptions &o;
    const Shape &s;
    const CallOptions &call;
    const Visibility &vis;
    DType dtype;  // q's
};
// Tensors a call reads besides q, k and v, by argument name (for the overlap checks with out).
using Inputs = std::vector<std::pair<const Tensor *, const char *>>;
void add(Inputs &inputs, const Tensor *t, const char *name) {
    if (t) inputs.emplace_back(t, name);
}
void add(Inputs &inputs, const std::optional<Tensor> &t, const char *name) { add(inputs, t ? &*t : nullptr, name); }

// Whether a call gives the encoding in `member`.
template <auto member>
bool given(const AttentionOptions &o) {
    return bool(o.*member);
}

// Every position encoding of AttentionOptions, one row each: its option, whether a call gives it,
// the tensors it reads, and its kernel's arguments.
struct Variant {
    const char *option;
    bool (*given)(const AttentionOptions &);
    void (*inputs)(const AttentionOptions &, Inputs &);
    void (*args)(const Call &, EncodingArgs &);
};
const Variant kVariants[] = {
    {"alibi", given<&AttentionOptions::alibi>,
     [](const AttentionOptions &o, Inputs &in) { add(in, &o.alibi->slopes, "alibi_slopes"); },
     [](const Call &c, EncodingArgs &a) { alibi_args(c.check, *c.o.alibi, c.s, a); }},
    {"t5", given<&AttentionOptions::t5>,
     [](const AttentionOptions &o, Inputs &in) { add(in, &o.t5->table, "t5_table"); },
     [](const Call &c, EncodingArgs &a) { t5_args(c.check, *c.o.t5, c.s, c.o.causal, a); }},
    {"rope", given<&AttentionOptions::rope>,
     [](const AttentionOptions &o, Inputs &in) { add(in, o.rope->q_positions, "q_positions"), add(in, o.rope->k_positions, "k_positions"); },
     [](const Call &c, EncodingArgs &a) { rope_args(c.check, *c.o.rope, c.s, c.vis.starts, a); }},
    {"shaw", given<&AttentionOptions::shaw>,
     [](const AttentionOptions &o, Inputs &in) { add(in, &o.shaw->rel_k, "rel_k"), add(in, &o.shaw->rel_v, "rel_v"); },
     [](const Call &c, EncodingArgs &a) { shaw_args(c.check, *c.o.shaw, c.s, a); }},
    {"transformer_xl", given<&AttentionOptions::transformer_xl>,
     [](const AttentionOptions &o, Inputs &in) {
         const TransformerXLAttention &xl = *o.transformer_xl;
         add(in, &xl.r, "r"), add(in, &xl.u, "u"), add(in, &xl.v_bias, "v_bias");
     },
     [](const Call &c, EncodingArgs &a) { transformer_xl_args(c.check, *c.o.transformer_xl, c.s, c.o.causal, c.vis, a); }},
    {"deberta", given<&AttentionOptions::deberta>,
     [](const AttentionOptions &o, Inputs &in) {
         const DebertaAttention &de = *o.deberta;
         add(in, &de.rel_embeddings, "rel_embeddings"), add(in, de.w_key, "w_key"), add(in, de.b_key, "b_key");
         add(in, de.w_query, "w_query"), add(in, de.b_query, "b_query");
     },
     [](const Call &c, EncodingArgs &a) { deberta_args(c.check, *c.o.deberta, c.s, c.call, a); }},
    {"custom", given<&AttentionOptions::custom>,
     [](const AttentionOptions &o, Inputs &in) {
         for (const auto &[name, t] : o.custom->inputs) add(in, &t, name.c_str());
     },
     [](const Call &c, EncodingArgs &a) { custom_args(c.check, *c.o.custom, c.call, c.dtype, a); }},
};

// The call's position encoding (nullptr: plain attention); more than one is an error.
const Variant *variant_of(const Checker &check, const AttentionOptions &o) {
    const Variant *given = nullptr;
    std::string names;
    int count = 0;
    for (const Variant &v : kVariants) {
        names += (names.empty() ? "'" : ", '") + std::string(v.option) + "'";
        if (v.given(o)) given = &v, count++;
    }
    if (count > 1)
        check.fail("arguments " + names + ": more than one given (" + std::to_string(count) +
                   "); expected at most one position encoding");
    return given;
}

// The tensors a call reads besides q, k and v: its masks and its variant's.
Inputs call_inputs(const AttentionOptions &o, const Variant *variant) {
    Inputs inputs;
    for (auto [t, name] : {std::pair{&o.key_lengths, "key_lengths"}, {&o.key_starts, "key_starts"}, {&o.mask, "mask"},
                           {&o.bias, "bias"}, {&o.q_segments, "q_segments"}, {&o.k_segments, "k_segments"}, {&o.query_lengths, "query_lengths"}})
        add(inputs, *t, name);
    if (variant) variant->inputs(o, inputs);
    return inputs;
}

}  // namespace

void attention(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &out, const AttentionOptions &o,
               const CallOptions &call) {
    Checker check("attention");
    const DType dtype = check.storage(q, "q");  // of k and v too, and of out, or float32 for a 16-bit q
    const DType out_dtype = out.dtype == DType::float32 ? DType::float32 : dtype;
    for (auto [t, name, type] : {std::tuple{&q, "q", dtype}, {&k, "k", dtype}, {&v, "v", dtype}, {&out, "out", out_dtype}})
        check.host_or_device(*t, name, type, {4}, call);
    Shape s{q.shape[0], q.shape[1], q.shape[2], q.shape[3], k.shape[1], k.shape[2], v.shape[3]};
    check.dim(k, "k", 0, s.B, "B, q's dimension 0");
    check.dim(k, "k", 3, s.D, "D, q's dimension 3");
    check.dim(v, "v", 0, s.B, "B, q's dimension 0");
    check.dim(v, "v", 1, s.Hkv, "Hkv, k's dimension 1");
    check.dim(v, "v", 2, s.Lk, "Lk, k's dimension 2");
    if (s.Hkv == 0 ? s.Hq != 0 : s.Hq % s.Hkv != 0)
        check.fail("q has " + std::to_string(s.Hq) + " heads and k has " + std::to_string(s.Hkv) +
                   "; expected q's heads (dimension 1) to be a multiple of k's (GQA/MQA)");
    for (auto [axis, extent, what] : {std::tuple{0, s.B, "B"}, {1, s.Hq, "Hq"}, {2, s.Lq, "Lq"}, {3, s.Dv, "Dv, v's dimension 3"}})
        check.dim(out, "out", size_t(axis), extent, what);
    check.output(out, "out");
    for (auto [input, name] : {std::pair{&q, "q"}, {&k, "k"}, {&v, "v"}}) check.disjoint(out, "out", *input, name);
    if (s.D == 0) check.fail("argument 'q' has shape " + shape_string(q.shape) + "; expected D >= 1");
    if (o.window < 0) check.fail("argument 'window' is " + std::to_string(o.window) + "; expected >= 0 (0: no window)");
    const Variant *variant = variant_of(check, o);
    const bool plain = variant == nullptr;
    // The kernel's int32 mask arithmetic (positions plus window or lookahead) needs Lq + Lk well
    // inside 2^31.
    if (s.Lq + s.Lk > (int64_t(1) << 30))
        check.fail("arguments 'q' and 'k' have Lq + Lk = " + std::to_string(s.Lq + s.Lk) + "; expected Lq + Lk <= 2^30");
    const Visibility vis = visibility(check, o, s, call);
    // Plain attention reads only the keys some row can see: a cache allocated longer than its
    // longest key length (a static KV cache) runs as the first keys up to the greatest end, its
    // query positions kept by moving the lookahead and window by the keys left out. (The
    // encodings index their terms by position and key, so they run every key.) Within a call,
    // key blocks outside a query tile's key ranges are skipped (generators/attention.h).
    const int64_t longest = plain ? vis.longest : s.Lk;
    const int64_t left_out = s.Lk - longest;
    auto visible_keys = [&](const Tensor &t, size_t axis) { return detail::slice(t, axis, 0, longest); };
    const Tensor k_visible = visible_keys(k, 2), v_visible = visible_keys(v, 2);
    // q and the keys the kernel reads are checked before an encoding's own work (DeBERTa's
    // projections); plain attention's k and v once its kernel is chosen (a decode kernel's output
    // shows them, below).
    auto check_keys = [&] {
        for (auto [input, name] : {std::pair{&k_visible, "k"}, {&v_visible, "v"}}) check.finite_values(*input, name, call);
    };
    if (o.check_finite) check.finite_values(q, "q", call);
    if (o.check_finite && !plain) check_keys();
    EncodingArgs args;
    if (variant) variant->args(Call{check, o, s, call, vis, q.dtype}, args);
    if (!o.custom) args.function = detail::typed(args.function, dtype, out_dtype);
    if (out_dtype != dtype && !detail::find_kernel(args.function, call))
        check.fail(std::string("argument 'out' has dtype float32; expected ") + dtype_name(dtype) + ", q's (a float32 out of " +
                   dtype_name(dtype) + " inputs is built for plain attention only, as " + args.function + ")");
    double scale = o.scale.value_or(args.default_scale ? args.default_scale : 1.0 / std::sqrt(double(s.D)));
    check.finite(scale, "scale");
    // Any window >= Lk masks nothing.
    int64_t window = std::min({o.window > 0 ? o.window : INT64_MAX, args.window, s.Lk});
    // out shares no byte with the masks or a variant's inputs either.
    for (auto [input, name] : call_inputs(o, variant)) check.disjoint(out, "out", *input, name);
    // Decoding one query with GQA: the q heads of a group see the same keys from the same
    // position, so they run as the rows of one KV head's query tile, [B, Hq, 1, ·] viewed as
    // [B, Hkv, group, ·]: K and V are read once per group and a tile computes `group` rows rather
    // than one. Plain attention only (the encodings' terms differ per q head or per query row), and
    // without a window (it masks by row position). One query sees every key, causal or not.
    const int64_t group = s.Hkv ? s.Hq / s.Hkv : 1;
    const bool fold = s.Lq == 1 && group > 1 && plain && window == s.Lk;
    const int64_t rows = fold ? group : s.Lq;
    // A call of a few rows per tile runs the first decode shape class whose tile holds them (one
    // tile of 1, 4 or 8 rows on CPUs), one with a window or packed segments narrower than the keys
    // its window class (narrower key blocks: the blocks outside each tile's keys are skipped),
    // where the build has it for this device and schedule; otherwise the kernel itself, with its
    // own tiles.
    const bool narrow = window < s.Lk || ((o.q_segments || o.mask) && vis.widest < s.Lk);
    const auto decode = std::find_if(std::begin(kDecodeClasses), std::end(kDecodeClasses),
                                     [&](const auto &c) { return rows <= c.first; });
    const bool few_rows = decode != std::end(kDecodeClasses);
    const char *shape_class = few_rows ? decode->second : narrow ? "_window" : nullptr;
    const detail::KernelEntry *kernel_entry = shape_class ? detail::find_kernel(args.function + shape_class, call) : nullptr;
    const bool decode_class = kernel_entry && few_rows;
    if (!kernel_entry) kernel_entry = &detail::require_kernel(args.function, call);
    // A decode step reads its KV cache once: a CPU decode kernel makes any NaN or Inf it reads
    // show in its output (generators/attention.h, infinite_scores_as_nan), so it writes a scratch
    // output, and k and v are scanned only where that holds one, to name the argument (none found:
    // float32 products past its range, whose result stands); then out gets the scratch.
    // (x86 only: the ARM build's decode kernel was seen to give a finite row for a NaN in a key it
    // read, qemu, Halide 21, 2026-12-06; there k and v are scanned first.)
    const bool by_output = kX86 && o.check_finite && plain && call.device == "cpu" && decode_class && out.numel() > 0;
    if (o.check_finite && plain && !by_output) check_keys();
    if (out.numel() == 0) return;

    if (vis.longest == 0) {  // no visible key at all: every row is fully masked, so exactly zero (contract §0)
        detail::HostImage zeros(out, call, false);  // a device out: its elements only (the bytes between them stay)
        detail::fill_zero(zeros.tensor());
        return zeros.commit();
    }
    using detail::Strided;
    auto as_rows = [&](const Tensor &t) {
        return fold ? Strided{t.data, t.dtype, {s.B, s.Hkv, group, t.shape[3]},
                              {t.stride(0), group * t.stride(1), t.stride(1), t.stride(3)}, t.memory}
                    : Strided{t};
    };
    // Key ranges [B, rows], shared by the rows (a zero stride) unless they differ per query.
    auto ranges = [&](const std::vector<int32_t> &values) {
        return Strided{const_cast<int32_t *>(values.data()), DType::int32, {s.B, rows},
                       {vis.per_row ? s.Lq : 1, vis.per_row && !fold ? 1 : 0}};
    };
    // A mask or bias not given is read nowhere (the kernel is specialized on `masked`), but its
    // bounds are checked: a row of Lk ones or zeros stands in for it.
    const bool masked = vis.mask || vis.bias;
    std::vector<uint8_t> no_mask(vis.mask ? 0 : size_t(longest), 1);
    std::vector<float> no_bias(vis.bias ? 0 : size_t(longest), 0.0f);
    auto mask_or = [&](const std::optional<Tensor> &given, void *stand_in, DType dtype) {
        return given ? as_rows(visible_keys(*given, 3)) : Strided{stand_in, dtype, {s.B, fold ? s.Hkv : s.Hq, rows, longest}, {0, 0, 0, 1}};
    };
    std::vector<uint8_t> scratch(by_output ? size_t(out.numel()) * dtype_size(out_dtype) : 0);
    const Tensor written = by_output ? Tensor{scratch.data(), out_dtype, out.shape, {}} : out;
    HalideView q_view(as_rows(q), false), k_view(k_visible, false), v_view(v_visible, false), out_view(as_rows(written), true);
    HalideView first_view(ranges(vis.first), false), end_view(ranges(vis.end), false), from_view(ranges(vis.from), false),
        until_view(ranges(vis.until), false);
    HalideView mask_view(mask_or(vis.mask, no_mask.data(), DType::boolean), false),
        bias_view(mask_or(vis.bias, no_bias.data(), DType::float32), false);
    KernelCall kernel(*kernel_entry, call);
    kernel.arg("q", q_view).arg("k", k_view).arg("v", v_view).arg("key_first", first_view).arg("key_end", end_view)
        .arg("keys_from", from_view).arg("keys_until", until_view)
        .arg("mask", mask_view).arg("bias", bias_view).arg("masked", int32_t(masked))
        .arg("scale", float(scale)).arg("lookahead", int32_t((o.causal && !fold ? 0 : rows) + left_out))
        .arg("window", int32_t(window - left_out))
        .arg("out", out_view);
    for (auto &bind : args.bind) bind(kernel);
    kernel.run();
    out_view.finish();
    if (!by_output) return;
    if (detail::has_non_finite(written))
        for (int64_t b = 0; b < s.B; b++) {  // the keys each batch's rows see (not a static cache's unused ones)
            int64_t lo = longest, hi = 0;
            for (int64_t i = 0; i < s.Lq; i++) {
                auto [first, end] = vis.keys(b, i, s.Lq);
                if (first < end) lo = std::min(lo, first), hi = std::max(hi, end);
            }
            for (auto [input, name] : {std::pair{&k_visible, "k"}, {&v_visible, "v"}})
                if (lo < hi) check.finite_values(detail::slice(detail::slice(*input, 0, b, b + 1), 2, lo, hi), name, call);
        }
    detail::copy_strided(written, out);
}

}  // namespace posattn
