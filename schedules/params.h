// Schedule parameters as text: "name:value,name:value" (gengen takes one '=' per argument). Every
// params struct lists its fields through fields(visit), each with the choices a tuner searches
// (tune/tune.py; the defaults need not be among them), and may state the constraints between
// fields as `std::string invalid() const` (empty when valid). A generator's `schedule_params`
// GeneratorParam overrides the family's defaults: that is how tuned records (schedules/tuned/)
// and tuning candidates reach a build.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "Halide.h"

namespace posattn {

template <typename Params, typename = void>
struct has_constraints : std::false_type {};
template <typename Params>
struct has_constraints<Params, std::void_t<decltype(std::declval<const Params &>().invalid())>> : std::true_type {};

// The x86 ISA level a target compiles for: each level of a multi-target library is compiled with
// the same schedule_params, and tiles sized for AVX-512's 32 vector registers spill in AVX2's 16.
inline std::string isa_level(const Halide::Target &target) {
    using Halide::Target;
    if (target.arch != Target::X86 || target.has_gpu_feature()) return "";
    if (target.features_any_of({Target::AVX512, Target::AVX512_KNL, Target::AVX512_Skylake, Target::AVX512_Cannonlake,
                                Target::AVX512_SapphireRapids, Target::AVX512_Zen4, Target::AVX512_Zen5}))
        return "avx512";  // (each level names its own feature: avx512_skylake does not set AVX512)
    if (target.has_feature(Target::AVX2)) return "avx2";
    return target.has_feature(Target::SSE41) ? "sse41" : "sse2";
}

// Whether the target has AVX512-BF16's dot products (vdpbf16ps), which Halide emits from the
// AVX512_Zen4 level on (Zen 4 and Sapphire Rapids both have them).
inline bool has_bfloat16_dot_products(const Halide::Target &target) {
    using Halide::Target;
    return target.arch == Target::X86 && !target.has_gpu_feature() &&
           target.features_any_of({Target::AVX512_Zen4, Target::AVX512_SapphireRapids, Target::AVX512_Zen5});
}

// `defaults` (a target family's, schedules/<family>/) overridden by the fields named in `text`.
template <typename Params>
Params parse_schedule_params(const std::string &text, Params params) {
    std::map<std::string, int> given;
    std::stringstream items(text);
    std::string item;
    while (std::getline(items, item, ',')) {
        if (item.empty()) continue;
        auto eq = item.find(':');
        if (eq == std::string::npos)
            throw Halide::CompileError("posattn: schedule_params item '" + item + "' is not name:value");
        given[item.substr(0, eq)] = std::stoi(item.substr(eq + 1));
    }
    params.fields([&](const char *name, int &field, const std::vector<int> &choices) {
        auto it = given.find(name);
        if (it != given.end()) {
            field = it->second;
            given.erase(it);
        }
        // (0 only where a field declares it a choice: the encodings' whole rows)
        if (field < 0 || (field == 0 && std::find(choices.begin(), choices.end(), 0) == choices.end()))
            throw Halide::CompileError(std::string("posattn: schedule parameter '") + name + "' is " +
                                       std::to_string(field) + "; expected a positive value");
    });
    if (!given.empty())
        throw Halide::CompileError("posattn: unknown schedule parameter '" + given.begin()->first + "'");
    if constexpr (has_constraints<Params>::value) {
        std::string why = params.invalid();
        if (!why.empty()) throw Halide::CompileError("posattn: schedule parameters " + text + ": " + why);
    }
    return params;
}

// The version of a params struct's fields: a hash of their names and defaults (the defaults a tuned
// record's times were measured against), 16 hex digits (FNV-1a). A tuned record carries the version
// it was measured for.
template <typename Params>
std::string fields_version(Params params) {
    uint64_t hash = 14695981039346656037ull;
    params.fields([&](const char *name, int &value, const std::vector<int> &) {
        for (char c : std::string(name) + "=" + std::to_string(value) + ";") hash = (hash ^ uint8_t(c)) * 1099511628211ull;
    });
    std::ostringstream text;
    text << std::hex << std::setw(16) << std::setfill('0') << hash;
    return text.str();
}

// As above, for `target`. Tuned records (cmake/tuned_records.cmake) give a group of items per ISA
// level, "isa:avx512,version:<algorithm>.<fields>,name:value,.../isa:avx2,...": each level of a
// multi-target library takes its own group's items, and a level without a group the defaults. A
// group measured for other fields (or other defaults) than these is not built: the defaults are,
// with a warning (the algorithm's version is CMake's to check: kernels.json).
template <typename Params>
Params parse_schedule_params(const Halide::Target &target, const std::string &text, Params defaults) {
    std::stringstream groups(text);
    std::string group, item;
    while (std::getline(groups, group, '/')) {
        std::string rest, isa, version;
        std::stringstream items(group);
        while (std::getline(items, item, ',')) {
            if (item.rfind("isa:", 0) == 0) isa = item.substr(4);
            else if (item.rfind("version:", 0) == 0) version = item.substr(item.find('.') + 1);
            else rest += (rest.empty() ? "" : ",") + item;
        }
        if (!isa.empty() && isa != isa_level(target)) continue;
        if (!version.empty() && version != fields_version(defaults)) {
            std::cerr << "posattn: warning: tuned schedule params '" << group << "' were measured for fields version "
                      << version << ", these are " << fields_version(defaults)
                      << ": built with the defaults (re-measure them: tune/tune.py --remeasure)\n";
            break;
        }
        return parse_schedule_params(rest, defaults);
    }
    return parse_schedule_params("", defaults);
}

}  // namespace posattn
