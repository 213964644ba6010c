// Machine probes for the benchmarks: the FMA peak and the copy bandwidth of this machine,
// measured with the same thread count as the kernels, so every kernel figure is a ratio.
#include <immintrin.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <cstring>
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

// Independent FMA chains, enough to cover the FMA latency × the number of FMA pipes.
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec splat(float x) { return _mm512_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline float lane0(Vec a) { return _mm512_cvtss_f32(a); }
#else
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec splat(float x) { return _mm256_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline float lane0(Vec a) { return _mm256_cvtss_f32(a); }
#endif
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
double fma_peak_gflops(int threads, int repeats) {
    const long iterations = 20'000'000;
    std::vector<float> sink(threads);
    double best = 1e30;
    for (int r = 0; r < repeats; r++)
        best = std::min(best, timed_on_threads(threads, [&](int t) { sink[t] = fma_chains(iterations); }));
    volatile float keep = sink[0];
    (void)keep;
    return 2.0 * kLanes * kChains * iterations * threads / best / 1e9;
}

// STREAM-style copy: bytes read + bytes written per second, median of `repeats`.
double copy_bandwidth_gbs(size_t bytes, int threads, int repeats) {
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    size_t chunk = bytes / threads;
    std::vector<double> times;
    for (int r = 0; r < repeats + 1; r++) {
        times.push_back(timed_on_threads(threads, [&](int t) {
            std::memcpy(dst.data() + t * chunk, src.data() + t * chunk, chunk);
        }));
    }
    times.erase(times.begin());  // warm-up (page faults)
    std::sort(times.begin(), times.end());
    return 2.0 * chunk * threads / times[times.size() / 2] / 1e9;
}

}  // namespace

PYBIND11_MODULE(_probes, m) {
    m.doc() = "Machine probes: FMA peak and copy bandwidth, for benchmark ratios.";
    m.def("fma_peak_gflops", &fma_peak_gflops, pybind11::arg("threads"), pybind11::arg("repeats") = 5,
          pybind11::call_guard<pybind11::gil_scoped_release>());
    m.def("copy_bandwidth_gbs", &copy_bandwidth_gbs, pybind11::arg("bytes"), pybind11::arg("threads"),
          pybind11::arg("repeats") = 9, pybind11::call_guard<pybind11::gil_scoped_release>());
    m.attr("vector_isa") = kLanes == 16 ? "avx512" : "avx2";
}
