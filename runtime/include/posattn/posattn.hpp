// posattn C++ API: typed entry points over the AOT-compiled kernels.
//
// Every call validates its arguments first (shapes, dtypes, strides, index ranges, sizes) and
// throws posattn::Error naming the argument and what was expected; nothing is written before
// validation passes. Tensors are non-owning views; shapes are outermost-first (NumPy order) and
// strides are in elements, any sign, with an empty strides vector meaning row-major contiguous.
// Tensors are host memory, except where a call says it takes device buffers (Memory::device).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct halide_filter_metadata_t;  // HalideRuntime.h

namespace posattn {

// Every call's default, in one place: the C++ options and default arguments below, the C API's
// init functions and the Python package's signatures (posattn._posattn.DEFAULTS) take them from here.
namespace defaults {
constexpr double base = 10000.0;  // sinusoidal, sin-only and RoPE frequencies: base^(−2c/D)
constexpr bool t5_bidirectional = true;
constexpr int64_t t5_num_buckets = 32, t5_max_distance = 128;
constexpr int64_t deberta_position_buckets = -1, deberta_max_relative_positions = -1;  // none; 512
constexpr double floater_dt = 0.01;
constexpr int64_t floater_substeps = 5;
inline constexpr const char *schedule = "hand", *device = "cpu";
}  // namespace defaults

// float16 (IEEE binary16) and bfloat16 (float32's upper half) are storage types: the kernels that
// take them compute in float32 and round once on store (docs/contract.md "Storage types").
enum class DType : int32_t {
    float32 = 0, float64 = 1, int32 = 2, int64 = 3, boolean = 4 /* one byte, 0 or 1 */, float16 = 5, bfloat16 = 6
};
const char *dtype_name(DType dtype);
size_t dtype_size(DType dtype);
std::string shape_string(const std::vector<int64_t> &shape);  // "[2, 3]"

// Where a tensor's elements are. host: data is a host pointer. device: data is a buffer of the
// call's GPU API that the caller owns — a CUdeviceptr ("cuda") or a cl_mem ("opencl") — made in
// the context the kernels run in (device_context()), holding the elements from its start
// (strides >= 0, the innermost 1). A kernel reads and writes it in place, with no copy through the
// host (except where the runtime's own work touches it: CallOptions); the call returns once its
// results are in the buffer.
enum class Memory : int32_t { host = 0, device = 1 };

struct Tensor {
    void *data = nullptr;
    DType dtype = DType::float32;
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;  // elements; empty = row-major contiguous
    Memory memory = Memory::host;

    int64_t numel() const;
    int64_t stride(size_t dim) const;  // explicit or row-major
};

class Error : public std::runtime_error {
public:
    enum class Kind { invalid_argument, unsupported, kernel_failed };
    Error(Kind kind, const std::string &message) : std::runtime_error(message), kind_(kind) {}
    Kind kind() const { return kind_; }

private:
    Kind kind_;
};

// Which compiled schedule to run: "hand" (the project's schedule, default) or a Halide
// autoscheduler baseline such as "adams2019" (see kernels()); and on which device: "cpu"
// (default), "cuda", "opencl" or "vulkan". Host tensors work on every device: the runtime copies
// inputs to the device and results back, and frees the device copies. On "cuda" and "opencl",
// every float32 operand may also be a device buffer of that API (Memory::device), used in place;
// what the runtime reads itself (positions, token ids, key lengths, slopes, the tables and
// weights of attention's variants) is host memory. Where the runtime's own work around a kernel
// touches a device buffer (FLOATER's p0, W1, W2 and out; linear with E = 0; the last channel of
// an odd sinusoid D and partial RoPE's pass-through channels, which a device handle cannot view
// alone), it goes through a host copy of the whole buffer; partial RoPE with x and out both on
// the device copies x to out on the device instead, then rotates.
struct CallOptions {
    std::string schedule = defaults::schedule;
    std::string device = defaults::device;
};

enum class Layout { interleaved, half };
enum class Convention { vaswani, t2t };

struct SinusoidalOptions {
    double base = defaults::base;
    Layout layout = Layout::interleaved;
    Convention convention = Convention::vaswani;
};

// PE(positions): positions int32 [N] or [B, S] → out float32 [N, D] or [B, S, D] (contract §1).
void sinusoidal(const Tensor &positions, const Tensor &out, const SinusoidalOptions &options = {},
                const CallOptions &call = {});
// out = x + PE(positions): x, out float32 [B, S, D]; positions int32 [B, S], or [S] for every batch.
void sinusoidal_add(const Tensor &x, const Tensor &positions, const Tensor &out,
                    const SinusoidalOptions &options = {}, const CallOptions &call = {});

// table[positions + offset]: table float32 [V, D]; positions int32 [N] or [B, S]; out [..., D].
// A position with positions + offset outside [0, V) is an error (contract §2), never clipped.
void learned(const Tensor &table, const Tensor &positions, const Tensor &out, int64_t offset = 0,
             const CallOptions &call = {});
// out = x + table[positions + offset]: x, out float32 [B, S, D]; positions [B, S] or [S].
void learned_add(const Tensor &x, const Tensor &table, const Tensor &positions, const Tensor &out,
                 int64_t offset = 0, const CallOptions &call = {});

// The simple encodings (contract §3). Table forms: positions int32 [N] or [B, S] → out float32
// [..., D]. Fused forms (`_add`): out = x + PE; x, out [B, S, D]; positions [B, S] or [S].

// PE = p on every channel.
void integer(const Tensor &positions, const Tensor &out, const CallOptions &call = {});
void integer_add(const Tensor &x, const Tensor &positions, const Tensor &out, const CallOptions &call = {});

enum class NormalizedMode { minus_one, length };
struct NormalizedOptions {
    int64_t length = 0;  // L; 0: the largest position + 1 of each sequence
    NormalizedMode mode = NormalizedMode::minus_one;  // p/(L−1) (L = 1 gives 0), or p/L
};
void normalized(const Tensor &positions, const Tensor &out, const NormalizedOptions &options = {},
                const CallOptions &call = {});
void normalized_add(const Tensor &x, const Tensor &positions, const Tensor &out,
                    const NormalizedOptions &options = {}, const CallOptions &call = {});

// PE[c] = bit c of p (LSB first, or MSB first), {0, 1} or signed {−1, +1}. 0 <= p < 2^D, else an error.
struct BinaryOptions {
    bool signed_values = false;
    bool msb_first = false;
};
void binary(const Tensor &positions, const Tensor &out, const BinaryOptions &options = {},
            const CallOptions &call = {});
void binary_add(const Tensor &x, const Tensor &positions, const Tensor &out, const BinaryOptions &options = {},
                const CallOptions &call = {});

// PE[c] = sin(p · base^(−c/D)), c = 0 … D−1.
void sin_only(const Tensor &positions, const Tensor &out, double base = defaults::base, const CallOptions &call = {});
void sin_only_add(const Tensor &x, const Tensor &positions, const Tensor &out, double base = defaults::base,
                  const CallOptions &call = {});

// RoPE (contract §6). inv_freq_c = base^(−2c/r) for pair c of the r rotated channels, then scaled.
enum class RopeLayout { neox, gptj };  // pairs (c, r/2 + c), or (2c, 2c + 1)
enum class RopeScalingType { none, linear, ntk, dynamic, yarn, llama3, longrope };
struct RopeScaling {  // the fields each type reads, with HF's defaults (modeling_rope_utils.py)
    RopeScalingType type = RopeScalingType::none;
    double factor = 0;  // every type but none; longrope: 0 means max_position_embeddings / L0
    int64_t original_max_position_embeddings = 0;  // L0: dynamic, yarn, llama3, longrope
    int64_t max_position_embeddings = 0;           // longrope, when factor is 0
    double beta_fast = 32, beta_slow = 1;          // yarn
    bool truncate = true;                          // yarn: floor/ceil the correction range
    double mscale = 0, mscale_all_dim = 0;         // yarn: attention factor as a ratio (when both set)
    std::optional<double> attention_factor;        // yarn, longrope: overrides the default
    double low_freq_factor = 0, high_freq_factor = 0;  // llama3
    std::vector<double> short_factor, long_factor;     // longrope: r/2 each
};
struct RopeFrequencies {
    std::vector<double> inv_freq;  // [r/2]
    double attention_factor = 1;   // multiplies cos and sin
};
// seq_len: the current length, read by dynamic and longrope (HF: max(position) + 1).
RopeFrequencies rope_frequencies(int64_t rotary_dim, double base = defaults::base, const RopeScaling &scaling = {},
                                 int64_t seq_len = 0);

struct RopeOptions {
    double base = defaults::base;
    RopeLayout layout = RopeLayout::neox;
    int64_t rotary_dim = 0;           // r; 0 means D. Channels r … D−1 pass through.
    RopeScaling scaling;
    std::optional<Tensor> positions;  // int32 [L] or [B, L]; default 0 … L−1
    int64_t seq_len = 0;              // dynamic, longrope; 0 means max(positions) + 1
};
// out = RoPE(x): x, out float32 [B, H, L, D]; out may be x itself (in place). On "cuda" and
// "opencl", x and out may be device buffers (Memory::device); positions are host memory.
void rope(const Tensor &x, const Tensor &out, const RopeOptions &options = {}, const CallOptions &call = {});

// Complex-order embeddings (contract §4): (real, imag) = amplitude[w]·(cos, sin)(frequency[w]·p +
// phase[w]) for token w at position p. token_ids, positions int32 [N] or [B, S]; amplitude,
// frequency, phase float32 [V, d] (phase optional: the public code has none); real, imag float32
// [..., d]. A token id outside [0, V) is an error.
void complex_order(const Tensor &token_ids, const Tensor &positions, const Tensor &amplitude,
                   const Tensor &frequency, const std::optional<Tensor> &phase, const Tensor &real,
                   const Tensor &imag, const CallOptions &call = {});
// Frequency tables [V, d] as the public code initialises them: translation (Models.py, frozen):
// 10000^(−2⌊c/2⌋/d) for every word; classification (Complex_order.py): w·10000^(−2c/d).
enum class ComplexOrderInit { translation, classification };
void complex_order_frequency_init(const Tensor &out, ComplexOrderInit kind);

// FLOATER (contract §5): p_n = p(n·dt) for dp/dt = h(t, p) = W2·[ReLU(W1·[p; t] + b1); t] + b2,
// p(0) = p0, with `substeps` steps of the method per position (torchdiffeq's "rk4" is rk4_38).
enum class FloaterMethod { rk4_38, rk4, midpoint, euler };
struct FloaterOptions {
    double dt = defaults::floater_dt;
    int64_t substeps = defaults::floater_substeps;
    FloaterMethod method = FloaterMethod::rk4_38;
};
// p0 float32 [d] or [batch, d]; W1 [hidden, d+1], b1 [hidden], W2 [d, hidden+1], b2 [d] (torch's
// [out, in]); out float32 [N, d] or [batch, N, d] for N positions.
void floater(const Tensor &p0, const Tensor &W1, const Tensor &b1, const Tensor &W2, const Tensor &b2,
             const Tensor &out, const FloaterOptions &options = {}, const CallOptions &call = {});

// ALiBi (contract §7). Head slopes for any head count (not sorted when it is not a power of two).
std::vector<double> alibi_slopes(int64_t heads);
enum class AlibiForm { relative, key_position, symmetric };  // −m(i−j), +m·j, −m|i−j|
// out float32 [H, Lq, Lk]: the bias of query row r (absolute position r + Lk − Lq) and key j;
// slopes float64 or float32 [H].
void alibi_bias(const Tensor &slopes, const Tensor &out, AlibiForm form = AlibiForm::relative,
                const CallOptions &call = {});

// ALiBi inside attention: bias slope_h · offset(form) added to the scaled logits (contract §7).
struct AlibiAttention {
    Tensor slopes;  // float32 or float64 [Hq], e.g. alibi_slopes(Hq)
    AlibiForm form = AlibiForm::relative;
};

// T5's relative bucket of rel = key − query (contract §9), computed in float32 as torch and Mesh-TF
// do, so that the exact-integer boundaries land in the same buckets.
int64_t t5_bucket(int64_t rel, bool bidirectional = defaults::t5_bidirectional, int64_t num_buckets = defaults::t5_num_buckets,
                  int64_t max_distance = defaults::t5_max_distance);

// T5 inside attention: bias table[bucket(key − query), h] added to the logits (contract §9).
struct T5Attention {
    Tensor table;  // float32 [num_buckets, Hq]
    bool bidirectional = defaults::t5_bidirectional;
    int64_t max_distance = defaults::t5_max_distance;
};

// RoPE inside attention: q and k rotated at their positions before q·k (contract §6); v is not.
struct RopeAttention {
    double base = defaults::base;
    RopeLayout layout = RopeLayout::neox;
    int64_t rotary_dim = 0;             // 0 means D
    RopeScaling scaling;
    std::optional<Tensor> q_positions;  // int32 [Lq] or [B, Lq]; default Lk − Lq … Lk − 1
    std::optional<Tensor> k_positions;  // int32 [Lk] or [B, Lk]; default 0 … Lk − 1
    int64_t seq_len = 0;                // dynamic, longrope; 0 means max(key position) + 1
};

// Shaw et al. inside attention (contract §8): logit (q_i·k_j + q_i·rel_k[idx])·scale, value
// v_j + rel_v[idx], idx = clip(j − p_i, −K, K) + K for a table of 2K + 1 rows (p_i: the query's
// position i + Lk − Lq).
struct ShawAttention {
    Tensor rel_k;  // float32 [2K+1, D], shared by every head, or [Hq, 2K+1, D]
    Tensor rel_v;  // float32 [2K+1, Dv] or [Hq, 2K+1, Dv]
};

// Transformer-XL / XLNet inside attention (contract §10): logit ((q_i + u)·k_j + (q_i + v_bias)·r[dist])·scale
// with dist = p_i − j (memory first: k and v are [memory; segment]). A visible key at a negative
// distance is an error, so pass causal = true (or key lengths that hide the future).
struct TransformerXLAttention {
    Tensor r;          // float32 [R, D] or [Hq, R, D] by ascending distance (descending: by descending, as HF's)
    Tensor u, v_bias;  // float32 [Hq, D]: r_w_bias, r_r_bias
    int64_t clamp_len = 0;    // > 0: distances above it read r[clamp_len]
    int64_t same_length = 0;  // > 0: same_length with this mem_len, keys at distance >= mem_len are masked
    bool descending = false;  // r's row R − 1 − d is distance d (HF's pos_emb of arange(klen − 1, −1, −1))
};

// DeBERTa v2/v3 disentangled attention (contract §11): logit (q_i·k_j + c2p + p2c)·scale with
// c2p = q_i·K_r[idx(i, j)], p2c = k_j·Q_r[idx(i, j)], K_r = rel_embeddings·w_keyᵀ + b_key,
// Q_r = rel_embeddings·w_queryᵀ + b_query (torch Linear weights [Hq·D, hidden], split into heads),
// idx = clamp(bucket(i − j) + span, 0, 2·span − 1). A term is on when its weight is given.
enum class DebertaP2cIndex { code, paper };  // HF/official (same index as c2p), or the paper's δ(j, i)
struct DebertaAttention {
    Tensor rel_embeddings;  // float32 [>= 2·span, hidden]; rows [0, 2·span) are used
    std::optional<Tensor> w_key, b_key;      // c2p (pos_key_proj, or key_proj with share_att_key)
    std::optional<Tensor> w_query, b_query;  // p2c (pos_query_proj, or query_proj)
    int64_t position_buckets = defaults::deberta_position_buckets;  // > 0: log buckets, span = position_buckets
    int64_t max_relative_positions = defaults::deberta_max_relative_positions;  // < 1: 512; span without buckets
    DebertaP2cIndex p2c_index = DebertaP2cIndex::code;
};
// DeBERTa's relative position of δ = query − key: δ itself, or its log bucket when
// position_buckets > 0 (make_log_bucket_position, float32 with ceil as HF computes it).
int64_t deberta_bucket(int64_t delta, int64_t position_buckets, int64_t max_relative_positions);

// A variant declared out of tree: a kernel from a generator derived from posattn::AttentionGenerator
// (the declaration headers installed under include/posattn/halide: generators/attention_generator.h),
// added with add_kernel or load_kernel as function `kernel` (where added, `kernel` + "_decode1",
// "_decode", "_decode8" and "_window" run the calls of those shape classes, as posattn's own
// variants). The runtime binds posattn's arguments (q, k, v, the masks, scale, causal, window) and
// the variant's own by name: each buffer input of the kernel from `inputs` (its element type and
// rank; float32 values finite), each scalar from `scalars` (converted to the kernel's type; an
// integer type takes integral values only). A name the kernel lacks, or one it expects and is not
// given, is an error naming it. A buffer smaller than the kernel reads is the kernel's error
// (Halide's bounds check, raised before it writes anything; a kernel compiled with no_asserts has
// none, and reads out of bounds instead).
struct CustomAttention {
    std::string kernel;
    std::map<std::string, Tensor> inputs;
    std::map<std::string, double> scalars;
};

struct AttentionOptions {
    std::optional<double> scale;         // default 1/sqrt(D); 1 with t5 (T5 does not scale q·k),
                                         // 1/sqrt(D·(1 + terms)) with deberta
    bool causal = false;                 // bottom-right aligned (contract §0)
    std::optional<Tensor> key_lengths;   // int32 [B]: keys j >= key_lengths[b] are masked
    std::optional<Tensor> key_starts;    // int32 [B]: keys j < key_starts[b] are masked (left padding)
    int64_t window = 0;                  // > 0: sliding window, p_i − j < window
    // Packed sequences: int32 [B, Lq] and [B, Lk] (both or neither); a query sees only the keys of
    // its own segment (any ids; a segment's keys need not be contiguous).
    std::optional<Tensor> q_segments, k_segments;
    std::optional<Tensor> query_lengths;  // int32 [B]: query rows i >= query_lengths[b] are 0
    // Broadcast to [B, Hq, Lq, Lk] (rank 2 to 4, numpy's rules: each dimension 1 or the full extent):
    std::optional<Tensor> mask;  // bool: true = may attend (torch SDPA's boolean attn_mask)
    std::optional<Tensor> bias;  // float32, added to the scaled logits; −inf masks, NaN and +inf are refused
    // NaN/Inf in q, k or v is an error (a scan before the kernel; a CPU decoding step's kernel
    // shows them in its output instead, reading its KV cache once). false: no check; the caller
    // vouches for them: a non-finite value then gives undefined output values (NaN, Inf), never a
    // crash or an out-of-bounds access.
    bool check_finite = true;
    // At most one position encoding:
    std::optional<AlibiAttention> alibi;
    std::optional<T5Attention> t5;
    std::optional<RopeAttention> rope;
    std::optional<ShawAttention> shaw;
    std::optional<TransformerXLAttention> transformer_xl;
    std::optional<DebertaAttention> deberta;
    std::optional<CustomAttention> custom;
};

// Fused attention: q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] → out [B, Hq, Lq, Dv].
// Hq must be a multiple of Hkv (GQA/MQA). A query row with no visible key gets exact zeros.
// On "cuda" and "opencl", q, k, v and out may be device buffers (Memory::device); check_finite
// then reads q, k and v back to the host for its scan (pass false to skip it); the other tensors
// (key lengths, an encoding's tables) are host memory.
void attention(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &out,
               const AttentionOptions &options = {}, const CallOptions &call = {});

// out = x·weightᵀ + bias, as torch's Linear: x float32 [N, E], weight [O, E], bias [O] (none: 0),
// out [N, O].
void linear(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias, const Tensor &out,
            const CallOptions &call = {});

// Threads used by every kernel (Halide's thread pool, 0 <= threads <= 256); 0 restores the default.
void set_num_threads(int64_t threads);

// Memory for an output the caller allocates through posattn (the Python bindings' outputs when
// out= is not given): 128-byte aligned, nullptr if it cannot be had. A freed block of 1 MiB or more
// is kept for a later block it fits, already mapped, so that a call writing it runs at the speed
// of one given out= (a fresh block faults its pages in on the call's first stores).
void *allocate_output(size_t bytes);
void free_output(void *data);
// The most bytes of freed output blocks kept (1 GiB at first; 0: none); returns the previous limit.
size_t set_output_cache(size_t bytes);

// Where the kernels' scratch memory comes from (an app's allocator, e.g. a phone app's arena):
// allocate(context, size, alignment) returns `size` bytes aligned to `alignment` (a power of two)
// or nullptr; release(context, block) frees a block it returned. Both null (the default): posattn's
// own, which keeps freed blocks for reuse. Every block is released by the call that took it, to
// the allocator that made it, so the allocator may be changed between calls of other threads; the
// runtime's own bookkeeping (a few small vectors per call) stays on the C++ heap.
using Allocate = void *(*)(void *context, size_t size, size_t alignment);
using Release = void (*)(void *context, void *block);
void set_allocator(Allocate allocate, Release release, void *context);

// The compiled kernels, as "<function>.<target family>" keys with their schedule and the Halide
// targets compiled in, ","-joined (a CPU kernel's ISA levels, which Halide picks from at run time).
struct KernelInfo {
    std::string key, function, family, schedule, targets;
};
std::vector<KernelInfo> kernels();

// Adds a kernel compiled outside this build: a schedule-tuning candidate of one of its kernels, or
// a kernel of one's own (CustomAttention), whose function name must not start with "posattn_".
// argv and metadata are the kernel's Halide entry points <name>_argv and <name>_metadata, compiled
// with the Halide posattn was built with for a target with no_runtime (Halide's runtime is this
// library's), for `device` (CallOptions::device: "cpu" is this build's CPU family); calls on that
// device select it with CallOptions::schedule = `schedule`. Error(invalid_argument) for a function
// and schedule already there.
using KernelArgv = int (*)(void **);
using KernelMetadata = const struct ::halide_filter_metadata_t *(*)();
void add_kernel(const std::string &function, KernelArgv argv, KernelMetadata metadata, const std::string &schedule = defaults::schedule,
                const std::string &device = defaults::device);
// The same from the shared library at `path` (linked against libposattn), which exports
// <symbol>_argv and <symbol>_metadata.
void load_kernel(const std::string &path, const std::string &symbol, const std::string &function,
                 const std::string &schedule = defaults::schedule, const std::string &device = defaults::device);

// Compiles `function` (a kernel of this build: kernels()) again at run time and adds it as a
// schedule of that function on `device` (load_kernel); returns the schedule's name, for
// CallOptions::schedule. `params`: generator params over those the AOT kernel was compiled with,
// so that jit(function) compiles the AOT kernel itself (on the CPU, bit for bit); `schedule_params`
// ("field:value,..."), where given, replaces the AOT kernel's. Halide compiles in a helper process,
// posattn's generator executable ($POSATTN_GENERATORS, or the one beside this library's build or
// install), and the library is cached on disk ($POSATTN_JIT_CACHE, ~/.cache/posattn/jit) by its
// content, the Halide version, the generator, the params and the target: the first call compiles
// (seconds), later ones in any process load it. Error(invalid_argument) naming the argument;
// Error(unsupported) without the generators, a C++ compiler ($CXX or c++), or the shared runtime.
struct JitOptions {
    std::map<std::string, std::string> params;
    std::optional<std::string> schedule_params;
    std::string device = defaults::device;
};
std::string jit(const std::string &function, const JitOptions &options = {});

// The values CallOptions::device accepts: "cpu" and the GPU APIs ("cuda", "opencl", "vulkan");
// check_device throws Error(invalid_argument) for any other.
const std::vector<std::string> &devices();
void check_device(const std::string &device);

// The context and queue posattn's kernels on a GPU API run in, created on first use: OpenCL's
// cl_context and cl_command_queue, CUDA's CUcontext and CUstream. Device buffers for posattn
// (Memory::device) are made in that context, and read back through that queue or stream.
// Error(unsupported) for "cpu", for "vulkan" (whose buffers are not taken) and in a build
// without GPU APIs; Error(kernel_failed) where the API's driver is missing.
struct DeviceContext {
    void *context = nullptr, *queue = nullptr;
};
DeviceContext device_context(const std::string &device);

}  // namespace posattn
