// The registry of compiled kernels (generated from kernels.json) and the generic kernel call.
#include <cstdio>

#include "internal.h"

#include "registry.inc"

namespace posattn {
namespace detail {

const std::vector<KernelEntry> &kernel_table() {
    static const std::vector<KernelEntry> table(std::begin(kKernelTable), std::end(kKernelTable));
    return table;
}

KernelCall::KernelCall(const std::string &function, const CallOptions &call) {
    std::string known;
    for (const KernelEntry &e : kernel_table()) {
        if (function != e.function || std::string(e.family) != kCpuFamily) continue;
        if (call.schedule == e.schedule) entry_ = &e;
        known += (known.empty() ? "" : ", ") + std::string(e.schedule);
    }
    if (!entry_)
        throw Error(Error::Kind::unsupported, "posattn: no kernel " + function + "." + kCpuFamily + " with schedule '" +
                                                  call.schedule + "' (compiled schedules: " + known + ")");
    user_context_ = this;
    bind("__user_context", &user_context_, halide_type_t(halide_type_handle, 64));
}

KernelCall &KernelCall::bind(const char *name, void *address, halide_type_t type) {
    bound_[name] = {address, type};
    return *this;
}

KernelCall &KernelCall::arg(const char *name, HalideView &view) {
    return bind(name, view.buffer(), view.buffer()->type);
}

void KernelCall::run() {
    const halide_filter_metadata_t *meta = entry_->metadata();
    std::vector<void *> argv(size_t(meta->num_arguments));
    for (int a = 0; a < meta->num_arguments; a++) {
        const halide_filter_argument_t &formal = meta->arguments[a];
        auto it = bound_.find(formal.name);
        if (it == bound_.end() || !(it->second.second == formal.type))
            throw Error(Error::Kind::unsupported, std::string("posattn: kernel ") + entry_->function +
                                                      " expects argument '" + formal.name +
                                                      "', which the runtime did not bind with its type");
        argv[size_t(a)] = it->second.first;
    }
    int status = entry_->argv(argv.data());
    if (status != 0)
        throw Error(Error::Kind::kernel_failed, std::string("posattn: kernel ") + entry_->function + "." +
                                                    entry_->family + " failed (Halide status " +
                                                    std::to_string(status) + "): " + halide_errors);
}

}  // namespace detail

void set_num_threads(int threads) { halide_set_num_threads(threads); }

std::vector<KernelInfo> kernels() {
    std::vector<KernelInfo> list;
    for (const detail::KernelEntry &e : detail::kernel_table())
        list.push_back({std::string(e.function) + "." + e.family, e.function, e.family, e.schedule});
    return list;
}

}  // namespace posattn

// Halide's runtime reports errors here; the user context is the KernelCall in flight.
extern "C" __attribute__((visibility("hidden"))) void halide_error(void *user_context, const char *message) {
    if (user_context)
        static_cast<posattn::detail::KernelCall *>(user_context)->halide_errors += message;
    else
        std::fprintf(stderr, "posattn (Halide runtime): %s", message);
}
