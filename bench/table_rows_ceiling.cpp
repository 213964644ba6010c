// The ceiling of the trig x + PE kernels' memory pattern on this machine, written by hand: each
// row of x [65536, 1024] plus the angle sum of a row of a high and of a low (sin, cos) table
// (generators/trig.h PositionSplit), with non-temporal stores, on two threads, against a
// non-temporal copy of the same bytes (the benchmark's copy stream), alternated 11 times.
//   g++ -O2 -march=native -pthread bench/table_rows_ceiling.cpp -o /tmp/ceiling && /tmp/ceiling
// Prints, as medians of the per-pair ratios to the copy: the loop with the benchmark's table
// sizes (random positions in [0, 8190), 7 low bits: 768 KiB of tables), with tables of a few
// rows (positions in [0, 16)), with one row of each (a single position), and without table
// loads (x plus a constant): what the table loads alone cost.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr int kRows = 65536, kChannels = 1024, kPairs = kChannels / 2;
float *x, *out;

struct Tables {
    std::vector<float> high_sin, high_cos, low_sin, low_cos;  // [rows, kPairs] each
    std::vector<int> high, low;                               // each output row's table rows
    bool read = true;                                         // false: no table loads

    Tables(int range, int low_bits) {
        int high_rows = (range >> low_bits) + 1, low_rows = 1 << low_bits;
        for (auto *t : {&high_sin, &high_cos}) t->assign(size_t(high_rows) * kPairs, 0.5f);
        for (auto *t : {&low_sin, &low_cos}) t->assign(size_t(low_rows) * kPairs, 0.25f);
        std::srand(1);
        for (int r = 0; r < kRows; r++) {
            int p = std::rand() % range;
            high.push_back(p >> low_bits), low.push_back(p & (low_rows - 1));
        }
    }
};

void add_rows(const Tables &t, int first, int last) {
    const __m512i even = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i odd = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    for (int r = first; r < last; r++) {
        const float *hs = &t.high_sin[size_t(t.high[r]) * kPairs], *hc = &t.high_cos[size_t(t.high[r]) * kPairs];
        const float *ls = &t.low_sin[size_t(t.low[r]) * kPairs], *lc = &t.low_cos[size_t(t.low[r]) * kPairs];
        const float *xr = x + size_t(r) * kChannels;
        float *o = out + size_t(r) * kChannels;
        for (int i = 0; i < kPairs; i += 16) {
            __m512 sin = _mm512_set1_ps(0.5f), cos = sin;
            if (t.read) {  // sin(a + b), cos(a + b)
                __m512 a_s = _mm512_loadu_ps(hs + i), a_c = _mm512_loadu_ps(hc + i);
                __m512 b_s = _mm512_loadu_ps(ls + i), b_c = _mm512_loadu_ps(lc + i);
                sin = _mm512_fmadd_ps(a_s, b_c, _mm512_mul_ps(a_c, b_s));
                cos = _mm512_fmsub_ps(a_c, b_c, _mm512_mul_ps(a_s, b_s));
            }
            _mm512_stream_ps(o + 2 * i, _mm512_add_ps(_mm512_loadu_ps(xr + 2 * i), _mm512_permutex2var_ps(sin, even, cos)));
            _mm512_stream_ps(o + 2 * i + 16, _mm512_add_ps(_mm512_loadu_ps(xr + 2 * i + 16), _mm512_permutex2var_ps(sin, odd, cos)));
        }
    }
    _mm_sfence();
}

void copy_rows(const Tables &, int first, int last) {
    for (size_t e = size_t(first) * kChannels; e < size_t(last) * kChannels; e += 16)
        _mm512_stream_ps(out + e, _mm512_loadu_ps(x + e));
    _mm_sfence();
}

double seconds(void (*rows)(const Tables &, int, int), const Tables &t) {
    auto start = std::chrono::steady_clock::now();
    std::thread other([&] { rows(t, 0, kRows / 2); });
    rows(t, kRows / 2, kRows);
    other.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main() {
    x = static_cast<float *>(std::aligned_alloc(64, size_t(kRows) * kChannels * 4));
    out = static_cast<float *>(std::aligned_alloc(64, size_t(kRows) * kChannels * 4));
    std::fill(x, x + size_t(kRows) * kChannels, 1.0f);
    std::fill(out, out + size_t(kRows) * kChannels, 0.0f);
    struct Case {
        const char *name;
        Tables tables;
    };
    std::vector<Case> cases{{"tables of [0, 8190), 7 low bits", Tables(8190, 7)},
                            {"tables of [0, 16), 2 low bits", Tables(16, 2)},
                            {"one row of each table", Tables(1, 0)},
                            {"no table loads", Tables(1, 0)}};
    cases.back().tables.read = false;
    for (Case &c : cases) {
        std::vector<double> ratios;
        for (int pair = 0; pair < 11; pair++) {
            double copy = seconds(copy_rows, c.tables);
            ratios.push_back(copy / seconds(add_rows, c.tables));
        }
        std::sort(ratios.begin(), ratios.end());
        std::printf("%-34s %5.1f%% of the copy\n", c.name, 100 * ratios[ratios.size() / 2]);
    }
}
