// Schedule parameters as text: "name:value,name:value" (gengen takes one '=' per argument). Every params struct lists its fields
// through fields(visit); a generator's `schedule_params` GeneratorParam overrides the defaults,
// which is how tuned records and tuning experiments reach an AOT or JIT build.
#pragma once

#include <map>
#include <sstream>
#include <string>

#include "Halide.h"

namespace posattn {

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
    params.fields([&](const char *name, int &field) {
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
    return params;
}

}  // namespace posattn
