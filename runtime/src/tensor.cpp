#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "internal.h"

namespace posattn {

const char *dtype_name(DType dtype) {
    switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::boolean: return "bool";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    }
    return "unknown";
}

size_t dtype_size(DType dtype) {
    switch (dtype) {
    case DType::float64: case DType::int64: return 8;
    case DType::float16: case DType::bfloat16: return 2;
    case DType::boolean: return 1;
    default: return 4;
    }
}

int64_t Tensor::numel() const {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

int64_t Tensor::stride(size_t dim) const {
    if (!strides.empty()) return strides[dim];
    int64_t s = 1;
    for (size_t d = dim + 1; d < shape.size(); d++) s *= shape[d];
    return s;
}

std::string shape_string(const std::vector<int64_t> &shape) {
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < shape.size(); i++) s << (i ? ", " : "") << shape[i];
    s << "]";
    return s.str();
}

namespace detail {

void Checker::fail(const std::string &message) const {
    throw Error(Error::Kind::invalid_argument, "posattn." + api_ + ": " + message);
}

namespace {
std::string argument(const char *name) { return std::string("argument '") + name + "'"; }
}  // namespace

void Checker::tensor(const Tensor &t, const char *name, DType dtype, std::initializer_list<size_t> ranks) const {
    if (t.memory != Memory::host)
        fail(argument(name) + " is device memory; expected host memory (the runtime reads this argument itself)");
    shape(t, name, dtype, ranks);
}

void Checker::host_or_device(const Tensor &t, const char *name, DType dtype, std::initializer_list<size_t> ranks,
                             const CallOptions &call) const {
    if (t.memory == Memory::host) return tensor(t, name, dtype, ranks);
    if (t.memory != Memory::device) fail(argument(name) + " has unknown memory " + std::to_string(int(t.memory)));
    if (call.device != "cuda" && call.device != "opencl")
        fail(argument(name) + " is device memory; expected a call on its device, cuda or opencl (this call's device: " +
             call.device + ")");
    shape(t, name, dtype, ranks);
    // The kernel indexes it from its start, with Halide's unit innermost stride.
    for (size_t d = 0; d < t.shape.size(); d++)
        if (t.stride(d) < 0 || (d + 1 == t.shape.size() && t.shape[d] > 1 && t.stride(d) != 1))
            fail(argument(name) + " is device memory with strides " + shape_string(t.strides) +
                 "; expected strides >= 0 and an innermost stride of 1");
}

// (Messages are made on failure only: a call at decoding sizes takes a few µs.)
void Checker::shape(const Tensor &t, const char *name, DType dtype, std::initializer_list<size_t> ranks) const {
    if (std::find(ranks.begin(), ranks.end(), t.shape.size()) == ranks.end()) {
        std::string expected_ranks;
        for (size_t r : ranks) expected_ranks += (expected_ranks.empty() ? "" : " or ") + std::to_string(r);
        fail(argument(name) + " has rank " + std::to_string(t.shape.size()) + " (shape " + shape_string(t.shape) +
             "); expected rank " + expected_ranks);
    }
    if (t.dtype != dtype)
        fail(argument(name) + " has dtype " + dtype_name(t.dtype) + "; expected " + dtype_name(dtype));
    if (!t.strides.empty() && t.strides.size() != t.shape.size())
        fail(argument(name) + " has " + std::to_string(t.strides.size()) + " strides for rank " + std::to_string(t.shape.size()));
    // Halide buffers hold 32-bit extents and strides; element offsets must not overflow.
    int64_t elements = 1;
    for (size_t d = 0; d < t.shape.size(); d++) {
        if (t.shape[d] < 0) fail(argument(name) + " has a negative extent in shape " + shape_string(t.shape));
        if (t.shape[d] > INT32_MAX)
            fail(argument(name) + " dimension " + std::to_string(d) + " has extent " + std::to_string(t.shape[d]) +
                 "; expected at most 2^31-1");
        int64_t stride = t.stride(d);
        if (stride > INT32_MAX || stride < -int64_t(INT32_MAX))
            fail(argument(name) + " dimension " + std::to_string(d) + " has stride " + std::to_string(stride) +
                 "; expected |stride| < 2^31");
        if (t.shape[d] > 0 && elements > (INT64_MAX / 16) / t.shape[d])
            fail(argument(name) + " with shape " + shape_string(t.shape) + " has too many elements (size overflow)");
        elements *= t.shape[d];
    }
    if (elements > 0 && t.data == nullptr) fail(argument(name) + " has null data");
}

void Checker::inline_rank(const Tensor &t, const char *name) const {
    if (t.shape.size() > kMaxRank)
        fail(argument(name) + " has rank " + std::to_string(t.shape.size()) + "; expected at most " + std::to_string(kMaxRank));
}

void Checker::output(const Tensor &t, const char *name) const {
    if (t.numel() == 0) return;  // (NumPy gives empty arrays zero strides)
    // Non-overlapping if, with dims sorted by |stride|, each stride clears the previous dim's span.
    inline_rank(t, name);
    std::array<std::pair<int64_t, int64_t>, kMaxRank> dims;  // (|stride|, extent)
    size_t count = 0;
    for (size_t d = 0; d < t.shape.size(); d++) {  // (an insertion sort)
        if (t.shape[d] <= 1) continue;
        const std::pair<int64_t, int64_t> dim{std::llabs(t.stride(d)), t.shape[d]};
        size_t at = count++;
        for (; at > 0 && dim < dims[at - 1]; at--) dims[at] = dims[at - 1];
        dims[at] = dim;
    }
    int64_t span = 1;
    for (size_t i = 0; i < count; i++) {
        if (dims[i].first < span)
            fail(argument(name) + " has overlapping elements (strides " + shape_string(t.strides) +
                 "); an output must not alias itself");
        span = dims[i].first * dims[i].second;
    }
}

namespace {

bool same_view(const Tensor &a, const Tensor &b) {
    if (a.data != b.data || a.shape != b.shape || a.dtype != b.dtype) return false;
    for (size_t d = 0; d < a.shape.size(); d++)
        if (a.shape[d] > 1 && a.stride(d) != b.stride(d)) return false;
    return true;
}

// Whether some element of a shares a byte with some element of b. Conservative: the byte ranges
// overlap, unless every element address of each lies on a lattice (the gcd of all strides) that
// keeps the two apart, as the real and imaginary parts of a complex array.
bool may_overlap(const Tensor &a, const Tensor &b) {
    if (a.numel() == 0 || b.numel() == 0) return false;
    // Host and device memory never overlap; nor do distinct device buffers (an OpenCL handle is no
    // address: only views of the same buffer are compared).
    if (a.memory != b.memory || (a.memory == Memory::device && a.data != b.data)) return false;
    int64_t lattice = 0;
    auto range = [&](const Tensor &t) {  // [first, last] byte touched
        int64_t size = int64_t(dtype_size(t.dtype)), lo = 0, hi = 0;
        for (size_t d = 0; d < t.shape.size(); d++) {
            (t.stride(d) < 0 ? lo : hi) += (t.shape[d] - 1) * t.stride(d) * size;
            if (t.shape[d] > 1) lattice = std::gcd(lattice, std::llabs(t.stride(d) * size));
        }
        auto base = reinterpret_cast<intptr_t>(t.data);
        return std::pair<intptr_t, intptr_t>(base + lo, base + hi + size - 1);
    };
    auto [a_lo, a_hi] = range(a);
    auto [b_lo, b_hi] = range(b);
    if (a_hi < b_lo || b_hi < a_lo) return false;
    if (lattice == 0) return true;
    int64_t apart = ((b_lo - a_lo) % lattice + lattice) % lattice;
    return apart < int64_t(dtype_size(a.dtype)) || lattice - apart < int64_t(dtype_size(b.dtype));
}

}  // namespace

bool Checker::same_or_disjoint(const Tensor &out, const char *out_name, const Tensor &in, const char *in_name) const {
    if (same_view(out, in)) return true;
    if (may_overlap(out, in))
        fail(std::string("argument '") + out_name + "' overlaps '" + in_name + "'; expected '" + out_name +
             "' to be '" + in_name + "' itself (in place) or disjoint from it");
    return false;
}

void Checker::disjoint(const Tensor &out, const char *out_name, const Tensor &other, const char *other_name) const {
    if (may_overlap(out, other))
        fail(std::string("argument '") + out_name + "' overlaps '" + other_name + "'; expected them to be disjoint");
}

void Checker::dim(const Tensor &t, const char *name, size_t axis, int64_t expected, const std::string &what) const {
    if (t.shape[axis] != expected)
        fail(std::string("argument '") + name + "' has shape " + shape_string(t.shape) + "; expected dimension " +
             std::to_string(axis) + " to be " + std::to_string(expected) + " (" + what + ")");
}

void Checker::leading_dims(const Tensor &t, const char *name, const Tensor &like, const char *like_name) const {
    for (size_t a = 0; a < like.shape.size(); a++) {  // the message only on failure: calls at decoding sizes take µs
        if (t.shape[a] == like.shape[a]) continue;
        std::string whose = like_name;
        whose += whose.back() == 's' ? "' shape " : "'s shape ";
        dim(t, name, a, like.shape[a], whose + shape_string(like.shape));
    }
}

void Checker::row_count(int64_t rows, const char *name) const {
    if (rows > int64_t(1) << 30)
        fail("argument '" + std::string(name) + "' gives " + std::to_string(rows) + " rows (B·S); expected at most 2^30");
}

void Checker::finite(double value, const char *name) const {
    if (!std::isfinite(value)) fail(std::string("argument '") + name + "' is " + std::to_string(value) + "; expected a finite value");
}

DType Checker::storage(const Tensor &t, const char *name) const {
    if (t.dtype != DType::float32 && t.dtype != DType::float16 && t.dtype != DType::bfloat16)
        fail(argument(name) + " has dtype " + dtype_name(t.dtype) + "; expected float32, float16 or bfloat16");
    return t.dtype;
}

std::string typed(std::string_view f32_function, DType dtype, std::optional<DType> out) {
    auto suffix = [](DType d) { return d == DType::float16 ? "_f16" : d == DType::bfloat16 ? "_bf16" : "_f32"; };
    std::string function(f32_function);
    const size_t at = function.find("_f32");
    if (at == std::string::npos) return function;
    return function.replace(at, 4, std::string(suffix(dtype)) + (out && *out != dtype ? suffix(*out) : ""));
}

void Checker::positive_normal(double value, const char *name) const {
    if (!(std::isnormal(value) && value > 0))
        fail(std::string("argument '") + name + "' is " + std::to_string(value) +
             "; expected a finite value > 0, at least 2^-1022 (not subnormal)");
}

namespace {

// Whether any of n words at `bits`, `step` elements apart, has every exponent bit set (NaN or
// ±Inf) and is not `allowed`: a branch-free loop, which the compiler vectorizes, built for the
// widest vectors the CPU has: the check reads every element of attention's q, k and v, and at
// decoding sizes that was a sixth of the call (perf, Intel Xeon).
template <typename Word>
inline bool any_with_exponent(const Word *bits, int64_t n, int64_t step, Word exponent, Word allowed) {
    bool non_finite = false;
    if (step == 1) {  // vectorized
        for (int64_t e = 0; e < n; e++) non_finite |= (bits[e] & exponent) == exponent && bits[e] != allowed;
    } else {
        for (int64_t e = 0; e < n; e++) non_finite |= (bits[e * step] & exponent) == exponent && bits[e * step] != allowed;
    }
    return non_finite;
}
#if defined(__x86_64__) && defined(__linux__)
#define POSATTN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define POSATTN_VECTOR_CLONES
#endif
POSATTN_VECTOR_CLONES bool any_non_finite_32(const uint32_t *bits, int64_t n, int64_t step, uint32_t exponent, uint32_t allowed) {
    return any_with_exponent(bits, n, step, exponent, allowed);
}
POSATTN_VECTOR_CLONES bool any_non_finite_16(const uint16_t *bits, int64_t n, int64_t step, uint16_t exponent, uint16_t allowed) {
    return any_with_exponent(bits, n, step, exponent, allowed);
}

// halide_do_par_for's task `index`: elements [index·per_task, (index + 1)·per_task) of t, in
// row-major order (a row: the innermost axis).
struct FiniteScan {
    const Strided *t;
    int64_t per_task;
    uint32_t exponent;  // the exponent bits of t's dtype
    uint32_t allowed;   // a non-finite value's bits that are not refused (−inf), or 0
    std::atomic<bool> found{false};

    bool any(int64_t offset, int64_t count, int64_t step) const {
        const auto *base = static_cast<const uint8_t *>(t->data);
        if (dtype_size(t->dtype) == 2)
            return any_non_finite_16(reinterpret_cast<const uint16_t *>(base) + offset, count, step, uint16_t(exponent), uint16_t(allowed));
        return any_non_finite_32(reinterpret_cast<const uint32_t *>(base) + offset, count, step, exponent, allowed);
    }

    static int task(void *, int index, uint8_t *closure) {
        auto *scan = reinterpret_cast<FiniteScan *>(closure);
        const Strided &t = *scan->t;
        const size_t inner = t.rank - 1;
        const int64_t n = t.shape[inner], step = t.strides[inner];
        for (int64_t e = index * scan->per_task, end = std::min(t.numel(), e + scan->per_task); e < end;) {
            int64_t column = e % n, count = std::min(n - column, end - e), offset = column * step;
            for (size_t d = inner, rest = size_t(e / n); d-- > 0; rest /= size_t(t.shape[d]))
                offset += int64_t(rest % size_t(t.shape[d])) * t.strides[d];
            if (scan->any(offset, count, step)) scan->found = true;
            e += count;
        }
        return 0;
    }
};

}  // namespace

bool has_non_finite(const Tensor &t, bool minus_inf) {
    if (t.numel() == 0) return false;
    // Rows as long as the strides allow (a dense tensor is one row; a slice of a KV cache, one row
    // per head), in tasks of 256 KiB on Halide's thread pool (the kernels' own).
    Strided merged{t.data, t.dtype, {}, {}};
    for (size_t d = 0; d < t.shape.size(); d++) {
        if (t.shape[d] == 1) continue;
        const size_t last = merged.rank - 1;
        if (merged.rank && merged.strides[last] == t.stride(d) * t.shape[d]) {  // steps over axis d whole
            merged.shape[last] *= t.shape[d];
            merged.strides[last] = t.stride(d);
        } else {
            merged.shape[merged.rank] = t.shape[d];
            merged.strides[merged.rank++] = t.stride(d);
        }
    }
    if (merged.rank == 0) merged = Strided{t.data, t.dtype, {1}, {1}};
    // Exponent bits and −inf: float32 0x7f800000, 0xff800000; float16 0x7c00, 0xfc00; bfloat16
    // (float32's upper half) 0x7f80, 0xff80.
    const uint32_t exponent = t.dtype == DType::float16 ? 0x7c00u : t.dtype == DType::bfloat16 ? 0x7f80u : 0x7f800000u;
    const uint32_t sign = dtype_size(t.dtype) == 2 ? 0x8000u : 0x80000000u;
    FiniteScan scan{&merged, (int64_t(1) << 18) / int64_t(dtype_size(t.dtype)), exponent, minus_inf ? exponent | sign : 0u};
    const int tasks = int((t.numel() + scan.per_task - 1) / scan.per_task);
    if (tasks == 1) FiniteScan::task(nullptr, 0, reinterpret_cast<uint8_t *>(&scan));
    else halide_do_par_for(nullptr, FiniteScan::task, 0, tasks, reinterpret_cast<uint8_t *>(&scan));
    return scan.found;
}

void Checker::finite_values(const Tensor &t, const char *name, const CallOptions &call, bool minus_inf) const {
    if (t.numel() == 0) return;
    if (t.memory == Memory::device) return finite_values(HostImage(t, call, true).tensor(), name, {}, minus_inf);
    inline_rank(t, name);
    if (has_non_finite(t, minus_inf))
        fail(std::string("argument '") + name + (minus_inf ? "' contains NaN or +inf; expected finite values or -inf"
                                                            : "' contains NaN or Inf; expected finite values"));
}

std::vector<double> Checker::real_vector(const Tensor &t, const char *name, int64_t length, const std::string &what) const {
    tensor(t, name, t.dtype == DType::float32 ? DType::float32 : DType::float64, {1});
    dim(t, name, 0, length, what);
    std::vector<double> values;
    for (int64_t e = 0; e < length; e++) {
        const uint8_t *at = static_cast<const uint8_t *>(t.data) + e * t.stride(0) * int64_t(dtype_size(t.dtype));
        values.push_back(t.dtype == DType::float32 ? double(*reinterpret_cast<const float *>(at))
                                                   : *reinterpret_cast<const double *>(at));
        finite(values.back(), name);
    }
    return values;
}

Tensor Checker::positions(const Tensor &t, const char *name, int64_t B, int64_t L, const std::string &L_what,
                          const std::string &B_what) const {
    tensor(t, name, DType::int32, {1, 2});
    size_t rank = t.shape.size();
    dim(t, name, rank - 1, L, L_what);
    if (rank == 2) dim(t, name, 0, B, B_what);
    return positions_2d(t, B);
}

int64_t span_bytes(const Tensor &t) {
    if (t.numel() == 0) return 0;
    int64_t last = 0;
    for (size_t d = 0; d < t.shape.size(); d++) last += (t.shape[d] - 1) * t.stride(d);
    return (last + 1) * int64_t(dtype_size(t.dtype));
}

HostImage::HostImage(const Tensor &t, const CallOptions &call, bool read) : device_(t), host_(t), call_(call) {
    if (t.memory != Memory::device) return;
    bytes_.resize(size_t(span_bytes(t)));
    host_.data = bytes_.data(), host_.memory = Memory::host;
    if (read) device_to_host(t, call, bytes_.data());
}

void HostImage::commit() const {
    if (device_.memory == Memory::device) host_to_device(bytes_.data(), device_, call_);
}

void copy_strided(const Tensor &from, const Tensor &to) {
    const int64_t bytes = int64_t(dtype_size(from.dtype));
    const size_t inner = from.shape.size() - 1;
    // Rows at once where both innermost strides are 1.
    const bool rows = !from.shape.empty() && from.stride(inner) == 1 && to.stride(inner) == 1;
    std::vector<int64_t> outer = from.shape;
    if (rows) outer.back() = 1;
    const size_t run = size_t(rows ? from.shape.back() * bytes : bytes);
    for_each_offset<2>(outer, {&from, &to}, [&](const std::array<int64_t, 2> &o) {
        std::memcpy(static_cast<uint8_t *>(to.data) + o[1] * bytes, static_cast<const uint8_t *>(from.data) + o[0] * bytes, run);
    });
}

void fill_zero(const Tensor &t) {
    static const uint64_t zero = 0;  // (every dtype's size or less)
    copy_strided(Tensor{const_cast<uint64_t *>(&zero), t.dtype, t.shape, std::vector<int64_t>(t.shape.size(), 0)}, t);
}

Tensor slice(const Tensor &t, size_t axis, int64_t begin, int64_t end) {
    Tensor c = t;
    c.strides.resize(t.shape.size());
    for (size_t d = 0; d < t.shape.size(); d++) c.strides[d] = t.stride(d);
    c.data = static_cast<uint8_t *>(t.data) + begin * t.stride(axis) * int64_t(dtype_size(t.dtype));
    c.shape[axis] = end - begin;
    return c;
}

Tensor flipped(const Tensor &t, size_t axis) {
    const int64_t last = std::max<int64_t>(t.shape[axis] - 1, 0);
    Tensor f = slice(t, axis, last, last + t.shape[axis]);  // starting at the axis' last element
    f.strides[axis] = -f.strides[axis];
    return f;
}

Tensor channels(const Tensor &t, int64_t begin, int64_t end) { return slice(t, t.shape.size() - 1, begin, end); }

Tensor positions_2d(const Tensor &positions, int64_t batch) {
    Tensor p = positions;
    if (p.shape.size() == 1) {
        p.strides = {0, positions.stride(0)};
        p.shape = {batch, positions.shape[0]};
    }
    return p;
}

Tensor with_leading_batch(const Tensor &t) {
    Tensor r = t;
    if (r.shape.size() == 2) {
        r.strides = {0, t.stride(0), t.stride(1)};
        r.shape.insert(r.shape.begin(), 1);
    }
    return r;
}

int64_t max_position_plus_one(const Tensor &positions) {
    int64_t length = 0;
    const int32_t *data = static_cast<const int32_t *>(positions.data);
    for_each_offset<1>(positions.shape, {&positions}, [&](const std::array<int64_t, 1> &o) {
        length = std::max(length, int64_t(data[o[0]]) + 1);
    });
    return length;
}

Strided::Strided(const Tensor &t) : data(t.data), dtype(t.dtype), memory(t.memory), rank(t.shape.size()) {
    if (rank > shape.size())
        throw Error(Error::Kind::unsupported, "posattn: a view of rank " + std::to_string(rank) + "; at most " +
                                                  std::to_string(shape.size()));
    for (size_t d = 0; d < rank; d++) shape[d] = t.shape[d], strides[d] = t.stride(d);
}

Strided::Strided(void *data, DType dtype, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides,
                 Memory memory)
    : data(data), dtype(dtype), memory(memory), rank(shape.size()) {
    std::copy(shape.begin(), shape.end(), this->shape.begin());
    std::copy(strides.begin(), strides.end(), this->strides.begin());
}

int64_t Strided::numel() const {
    int64_t n = 1;
    for (size_t d = 0; d < rank; d++) n *= shape[d];
    return n;
}

Tensor Strided::tensor() const {
    return Tensor{data, dtype, {shape.begin(), shape.begin() + rank}, {strides.begin(), strides.begin() + rank}, memory};
}

halide_type_t halide_type(DType dtype) {
    static const halide_type_t types[] = {halide_type_t(halide_type_float, 32), halide_type_t(halide_type_float, 64),
                                          halide_type_t(halide_type_int, 32), halide_type_t(halide_type_int, 64),
                                          halide_type_t(halide_type_uint, 8), halide_type_t(halide_type_float, 16),
                                          halide_type_t(halide_type_bfloat, 16)};
    return types[int(dtype)];
}

HalideView::HalideView(const Strided &t, bool output, std::optional<Layout> pairs) : output_(output) {
    void *data = t.data;
    const bool unit_inner_stride = t.rank == 0 || t.shape[t.rank - 1] <= 1 || t.strides[t.rank - 1] == 1;
    const bool device = t.memory == Memory::device, packed = !device && !unit_inner_stride;
    if (device) {  // no host side
        device_ = reinterpret_cast<uint64_t>(t.data);
        data = nullptr;
    } else if (packed) {
        packed_.resize(size_t(t.numel()) * dtype_size(t.dtype));
        data = packed_.data();
        const Tensor user = t.tensor();
        if (output) user_ = t;  // finish() copies the result there
        else copy_strided(user, Tensor{data, t.dtype, user.shape, {}});
    }
    const size_t rank = t.rank, dims = rank + (pairs ? 1 : 0);
    if (dims > dims_.size())
        throw Error(Error::Kind::unsupported, "posattn: a kernel view of rank " + std::to_string(dims) + "; at most " +
                                                  std::to_string(dims_.size()));
    int64_t row_major = 1;
    for (size_t d = 0; d < rank; d++) {
        size_t axis = rank - 1 - d;
        int64_t stride = d == 0 && t.shape[axis] <= 1 ? 1 : packed ? row_major : t.strides[axis];
        dims_[d + (pairs && d > 0 ? 1 : 0)] = halide_dimension_t(0, int32_t(t.shape[axis]), int32_t(stride));
        row_major *= t.shape[axis];
    }
    if (pairs) {  // channels c = (pair, member) of d/2 pairs; an odd d's last channel is left out
        int32_t count = dims_[0].extent / 2, interleaved = *pairs == Layout::interleaved;
        dims_[0] = halide_dimension_t(0, count, interleaved ? 2 : 1);
        dims_[1] = halide_dimension_t(0, 2, interleaved ? 1 : count);
    }
    buffer_.host = static_cast<uint8_t *>(data);
    buffer_.type = halide_type(t.dtype);
    buffer_.dimensions = int32_t(dims);
    buffer_.dim = dims_.data();
}

void HalideView::finish() {
    if (output_ && user_) {
        Tensor user = user_->tensor(), packed = user;
        packed.data = packed_.data();
        packed.strides.clear();
        copy_strided(packed, user);
    }
}

}  // namespace detail
}  // namespace posattn
