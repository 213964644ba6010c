// Which ISA levels of a multi-target kernel this CPU runs: Halide's runtime asks before a
// kernel's first call. Halide 21 reports avx512_zen4 for one Zen 4 model only (AMD family 0x19,
// model 0x61: not EPYC Genoa's 0x11) and for no Intel CPU (Sapphire Rapids reports
// avx512_sapphirerapids), so the bfloat16 kernels' avx512_zen4 level (kernels.json x86_levels)
// ran nowhere. Here a CPU has that level when CPUID lists the AVX-512 extensions of Zen 4, which
// Sapphire Rapids and later Xeons have too, and the OS saves the AVX-512 registers.
#include <algorithm>
#include <mutex>

#include "HalideRuntime.h"
#include "internal.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#endif

namespace posattn::detail {
namespace {

#if defined(__x86_64__) || defined(_M_X64)
bool has_zen4_avx512() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
    unsigned xcr0_low, xcr0_high;
    __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    if ((xcr0_low & 0xE6) != 0xE6) return false;  // SSE, AVX, opmask and both halves of the ZMM state
    // Leaf 7: F, DQ, IFMA, CD, BW, VL (EBX); VBMI, VBMI2, GFNI, VAES, VPCLMULQDQ, VNNI, BITALG,
    // VPOPCNTDQ (ECX); subleaf 1: BF16 (EAX).
    constexpr unsigned ebx = 1u << 16 | 1u << 17 | 1u << 21 | 1u << 28 | 1u << 30 | 1u << 31;
    constexpr unsigned ecx = 1u << 1 | 1u << 6 | 1u << 8 | 1u << 9 | 1u << 10 | 1u << 11 | 1u << 12 | 1u << 14;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (b & ebx) != ebx || (c & ecx) != ecx) return false;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
}
#else
bool has_zen4_avx512() { return false; }
#endif

int can_use_target_features(int count, const uint64_t *features) {
    constexpr int zen4 = halide_target_feature_avx512_zen4, word = zen4 / 64;
    constexpr uint64_t bit = uint64_t(1) << (zen4 % 64);
    if (count <= word || !(features[word] & bit)) return halide_default_can_use_target_features(count, features);
    static const bool has_zen4 = has_zen4_avx512();
    if (!has_zen4) return 0;
    uint64_t rest[8];  // the level's other features, which Halide's detection knows
    if (count > 8) return 0;
    std::copy(features, features + count, rest);
    rest[word] &= ~bit;
    return halide_default_can_use_target_features(count, rest);
}

}  // namespace

void use_cpu_features() {
    static std::once_flag once;
    std::call_once(once, [] { halide_set_custom_can_use_target_features(can_use_target_features); });
}

}  // namespace posattn::detail
