// Machine probes for the benchmarks: this machine's FMA peak and its memory streams, measured with
// the same thread count as the kernels, so that every kernel figure can be given as a ratio.
// The streams write with non-temporal stores, as glibc's memcpy does for large sizes and as the
// kernels' x86 twins do (cmake/nontemporal_outputs.py): a copy (read + write) and a fill
// (write only). With ordinary stores each store first reads its line, which would cap a fill at
// half of a copy's bytes moved.
#include <immintrin.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Runs fn(thread_index) on `threads` threads at once; returns the wall time in seconds.
template <typename Fn>
double timed_on_threads(int threads, Fn fn) {
    std::vector<std::thread> pool;
    auto start = Clock::now();
    for (int t = 0; t < threads; t++) pool.emplace_back(fn, t);
    for (auto &th : pool) th.join();
    return std::chrono::duration<double>(Clock::now() - start).count();
}

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec splat(float x) { return _mm512_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline float lane0(Vec a) { return _mm512_cvtss_f32(a); }
inline Vec load(const float *p) { return _mm512_loadu_ps(p); }
inline void stream(float *p, Vec a) { _mm512_stream_ps(p, a); }
#else
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec splat(float x) { return _mm256_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline float lane0(Vec a) { return _mm256_cvtss_f32(a); }
inline Vec load(const float *p) { return _mm256_loadu_ps(p); }
inline void stream(float *p, Vec a) { _mm256_stream_ps(p, a); }
#endif

// Independent FMA chains, enough to cover the FMA latency × the number of FMA pipes.
constexpr int kChains = 12;

float fma_chains(long iterations) {
    Vec acc[kChains];
    for (int c = 0; c < kChains; c++) acc[c] = splat(1.0f + c * 1e-3f);
    const Vec a = splat(0.999999f), b = splat(1e-7f);
    for (long it = 0; it < iterations; it++)
        for (int c = 0; c < kChains; c++) acc[c] = fma(acc[c], a, b);
    float s = 0;
    for (int c = 0; c < kChains; c++) s += lane0(acc[c]);
    return s;
}

// Best of `repeats` runs: the peak is an upper bound, so the fastest run is the estimate.
double fma_peak_gflops(int threads, int repeats, long iterations) {
    std::vector<float> sink(threads);
    double best = 1e30;
    for (int r = 0; r < repeats; r++)
        best = std::min(best, timed_on_threads(threads, [&](int t) { sink[t] = fma_chains(iterations); }));
    volatile float keep = sink[0];
    (void)keep;
    return 2.0 * kLanes * kChains * iterations * threads / best / 1e9;
}

using Array = pybind11::array_t<float, pybind11::array::c_style>;

// Splits [0, n) into `threads` chunks of whole vectors and runs body(begin, end) on each.
template <typename Body>
double split_over_threads(size_t n, int threads, Body body) {
    size_t chunk = n / size_t(threads) / kLanes * kLanes;
    return timed_on_threads(threads, [&](int t) {
        size_t begin = size_t(t) * chunk, end = t + 1 == threads ? n / kLanes * kLanes : begin + chunk;
        body(begin, end);
    });
}

// Non-temporal stores need whole vectors at aligned addresses (bench.py allocates so).
float *aligned(Array &dst) {
    if (reinterpret_cast<uintptr_t>(dst.data()) % sizeof(Vec))
        throw std::invalid_argument("probes: the destination must be aligned to a vector");
    return dst.mutable_data();
}

// One copy pass src → dst; returns seconds.
double stream_copy(const Array &src, Array &dst, int threads) {
    if (src.size() != dst.size()) throw std::invalid_argument("stream_copy: src and dst sizes differ");
    const float *s = src.data();
    float *d = aligned(dst);
    pybind11::gil_scoped_release release;
    return split_over_threads(size_t(src.size()), threads, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; i += kLanes) stream(d + i, load(s + i));
        _mm_sfence();
    });
}

// One fill pass of dst; returns seconds. Pass a nonzero value: stores of zeros run ~40% faster here.
// With runs > 1, dst is rows of `row` elements, each written as `runs` equal runs a vector of each
// in turn: the store pattern of a kernel that writes several parts of a row at once.
double stream_fill(Array &dst, float value, int threads, int runs, size_t row) {
    float *d = aligned(dst);
    size_t n = size_t(dst.size());
    if (runs < 1 || (runs > 1 && (row % (size_t(runs) * kLanes) || n % row)))
        throw std::invalid_argument("stream_fill: rows must split into `runs` runs of whole vectors");
    pybind11::gil_scoped_release release;
    if (runs == 1)
        return split_over_threads(n, threads, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; i += kLanes) stream(d + i, splat(value));
            _mm_sfence();
        });
    size_t rows = n / row, run = row / size_t(runs);
    return timed_on_threads(threads, [&](int t) {
        for (size_t r = rows * t / threads; r < rows * (t + 1) / threads; r++)
            for (size_t j = 0; j < run; j += kLanes)
                for (int k = 0; k < runs; k++) stream(d + r * row + k * run + j, splat(value));
        _mm_sfence();
    });
}

}  // namespace

PYBIND11_MODULE(_probes, m) {
    m.doc() = "Machine probes: FMA peak and memory streams, for benchmark ratios.";
    m.def("fma_peak_gflops", &fma_peak_gflops, pybind11::arg("threads"), pybind11::arg("repeats") = 5,
          pybind11::arg("iterations") = 20'000'000L, pybind11::call_guard<pybind11::gil_scoped_release>());
    m.def("stream_copy", &stream_copy, pybind11::arg("src"), pybind11::arg("dst"), pybind11::arg("threads"));
    m.def("stream_fill", &stream_fill, pybind11::arg("dst"), pybind11::arg("value"), pybind11::arg("threads"),
          pybind11::arg("runs") = 1, pybind11::arg("row") = 0);
    m.attr("vector_isa") = kLanes == 16 ? "avx512" : "avx2";
}
