// Prints every schedule's search space as JSON, {family: {kind: [{name, default, choices}]}}: the
// fields of each params struct (schedules/cpu/, schedules/gpu/) with the family's default and the
// choices the struct declares. Read by the tuner (tune/tune.py).
#include <iostream>

#include "schedules/attention.h"
#include "schedules/encodings.h"
#include "schedules/floater.h"
#include "schedules/linear.h"
#include "schedules/rope.h"

namespace {

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

template <typename A, typename E, typename F, typename L, typename R>
std::string family(A attention, E encoding, F floater, L linear, R rope) {
    return "{\"attention\": " + space(attention) + ", \"encoding\": " + space(encoding) + ", \"floater\": " +
           space(floater) + ", \"linear\": " + space(linear) + ", \"rope\": " + space(rope) + "}";
}

}  // namespace

int main() {
    using namespace posattn;
    std::cout << "{\"x86\": "
              << family(x86::attention_defaults(), x86::encoding_defaults(), x86::floater_defaults(),
                        x86::linear_defaults(), x86::rope_defaults())
              << ",\n \"arm\": "
              << family(arm::attention_defaults(), arm::encoding_defaults(), arm::floater_defaults(),
                        arm::linear_defaults(), arm::rope_defaults())
              << ",\n \"gpu\": "
              << family(gpu::attention_defaults(), gpu::encoding_defaults(), gpu::floater_defaults(),
                        gpu::linear_defaults(), gpu::rope_defaults())
              << ",\n \"vulkan\": "  // the GPU schedules with Vulkan's own attention tile
              << family(gpu::attention_defaults(/*vulkan=*/true), gpu::encoding_defaults(), gpu::floater_defaults(),
                        gpu::linear_defaults(), gpu::rope_defaults())
              << "}\n";
}
