// Memory blocks kept when freed, for the next block they fit: the kernels' scratch (Halide's
// halide_malloc / halide_free) and the outputs a binding allocates (allocate_output).
//
// glibc serves blocks over 32 MiB with fresh mmap pages and unmaps them on free, so each call paid
// a page fault per 4 KiB of a large block: DeBERTa attention's per-call key products (40 MiB at
// H = 8, L = 2048, 512 relative rows) took ~90 ms per call with them and ~79 ms without; allocating
// RoPE and x + PE calls ran at 14-25% of the speed of the same call with out= (docs/peers.md).
// Blocks of 1 MiB or more are kept when freed, up to a limit in all, and reused by a later
// allocation they fit with at most twice its size (small scratch blocks: per thread, below); blocks
// of 2 MiB or more ask for transparent huge pages, so that a new one faults once per 2 MiB.
// An app's allocator (set_allocator) replaces all of that for the kernels' scratch.
#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>

#include "internal.h"

namespace posattn {
namespace {

constexpr size_t kAlignment = 128;  // Halide asks for the vector alignment (64 on x86, 32 on ARM)
constexpr size_t kKeptFrom = size_t(1) << 20, kHugePage = size_t(2) << 20;

// An app's allocator, kept for good once set: its blocks name it, and one set before may still own
// blocks in flight.
struct Allocator {
    Allocate allocate;
    Release release;
    void *context;
};
std::atomic<const Allocator *> app_allocator{nullptr};

struct Header {
    size_t capacity;
    const Allocator *owner;  // nullptr: posattn's own (posix_memalign)
};
static_assert(sizeof(Header) <= kAlignment);

void *with_header(void *base, size_t capacity, const Allocator *owner) {
    *static_cast<Header *>(base) = Header{capacity, owner};
    return static_cast<char *>(base) + kAlignment;
}
// A block's start from the pointer its caller holds, and the header there.
void *base_of(void *ptr) { return static_cast<char *>(ptr) - kAlignment; }
const Header &header_at(void *base) { return *static_cast<const Header *>(base); }

class BlockCache {
public:
    explicit BlockCache(size_t limit) : limit_(limit) {}

    // A block is [header: its capacity, its allocator][kAlignment - 16 bytes][the caller's bytes:
    // capacity]; the capacity has kAlignment bytes of slack, since Halide may read a little past the end.
    void *allocate(size_t size) {
        size_t capacity = (size + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
        if (capacity < size) return nullptr;  // overflow
        if (capacity >= kKeptFrom) {
            std::lock_guard<std::mutex> lock(mutex_);
            auto fit = kept_.lower_bound(capacity);
            if (fit != kept_.end() && fit->first / 2 <= capacity) {
                void *base = fit->second;
                kept_bytes_ -= fit->first;
                kept_.erase(fit);
                return static_cast<char *>(base) + kAlignment;
            }
        }
        const bool huge = capacity + kAlignment >= kHugePage;
        void *base = nullptr;
        if (posix_memalign(&base, huge ? kHugePage : kAlignment, capacity + kAlignment) != 0) return nullptr;
        if (huge) madvise(base, capacity + kAlignment, MADV_HUGEPAGE);  // advice only: may be refused
        return with_header(base, capacity, nullptr);
    }

    void release(void *ptr) {
        if (!ptr) return;
        void *base = base_of(ptr);
        size_t capacity = header_at(base).capacity;
        if (capacity >= kKeptFrom) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (kept_bytes_ + capacity <= limit_) {
                kept_.emplace(capacity, base);
                kept_bytes_ += capacity;
                return;
            }
        }
        std::free(base);
    }

    size_t set_limit(size_t limit) {  // returns the previous one
        std::lock_guard<std::mutex> lock(mutex_);
        std::swap(limit, limit_);
        while (kept_bytes_ > limit_) {  // the largest blocks first
            auto largest = std::prev(kept_.end());
            kept_bytes_ -= largest->first;
            std::free(largest->second);
            kept_.erase(largest);
        }
        return limit;
    }

private:
    std::mutex mutex_;
    std::multimap<size_t, void *> kept_;  // free large blocks by capacity
    size_t kept_bytes_ = 0, limit_;
};

// Never destroyed: blocks may be freed after static destructors run (a Python array outliving the module).
BlockCache &scratch_blocks() {
    static auto *blocks = new BlockCache(size_t(256) << 20);
    return *blocks;
}

BlockCache &output_blocks() {
    static auto *blocks = new BlockCache(size_t(1) << 30);
    return *blocks;
}

// Small scratch blocks kept per thread, without a lock: a decoding step's kernel takes a few per
// task on every thread of the pool, and through the cache's lock two threads waited on each other
// (AMD EPYC Zen 3, [1, 8, 1, 64] x 16 keys: 20 us a call uncached, 26 us through the lock).
class ThreadBlocks {
public:
    static constexpr size_t kSmall = size_t(64) << 10;

    void *take(size_t capacity) {
        for (size_t n = 0; n < count_; n++)
            if (header_at(kept_[n]).capacity >= capacity && header_at(kept_[n]).capacity / 2 <= capacity) {
                void *base = kept_[n];
                kept_[n] = kept_[--count_];
                return static_cast<char *>(base) + kAlignment;
            }
        return nullptr;
    }
    bool keep(void *base) {
        if (count_ == kept_.size()) return false;
        kept_[count_++] = base;
        return true;
    }
    ~ThreadBlocks() {
        for (size_t n = 0; n < count_; n++) std::free(kept_[n]);
    }

private:
    std::array<void *, 16> kept_{};
    size_t count_ = 0;
};
thread_local ThreadBlocks thread_blocks;

void *scratch_malloc(void *, size_t size) {
    if (const Allocator *app = app_allocator.load(std::memory_order_acquire)) {
        size_t capacity = size + 2 * kAlignment;  // (the header, and the slack past the end)
        if (capacity < size) return nullptr;
        void *base = app->allocate(app->context, capacity, kAlignment);
        return base ? with_header(base, capacity - kAlignment, app) : nullptr;
    }
    if (size < ThreadBlocks::kSmall)
        if (void *ptr = thread_blocks.take(size + kAlignment)) return ptr;
    return scratch_blocks().allocate(size);
}

void scratch_free(void *, void *ptr) {
    if (!ptr) return;
    void *base = base_of(ptr);
    if (const Allocator *owner = header_at(base).owner) return owner->release(owner->context, base);
    if (header_at(base).capacity < ThreadBlocks::kSmall && thread_blocks.keep(base)) return;
    scratch_blocks().release(ptr);
}

}  // namespace

void *allocate_output(size_t bytes) { return output_blocks().allocate(bytes); }
void free_output(void *data) { output_blocks().release(data); }

size_t set_output_cache(size_t bytes) { return output_blocks().set_limit(bytes); }

void set_allocator(Allocate allocate, Release release, void *context) {
    if (!allocate != !release)
        throw Error(Error::Kind::invalid_argument, std::string("posattn.set_allocator: argument '") + (allocate ? "release" : "allocate") +
                                                       "' is null; expected both functions, or both null for posattn's own");
    app_allocator.store(allocate ? new Allocator{allocate, release, context} : nullptr, std::memory_order_release);
}

namespace detail {

void use_scratch_cache() {
    static std::once_flag once;
    std::call_once(once, [] {
        halide_set_custom_malloc(scratch_malloc);
        halide_set_custom_free(scratch_free);
    });
}

}  // namespace detail
}  // namespace posattn
