// Internals shared by the runtime's translation units: argument checks, Halide views of tensors,
// and the kernel call (select a registry entry, bind arguments by name, run, route errors).
#pragma once

#include <array>
#include <cstring>
#include <type_traits>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "HalideRuntime.h"
#include "posattn/posattn.hpp"

namespace posattn::detail {

// A compiled pipeline's entry point: its arguments as an array of pointers (Halide's _argv form).
using ArgvFunction = int (*)(void **);

struct KernelEntry {
    const char *function, *family, *schedule;
    const char *targets;  // the Halide targets compiled in, ","-joined (a CPU library's ISA levels)
    ArgvFunction argv;
    const halide_filter_metadata_t *(*metadata)();
    // The same kernel with non-temporal output stores (x86, cmake/nontemporal_outputs.py), run
    // for outputs of at least streaming_threshold() bytes; null where there is none.
    ArgvFunction nontemporal_argv = nullptr;
};
// Outputs at least this large (bytes) are written with non-temporal stores where a kernel has a
// twin that makes them: a quarter of the last-level cache, or POSATTN_STREAMING_THRESHOLD (the
// tests run such kernels both ways).
size_t streaming_threshold();
// Half of a core's L2 cache (bytes): how much of a table read at random stays cached beside the
// streams of a kernel's inputs and outputs.
int64_t half_l2_bytes();
// Calls fn on every kernel: this build's AOT kernels, then those added by load_kernel (entries
// keep their addresses; load_kernel may add to the list from another thread).
void for_each_kernel(const std::function<void(const KernelEntry &)> &fn);
// Installs the scratch allocator of the kernels (blocks.cpp); once, before the first kernel runs.
void use_scratch_cache();
// Installs posattn's test of which ISA levels this CPU runs (cpu_features.cpp); once, before the first kernel runs.
void use_cpu_features();
// The kernel `function` for the call's device (this build's CPU family for "cpu") and schedule.
const KernelEntry *find_kernel(const std::string &function, const CallOptions &call);
// The same, or Error(unsupported) naming the schedules this build has for it (a bad device first).
const KernelEntry &require_kernel(const std::string &function, const CallOptions &call);
// Whether out is empty, once the call's kernel is known to exist: an empty call is refused for a
// bad device or schedule exactly as a full one.
bool nothing_to_compute(const Tensor &out, const std::string &function, const CallOptions &call);
// A GPU API's Halide device interface, by the family name its kernels carry.
struct DeviceApi {
    const char *family;
    const halide_device_interface_t *(*interface)();
};

// What posattn::jit compiles from (registry.inc, generated from the manifest; runtime/src/jit.cpp).
struct BuiltKernel {
    const char *function, *family, *generator, *params;  // params: "name=value" lines
    const char *features;  // target features its storage type adds on a GPU API ("vk_float16"), "-" joined
};
extern const BuiltKernel kBuiltKernels[];
struct JitTarget {
    const char *device, *target;
};
extern const JitTarget kJitTargets[];
extern const char kLibexecFromLib[];  // an install's libexec folder, relative to its lib folder
// The family of this build's CPU kernels (x86, or arm when cross-built for AArch64).
extern const char kCpuFamily[];
// The family of the kernels a device runs: kCpuFamily for "cpu", else the device's own name.
inline std::string_view family_of(const std::string &device) { return device == "cpu" ? std::string_view(kCpuFamily) : std::string_view(device); }

// The Halide type of a tensor's elements (DType::boolean: uint8).
halide_type_t halide_type(DType dtype);
// Whether host tensor t (float32, float16 or bfloat16) holds a NaN or ±Inf (minus_inf: −inf aside).
bool has_non_finite(const Tensor &t, bool minus_inf = false);

// A kernel's name for storage type `dtype` (and an out of type `out`, where another): its float32
// name, "posattn_attn_plain_f32_decode", with the types' suffix for "_f32"
// (posattn_attn_plain_bf16_decode, posattn_attn_plain_bf16_f32_decode: kernels.json "dtypes"); a
// name without "_f32" (a kernel of one's own) as it is.
std::string typed(std::string_view f32_function, DType dtype, std::optional<DType> out = std::nullopt);

// The largest rank of a tensor the runtime takes (its views of them are held inline).
constexpr size_t kMaxRank = 8;

// Argument checks for one API call; every message starts with "posattn.<api>: ".
class Checker {
public:
    explicit Checker(std::string api) : api_(std::move(api)) {}
    [[noreturn]] void fail(const std::string &message) const;

    // dtype, rank (one of `ranks`), non-null data, sizes that fit Halide's 32-bit dims; host memory.
    void tensor(const Tensor &t, const char *name, DType dtype, std::initializer_list<size_t> ranks) const;
    // As tensor(), or a device buffer of the call's GPU API where it is CUDA or OpenCL (Memory::device).
    void host_or_device(const Tensor &t, const char *name, DType dtype, std::initializer_list<size_t> ranks,
                        const CallOptions &call) const;
    // t's dtype where it is a storage type (float32, float16 or bfloat16; docs/contract.md).
    DType storage(const Tensor &t, const char *name) const;
    // Outputs must not overlap themselves (no zero strides, no interleaved dims).
    void output(const Tensor &t, const char *name) const;
    // True if out is the same view as in (an in-place call); an error if they partly overlap.
    bool same_or_disjoint(const Tensor &out, const char *out_name, const Tensor &in, const char *in_name) const;
    // An error if out and other share any element.
    void disjoint(const Tensor &out, const char *out_name, const Tensor &other, const char *other_name) const;
    // t.shape[axis] == expected, where `what` says what the expected value is.
    void dim(const Tensor &t, const char *name, size_t axis, int64_t expected, const std::string &what) const;
    // t's leading dimensions are `like`'s shape (like_name's: "x" says "x's shape [...]" on failure);
    // t's rank, checked before, is at least like's.
    void leading_dims(const Tensor &t, const char *name, const Tensor &like, const char *like_name) const;
    void finite(double value, const char *name) const;
    // A finite value > 0 that is not subnormal (whose reciprocal is finite): bases and factors.
    void positive_normal(double value, const char *name) const;
    // An encoding's rows (B·S, given by argument `name`): the kernels number them in int32, with
    // room for their loops' tails, so at most 2^30.
    void row_count(int64_t rows, const char *name) const;
    // No NaN or ±Inf among the elements of float32, float16 or bfloat16 t (a device buffer: read
    // back through the call's API); with minus_inf, −inf is allowed (a bias that masks).
    void finite_values(const Tensor &t, const char *name, const CallOptions &call = {}, bool minus_inf = false) const;
    // The finite values of a float32 or float64 vector [length] (`what` says what the length is).
    std::vector<double> real_vector(const Tensor &t, const char *name, int64_t length, const std::string &what) const;
    // Positions int32 [L] (shared by every batch) or [B, L], as a [B, L] view.
    Tensor positions(const Tensor &t, const char *name, int64_t B, int64_t L, const std::string &L_what,
                     const std::string &B_what) const;

private:
    void shape(const Tensor &t, const char *name, DType dtype, std::initializer_list<size_t> ranks) const;
    // A rank the runtime's inline layouts hold (at most kMaxRank).
    void inline_rank(const Tensor &t, const char *name) const;

    std::string api_;
};

// The Halide device interface of a call's GPU API; Error(unsupported) where this build has none.
const halide_device_interface_t *device_interface(const CallOptions &call);
// A device buffer's bytes from its first element to its last (Memory::device: strides >= 0).
int64_t span_bytes(const Tensor &t);
// Copies the elements of device tensor t (the call's GPU API) to or from a host span of
// span_bytes(t) laid out alike; the bytes between elements are not copied.
void device_to_host(const Tensor &t, const CallOptions &call, void *host);
void host_to_device(const void *host, const Tensor &t, const CallOptions &call);
// Copies the elements of device tensor `from` into device tensor `to`, shaped alike, on the device.
void device_copy(const Tensor &from, const Tensor &to, const CallOptions &call);

// Tensor t as host memory, for the runtime's own reads and writes around a kernel: t itself, or
// for a device buffer a host copy laid out alike (zeros, or its elements where `read`), whose
// elements commit() writes back.
class HostImage {
public:
    HostImage(const Tensor &t, const CallOptions &call, bool read);
    HostImage(const HostImage &) = delete;  // host_ points into bytes_
    HostImage &operator=(const HostImage &) = delete;
    const Tensor &tensor() const { return host_; }
    void commit() const;

private:
    Tensor device_, host_;
    CallOptions call_;
    std::vector<uint8_t> bytes_;
};

// Frequencies ω (radians per position, float64 as the reference rounds them) as the trig kernels
// take them (generators/trig.h fixed_point_turn): ω/2π mod 1 as a 0.64 fixed-point fraction Q,
// in two rows of int32 words, [2, n]: hi + [lo ≥ 2^31], then lo read as signed. Kept per thread
// for the last omegas given (long double arithmetic: a RoPE call of q [1, 32, 1, 128] took 14 µs
// computing them each time, 8.5 µs with them kept).
std::vector<int32_t> fixed_point_turns(const std::vector<double> &omegas);

// make(), kept by each thread for the last `key` it was asked for: encodings are called over and
// over with the same base and width (decoding a token at a time), and their per-channel pows cost
// more than the kernel at such sizes (sin-only's 0.64 fixed-point turns: 45 of a 50 µs call at
// [1, 1, 1024]).
template <typename Key, typename Make>
auto kept_per_thread(const Key &key, Make make) -> decltype(make()) {
    thread_local std::optional<std::pair<Key, decltype(make())>> last;
    if (!last || last->first != key) last.emplace(key, make());
    return last->second;
}

// Walks every index of `shape` (outermost-first) and calls fn(offsets), where offsets[n] is the
// element offset of that index in views[n].
template <size_t N, typename Fn>
void for_each_offset(const std::vector<int64_t> &shape, const std::array<const Tensor *, N> &views, Fn fn) {
    for (int64_t e : shape)
        if (e == 0) return;
    size_t rank = shape.size();
    std::vector<int64_t> index(rank, 0);
    std::array<int64_t, N> offsets{};
    for (;;) {
        fn(offsets);
        size_t dim = rank;
        for (;;) {
            if (dim == 0) return;
            dim--;
            bool next = ++index[dim] < shape[dim];
            for (size_t n = 0; n < N; n++)
                offsets[n] += views[n]->stride(dim) * (next ? 1 : 1 - shape[dim]);
            if (next) break;
            index[dim] = 0;
        }
    }
}

// Copies between two views of the same shape, element by element.
void copy_strided(const Tensor &from, const Tensor &to);
// Sets every element of t to zero (all zero bits: 0.0 in every storage type).
void fill_zero(const Tensor &t);

// The elements [begin, end) of t's axis, with t's strides (explicit).
Tensor slice(const Tensor &t, size_t axis, int64_t begin, int64_t end);
// t's axis read backwards (its first element the last, its stride negated).
Tensor flipped(const Tensor &t, size_t axis);
// The channels [begin, end) of t's innermost axis.
Tensor channels(const Tensor &t, int64_t begin, int64_t end);

// A 1-D [N] positions tensor as [batch, N] (a zero batch stride); a 2-D one as it is.
Tensor positions_2d(const Tensor &positions, int64_t batch);
// A rank-2 [N, D] tensor as [1, N, D]; a rank-3 one as it is.
Tensor with_leading_batch(const Tensor &t);
// max(positions) + 1, and 0 if there is none (HF's current length).
int64_t max_position_plus_one(const Tensor &positions);

// A tensor's layout held inline (rank at most kMaxRank), for the views the runtime makes around a
// kernel call: each vector of a Tensor is an allocation, and a call at decoding sizes takes a few µs.
struct Strided {
    void *data = nullptr;
    DType dtype = DType::float32;
    Memory memory = Memory::host;
    size_t rank = 0;
    std::array<int64_t, kMaxRank> shape{}, strides{};  // strides in elements, always explicit

    Strided(const Tensor &t);  // (implicit: any Tensor where a view is made)
    Strided(void *data, DType dtype, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides,
            Memory memory = Memory::host);
    int64_t numel() const;
    Tensor tensor() const;
};

// A tensor as a halide_buffer_t (dims reversed: Halide's dim 0 is the innermost). Halide kernels
// need a unit innermost stride; any other view is packed into a contiguous copy, and an output so
// packed is written back by finish() only after the kernel succeeded. With `pairs`, the channel
// axis (innermost) becomes two Halide dims, pair i and member m, laid out as `pairs` says. A
// device buffer (checked to have a unit innermost stride) has no host side: the kernel call
// wraps its native handle.
class HalideView {
public:
    HalideView(const Strided &t, bool output, std::optional<Layout> pairs = std::nullopt);
    HalideView(const HalideView &) = delete;
    HalideView &operator=(const HalideView &) = delete;
    halide_buffer_t *buffer() { return &buffer_; }
    // The native handle of a device buffer (Memory::device), else 0.
    uint64_t native_device() const { return device_; }
    void finish();

private:
    std::optional<Strided> user_;  // a packed output's own layout, for finish()
    bool output_;
    uint64_t device_ = 0;
    std::vector<uint8_t> packed_;
    std::array<halide_dimension_t, kMaxRank> dims_;  // (inline: ~10 views a call; ranks here are at most 5)
    halide_buffer_t buffer_{};
};

// A GPU kernel's buffer argument, staged through a device copy of its bytes (registry.cpp).
class DeviceStaging {
public:
    DeviceStaging(halide_buffer_t *argument, bool output);
    DeviceStaging(const DeviceStaging &) = delete;
    DeviceStaging &operator=(const DeviceStaging &) = delete;
    int to_device(void *user_context, const halide_device_interface_t *device);
    // Copies an output back (when status is 0), frees the device copy, gives the argument its own
    // layout back; returns the status.
    int to_host_and_free(void *user_context, int status);

private:
    halide_buffer_t *argument_;
    bool output_, reversed_;
    // The argument's own dims, and those of its device copy: the same, or row-major where some
    // stride is negative (a device handle addresses its elements from the start of the copy).
    halide_dimension_t *own_dims_;
    std::vector<halide_dimension_t> staged_dims_;
    size_t bytes_, first_;  // the copy's bytes; where its element 0 lies in them
    std::vector<uint8_t> host_;
    halide_dimension_t dim_{};
    halide_buffer_t flat_{};
};

// One call of one compiled kernel: selects the registry entry for (function, cpu family,
// schedule), binds every argument the kernel's metadata declares by name, and runs it. Halide's
// runtime errors during the call are collected and thrown as Error(kernel_failed).
// Arguments are bound by name, each name once; storage is inline (a call at decoding sizes takes
// a few µs, where each allocation counted).
class KernelCall {
    using Scalar = std::aligned_storage_t<8, 8>;  // storage for one scalar argument
    static constexpr size_t kMaxArguments = 48;  // (attention with DeBERTa binds ~25)

public:
    KernelCall(const std::string &function, const CallOptions &call);
    KernelCall(const KernelEntry &entry, const CallOptions &call);
    KernelCall(const KernelCall &) = delete;  // the user context points at it
    KernelCall &operator=(const KernelCall &) = delete;
    KernelCall &arg(const char *name, HalideView &view);
    // A scalar (float, double, int32_t or bool), typed by Halide's own halide_type_of<T>().
    template <typename T>
    KernelCall &arg(const char *name, T value) {
        static_assert(sizeof(T) <= sizeof(Scalar), "scalar argument too large");
        check_room();
        void *slot = &scalars_[bound_count_];
        std::memcpy(slot, &value, sizeof(T));
        return bind(name, slot, halide_type_of<T>());
    }
    void run();

    std::string halide_errors;  // appended to by halide_error() through the user context

private:
    using Arguments = std::array<void *, kMaxArguments>;
    KernelCall &bind(const char *name, void *address, halide_type_t type);
    void check_room() const;  // room for one more binding, or Error
    int run_on_device(const halide_filter_metadata_t *meta, Arguments &argv, const std::array<uint64_t, kMaxArguments> &natives);
    ArgvFunction cpu_instance(const halide_filter_metadata_t *meta, const Arguments &argv) const;

    const KernelEntry *entry_ = nullptr;
    const halide_device_interface_t *device_ = nullptr;  // a GPU API's kernel: see run()
    void *user_context_ = nullptr;
    struct Bound {
        const char *name;  // a string literal, as every caller's
        void *address;
        halide_type_t type;
        uint64_t native_device = 0;  // a buffer's device handle where it is a device buffer
    };
    std::array<Bound, kMaxArguments> bound_;
    std::array<Scalar, kMaxArguments> scalars_;  // a scalar's slot: its binding's index
    size_t bound_count_ = 0;
};

}  // namespace posattn::detail
