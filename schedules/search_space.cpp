// Every schedule's search space, for the tuner (tune/tune.py).
//   posattn_search_space                          prints {family: {kind: [{name, default, choices}]}}:
//                                                 each params struct's fields (schedules/cpu/,
//                                                 schedules/gpu/) with the family's default and the
//                                                 choices the struct declares, as JSON;
//   posattn_search_space --versions               prints {family: {kind: version}}: each struct's
//                                                 fields_version() (schedules/params.h), which
//                                                 tuned records carry;
//   posattn_search_space --check FAMILY KIND P    prints why params P (name:value,...) break the
//                                                 struct's constraints (exit status 1), nothing when
//                                                 they hold: the same check a build makes.
#include <iostream>

#include "schedules/attention.h"
#include "schedules/encodings.h"
#include "schedules/floater.h"
#include "schedules/linear.h"
#include "schedules/params.h"
#include "schedules/rope.h"

namespace {

using namespace posattn;

template <typename Params>
std::string space(Params defaults) {
    std::string json = "[";
    defaults.fields([&](const char *name, int &value, const std::vector<int> &choices) {
        json += std::string(json.size() > 1 ? ", " : "") + "{\"name\": \"" + name +
                "\", \"default\": " + std::to_string(value) + ", \"choices\": [";
        for (size_t i = 0; i < choices.size(); i++) json += (i ? ", " : "") + std::to_string(choices[i]);
        json += "]}";
    });
    return json + "]";
}

// visit(family, kind, defaults) for every schedule of every family; a CPU family's attention
// defaults per shape class as the build takes them (cpu_attention_defaults).
template <typename Visit>
void each_schedule(Visit &&visit) {
    auto family = [&](const char *name, auto attention_of, auto encoding, auto encoding_tiled, auto floater, auto linear, auto rope) {
        // Shape classes "", "decode1", "decode", "decode8" and "window" (schedules/attention.h).
        for (std::string cls : {"", "decode1", "decode", "decode8", "window"})
            visit(name, cls.empty() ? std::string("attention") : "attention_" + cls, attention_of(cls));
        visit(name, "encoding", encoding);
        visit(name, "encoding_tiled", encoding_tiled);  // row_tiles (schedules/encodings.h)
        visit(name, "floater", floater);
        visit(name, "linear", linear);
        visit(name, "rope", rope);
    };
    auto cpu = [](const char *target) {
        return [target](const std::string &cls) { return cpu_attention_defaults(Halide::Target(target), cls); };
    };
    for (bool avx512 : {true, false})  // x86 (AVX-512) and x86_avx2: each ISA level's defaults
        family(avx512 ? "x86" : "x86_avx2", cpu(avx512 ? "x86-64-linux-avx512" : "x86-64-linux-avx2"), x86::encoding_defaults(),
               x86::tiled_encoding_defaults(avx512), x86::floater_defaults(), x86::linear_defaults(avx512), x86::rope_defaults());
    family("arm", cpu("arm-64-linux"), arm::encoding_defaults(), arm::tiled_encoding_defaults(), arm::floater_defaults(),
           arm::linear_defaults(), arm::rope_defaults());
    for (bool vulkan : {false, true})  // the GPU schedules, and with Vulkan's own attention tile
        family(vulkan ? "vulkan" : "gpu", [vulkan](const std::string &) { return gpu::attention_defaults(vulkan); },
               gpu::encoding_defaults(), gpu::encoding_defaults(), gpu::floater_defaults(), gpu::linear_defaults(), gpu::rope_defaults());
}

}  // namespace

int main(int argc, char **argv) {
    if (argc == 5 && std::string(argv[1]) == "--check") {
        bool found = false;
        std::string why;
        each_schedule([&](const std::string &family, const std::string &kind, auto defaults) {
            if (family != argv[2] || kind != argv[3]) return;
            found = true;
            try {
                parse_schedule_params(argv[4], defaults);
            } catch (const Halide::CompileError &e) {
                why = e.what();
            }
        });
        if (!found) why = std::string("no schedule '") + argv[3] + "' in family '" + argv[2] + "'";
        if (!why.empty()) std::cout << why << "\n";
        return why.empty() ? 0 : 1;
    }
    const bool versions = argc == 2 && std::string(argv[1]) == "--versions";
    if (argc != 1 && !versions) {
        std::cerr << "usage: posattn_search_space [--versions | --check FAMILY KIND name:value,...]\n";
        return 2;
    }
    std::string json, family_open;
    each_schedule([&](const std::string &family, const std::string &kind, auto defaults) {
        if (family != family_open) {
            json += json.empty() ? "{" : "},\n ";
            json += "\"" + family + "\": {";
            family_open = family;
        } else {
            json += ", ";
        }
        json += "\"" + kind + "\": " + (versions ? "\"" + fields_version(defaults) + "\"" : space(defaults));
    });
    std::cout << json << "}}\n";
}
