// Schedule parameters as text: "name:value,name:value" (gengen takes one '=' per argument). Every
// params struct lists its fields through fields(visit), each with the choices a tuner searches
// (tune/tune.py; the defaults need not be among them), and may state the constraints between
// fields as `std::string invalid() const` (empty when valid). A generator's `schedule_params`
// GeneratorParam overrides the family's defaults: that is how tuned records (schedules/tuned/)
// and tuning candidates reach a build.
#pragma once

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
    params.fields([&](const char *name, int &field, const std::vector<int> &) {
        auto it = given.find(name);
        if (it != given.end()) {
            field = it->second;
            given.erase(it);
        }
        if (field <= 0)
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

}  // namespace posattn
