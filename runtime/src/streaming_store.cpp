// The store stage of x86 kernels whose output goes to memory (generators/store_stage.h): a
// Halide extern stage that copies one computed tile into the output. Outputs of at least a
// quarter of the last-level cache are written with non-temporal stores, which skip the read of
// each line an ordinary store makes first (a third of a copy's memory traffic, half of a fill's)
// and do not evict the caller's working set; smaller ones with ordinary stores, so that a
// consumer finds them in cache. Halide 21 cannot emit non-temporal stores itself.
#include <HalideRuntime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

// POSATTN_STREAMING_THRESHOLD (bytes, digits only) overrides it: the tests run the staged kernels both ways.
size_t streaming_threshold() {
    static const size_t bytes = [] {
        const char *given = std::getenv("POSATTN_STREAMING_THRESHOLD");
        char *end = nullptr;
        size_t value = given && *given ? size_t(std::strtoull(given, &end, 10)) : 0;
        if (end && *end == '\0') return value;
        long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        return llc > 0 ? size_t(llc) / 4 : size_t(8) << 20;
    }();
    return bytes;
}

#if defined(__x86_64__)
constexpr bool kCanStream = true;
// 16-byte non-temporal stores: SSE2, so every x86-64 takes them; a line fills in four of them,
// and their rate is far above any memory stream.
inline bool aligned16(const float *p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }
inline void stream1(float *dst, float v) {
    int bits;
    std::memcpy(&bits, &v, 4);
    _mm_stream_si32(reinterpret_cast<int *>(dst), bits);
}

void stream_run(const float *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i < n && !aligned16(dst + i); i++) stream1(dst + i, src[i]);
    for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
    for (; i < n; i++) stream1(dst + i, src[i]);
}

// dst[2j] = even[j], dst[2j + 1] = odd[j].
void stream_interleaved(const float *even, const float *odd, float *dst, int64_t pairs) {
    auto one_pair = [&](int64_t j) {
        stream1(dst + 2 * j, even[j]);
        stream1(dst + 2 * j + 1, odd[j]);
    };
    int64_t j = 0;
    for (; j < pairs && !aligned16(dst + 2 * j); j++) one_pair(j);
    for (; j + 4 <= pairs; j += 4) {
        __m128 e = _mm_loadu_ps(even + j), o = _mm_loadu_ps(odd + j);
        _mm_stream_ps(dst + 2 * j, _mm_unpacklo_ps(e, o));
        _mm_stream_ps(dst + 2 * j + 4, _mm_unpackhi_ps(e, o));
    }
    for (; j < pairs; j++) one_pair(j);
}

// Non-temporal stores are weakly ordered: fence them before the tile counts as written.
inline void stream_fence() { _mm_sfence(); }
#else
constexpr bool kCanStream = false;
void stream_run(const float *, float *, int64_t) {}
void stream_interleaved(const float *, const float *, float *, int64_t) {}
inline void stream_fence() {}
#endif

void store_run(const float *src, float *dst, int64_t n) { std::memcpy(dst, src, size_t(n) * sizeof(float)); }

void store_interleaved(const float *even, const float *odd, float *dst, int64_t pairs) {
    for (int64_t j = 0; j < pairs; j++) {
        dst[2 * j] = even[j];
        dst[2 * j + 1] = odd[j];
    }
}

struct Dim {
    int64_t extent, in_stride, out_stride;
};

// The copy's innermost pattern over the tile's dims (out memory order): a dense run, two dense
// inputs interleaved into one run (the pair views of interleaved layouts), or element by element.
struct Copy {
    bool stream;
    Dim dims[8];
    int rank;
    int inner = -1, pair = -1;  // the run's dim; with `pair` (the last), the dim of extent 2 interleaved into it

    // Merges each dim into the next inner one where both tile and output are contiguous across
    // them, so that runs are as long as the memory allows (all of a RoPE tile's rows, in neox).
    void coalesce() {
        int kept = 0;
        for (int d = 0; d < rank; d++) {
            Dim *outer = kept ? &dims[kept - 1] : nullptr, &next = dims[d];
            if (outer && outer->out_stride == next.out_stride * next.extent &&
                outer->in_stride == next.in_stride * next.extent) {
                *outer = {outer->extent * next.extent, next.in_stride, next.out_stride};
            } else {
                dims[kept++] = next;
            }
        }
        rank = kept;
    }

    // After sorting by output stride, the run's dims are the last ones.
    void plan() {
        if (rank == 0) return;
        const Dim &last = dims[rank - 1];
        if (last.out_stride == 1 && last.in_stride == 1) {
            inner = rank - 1;
        } else if (rank >= 2 && last.extent == 2 && last.out_stride == 1 && dims[rank - 2].out_stride == 2 &&
                   dims[rank - 2].in_stride == 1) {
            inner = rank - 2, pair = rank - 1;
        }
    }

    void run(int d, const float *in, float *out) const {
        if (d == rank) {  // element by element
            *out = *in;
            return;
        }
        if (d == inner) {
            const Dim &run = dims[d];
            if (pair >= 0)
                (stream ? stream_interleaved : store_interleaved)(in, in + dims[pair].in_stride, out, run.extent);
            else
                (stream ? stream_run : store_run)(in, out, run.extent);
            return;
        }
        for (int64_t k = 0; k < dims[d].extent; k++)
            run(d + 1, in + k * dims[d].in_stride, out + k * dims[d].out_stride);
    }
};

// The tile's region: `out`'s, cut to the whole output's. (Halide crops a tail tile of an extern
// stage to its full size, past the output's end.)
void region(const halide_buffer_t *out, const halide_buffer_t *whole, int d, int32_t &min, int32_t &extent) {
    min = std::max(out->dim[d].min, whole->dim[d].min);
    int32_t end = std::min(out->dim[d].min + out->dim[d].extent, whole->dim[d].min + whole->dim[d].extent);
    extent = std::max(end - min, 0);
}

}  // namespace

// The store stage of a float32 output: copies the tile `in` into the same region of `out`, the
// tile's crop of `whole`, the kernel's output buffer, whose size decides between the two kinds
// of store.
extern "C" int posattn_store_f32(halide_buffer_t *in, const halide_buffer_t *whole, halide_buffer_t *out) {
    // Never a bounds query: the stage's proxy expression (store_stage.h) answers those.
    if (!in->host || !out->host || out->dimensions > 8) return -1;
    Copy copy;
    copy.stream = kCanStream && whole->size_in_bytes() >= streaming_threshold();
    copy.rank = 0;
    const float *src = reinterpret_cast<const float *>(in->host);
    float *dst = reinterpret_cast<float *>(out->host);
    for (int d = 0; d < out->dimensions; d++) {
        int32_t min, extent;
        region(out, whole, d, min, extent);
        if (extent == 0) return 0;
        // (Halide makes the tile the crop's region; the offsets keep the copy right for any.)
        src += int64_t(min - in->dim[d].min) * in->dim[d].stride;
        dst += int64_t(min - out->dim[d].min) * out->dim[d].stride;
        if (extent > 1) copy.dims[copy.rank++] = {extent, in->dim[d].stride, out->dim[d].stride};
    }
    // Largest output stride outermost: the run's dims come last (an insertion sort of ≤ 8 dims).
    for (int a = 1; a < copy.rank; a++)
        for (int b = a; b > 0 && std::abs(copy.dims[b].out_stride) > std::abs(copy.dims[b - 1].out_stride); b--)
            std::swap(copy.dims[b], copy.dims[b - 1]);
    copy.coalesce();
    copy.plan();
    copy.run(0, src, dst);
    if (copy.stream) stream_fence();
    return 0;
}
