// The kernels' scratch memory (Halide's halide_malloc / halide_free). glibc serves blocks over
// 32 MiB with fresh mmap pages and unmaps them on free, so a kernel whose intermediate buffer is
// that large paid their page faults on every call: DeBERTa attention's per-call key products
// (40 MiB at H = 8, L = 2048, 512 relative rows) took ~90 ms per call with them and ~79 ms
// without (bench: MALLOC_MMAP_THRESHOLD_ raised). Blocks of 1 MiB or more are kept when freed,
// up to 256 MiB in all, and reused by a later allocation they fit with at most twice its size.
#include <cstdlib>
#include <map>
#include <mutex>

#include "internal.h"

namespace posattn::detail {
namespace {

constexpr size_t kAlignment = 128;  // Halide asks for the vector alignment (64 on x86, 32 on ARM)
constexpr size_t kLargeBlock = size_t(1) << 20, kCacheLimit = size_t(256) << 20;

std::mutex cache_mutex;
std::multimap<size_t, void *> cache;  // free large blocks by capacity
size_t cached_bytes = 0;

// A block is [header: its capacity][kAlignment - 8 bytes][the caller's bytes: capacity]; the
// capacity has kAlignment bytes of slack, since Halide may read a little past the end.
void *scratch_malloc(void *, size_t size) {
    size_t capacity = (size + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
    if (capacity < size) return nullptr;  // overflow
    if (capacity >= kLargeBlock) {
        std::lock_guard<std::mutex> lock(cache_mutex);
        auto fit = cache.lower_bound(capacity);
        if (fit != cache.end() && fit->first / 2 <= capacity) {
            void *base = fit->second;
            cached_bytes -= fit->first;
            cache.erase(fit);
            return static_cast<char *>(base) + kAlignment;
        }
    }
    void *base = nullptr;
    if (posix_memalign(&base, kAlignment, capacity + kAlignment) != 0) return nullptr;
    *static_cast<size_t *>(base) = capacity;
    return static_cast<char *>(base) + kAlignment;
}

void scratch_free(void *, void *ptr) {
    if (!ptr) return;
    void *base = static_cast<char *>(ptr) - kAlignment;
    size_t capacity = *static_cast<size_t *>(base);
    if (capacity >= kLargeBlock) {
        std::lock_guard<std::mutex> lock(cache_mutex);
        if (cached_bytes + capacity <= kCacheLimit) {
            cache.emplace(capacity, base);
            cached_bytes += capacity;
            return;
        }
    }
    std::free(base);
}

}  // namespace

void use_scratch_cache() {
    static std::once_flag once;
    std::call_once(once, [] {
        halide_set_custom_malloc(scratch_malloc);
        halide_set_custom_free(scratch_free);
    });
}

}  // namespace posattn::detail
