// The registry of compiled kernels (generated from kernels.json) and the generic kernel call.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#include "internal.h"

#include "registry.inc"

// Halide 21's Vulkan allocator also mishandles the reuse of freed regions (upstream PR #9224, after
// the release, fixes two such bugs: a region coalesced with a freed neighbour kept its smaller
// cached buffer; a split could size the kept part below the request). Here the sinusoid, after
// twenty calls of other sizes, read its ω table as zeros on lavapipe, and FLOATER as one kernel
// per stage read wrong stages. So after each Vulkan call the runtime hands the allocator's
// unused blocks back (every device copy of the call is free by then), and the next call starts
// from empty blocks. Weak: cross builds have no Vulkan runtime.
extern "C" __attribute__((weak)) int halide_vulkan_release_unused_device_allocations(void *user_context);
// The contexts device buffers are made in (device_context()), declared here with their handle
// types as void *: HalideRuntimeCuda.h and HalideRuntimeOpenCL.h name the drivers' own types.
extern "C" __attribute__((weak)) int halide_acquire_cl_context(void *user_context, void **context, void **queue, bool create);
extern "C" __attribute__((weak)) int halide_release_cl_context(void *user_context);
extern "C" __attribute__((weak)) int halide_cuda_acquire_context(void *user_context, void **context, bool create);
extern "C" __attribute__((weak)) int halide_cuda_release_context(void *user_context);
extern "C" __attribute__((weak)) int halide_cuda_get_stream(void *user_context, void *context, void **stream);

namespace posattn {

using detail::Checker;
namespace {
constexpr int kMaxThreads = 256;  // Halide's thread pool has at most this many
}  // namespace
namespace detail {

// A quarter of the last-level cache: a larger output could not stay cached for its consumer anyway
// (glibc's memcpy switches to non-temporal stores alike). POSATTN_STREAMING_THRESHOLD: bytes, digits only.
size_t streaming_threshold() {
    static const size_t bytes = [] {
        const char *given = std::getenv("POSATTN_STREAMING_THRESHOLD");
        char *end = nullptr;
        size_t value = given && *given ? size_t(std::strtoull(given, &end, 10)) : 0;
        if (end && *end == '\0') return value;
        long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        return llc > 0 ? size_t(llc) / 4 : size_t(8) << 20;
    }();
    return bytes;
}

int64_t half_l2_bytes() {
    static const int64_t bytes = [] {
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        return l2 > 0 ? int64_t(l2) / 2 : int64_t(512) << 10;
    }();
    return bytes;
}

namespace {
std::mutex loaded_mutex;
std::deque<KernelEntry> loaded;      // entries added by load_kernel
std::deque<std::string> loaded_names;  // the strings they point to

// Every entry by its function, the build's first, then the loaded ones (under loaded_mutex): each
// call looks its kernel up here (comparing the name with every entry's took ~10% of a RoPE call
// at decoding sizes).
std::unordered_map<std::string_view, std::vector<const KernelEntry *>> &entries_by_function() {
    static std::unordered_map<std::string_view, std::vector<const KernelEntry *>> index = [] {
        std::unordered_map<std::string_view, std::vector<const KernelEntry *>> built;
        for (const KernelEntry &e : kKernelTable) built[e.function].push_back(&e);
        return built;
    }();
    return index;
}
}  // namespace

void for_each_kernel(const std::function<void(const KernelEntry &)> &fn) {
    for (const KernelEntry &e : kKernelTable) fn(e);
    std::lock_guard<std::mutex> lock(loaded_mutex);
    for (const KernelEntry &e : loaded) fn(e);
}

const KernelEntry *find_kernel(const std::string &function, const CallOptions &call) {
    const std::string_view family = family_of(call.device);
    std::lock_guard<std::mutex> lock(loaded_mutex);
    auto entries = entries_by_function().find(function);
    if (entries == entries_by_function().end()) return nullptr;
    for (const KernelEntry *e : entries->second)
        if (family == e->family && call.schedule == e->schedule) return e;
    return nullptr;
}

namespace {
// Halide 21's Vulkan allocator rounds region sizes to 32 bytes but conforms them to the driver's
// alignment on a second pass only, so on drivers with 64-byte alignment (lavapipe, RADV) a block
// can be smaller than the regions carved from it: transfers were truncated to whole 64-byte
// blocks and, with four or more buffers, inputs read as zeros (fixed upstream after the release,
// Halide PR #9223). Rounding to 64 bytes from the start, with 1 MiB blocks, avoids it (and the
// staging below keeps every buffer a whole number of 64-byte blocks). The runtime reads this
// setting once, when it creates its allocator; a user's own setting wins.
void configure_vulkan_allocator() {
    // pool size (MiB, 0: unbounded) : minimum block (MiB) : maximum block : block count : multiple
    setenv("HL_VK_ALLOC_CONFIG", "0:1:0:0:64", /*overwrite=*/0);
}
}  // namespace

const KernelEntry &require_kernel(const std::string &function, const CallOptions &call) {
    check_device(call.device);
    if (const KernelEntry *entry = find_kernel(function, call)) return *entry;
    const std::string_view family = family_of(call.device);
    std::string known;
    bool family_built = false;
    for_each_kernel([&](const KernelEntry &e) {
        family_built = family_built || family == e.family;
        if (function == e.function && family == e.family) known += (known.empty() ? "" : ", ") + std::string(e.schedule);
    });
    std::string why = "(compiled schedules: " + known + ")";
    if (!family_built) why = "(this build has no '" + call.device + "' kernels: cross builds have no GPU APIs)";
    else if (known.empty()) why = "(not built for device '" + call.device + "': kernels.json says why)";
    throw Error(Error::Kind::unsupported,
                "posattn: no kernel " + function + "." + std::string(family) + " with schedule '" + call.schedule + "' " + why);
}

bool nothing_to_compute(const Tensor &out, const std::string &function, const CallOptions &call) {
    require_kernel(function, call);
    return out.numel() == 0;
}

KernelCall::KernelCall(const std::string &function, const CallOptions &call) : KernelCall(require_kernel(function, call), call) {}

KernelCall::KernelCall(const KernelEntry &entry, const CallOptions &call) : entry_(&entry) {
    use_scratch_cache();
    use_cpu_features();
    const bool gpu = call.device != "cpu";
    if (call.device == "vulkan") configure_vulkan_allocator();
    for (const DeviceApi *api = kDeviceApis; gpu && api->family; api++)
        if (call.device == api->family) device_ = api->interface();
    user_context_ = this;
    bind("__user_context", &user_context_, halide_type_t(halide_type_handle, 64));
}

void KernelCall::check_room() const {
    if (bound_count_ == kMaxArguments)
        throw Error(Error::Kind::unsupported, std::string("posattn: kernel ") + entry_->function + " bound more than " +
                                                  std::to_string(kMaxArguments) + " arguments");
}

KernelCall &KernelCall::bind(const char *name, void *address, halide_type_t type) {
    check_room();
    bound_[bound_count_++] = {name, address, type};
    return *this;
}

KernelCall &KernelCall::arg(const char *name, HalideView &view) {
    bind(name, view.buffer(), view.buffer()->type);
    bound_[bound_count_ - 1].native_device = view.native_device();
    return *this;
}

void KernelCall::run() {
    const halide_filter_metadata_t *meta = entry_->metadata();
    if (size_t(meta->num_arguments) > kMaxArguments)
        throw Error(Error::Kind::unsupported, std::string("posattn: kernel ") + entry_->function + " has " +
                                                  std::to_string(meta->num_arguments) + " arguments; the runtime binds at most " +
                                                  std::to_string(kMaxArguments));
    Arguments argv{};
    std::array<uint64_t, kMaxArguments> natives{};
    size_t next = 0;  // callers bind mostly in the kernel's order: look there first
    for (int a = 0; a < meta->num_arguments; a++) {
        const halide_filter_argument_t &formal = meta->arguments[a];
        size_t at = 0;
        while (at < bound_count_ && std::strcmp(bound_[(next + at) % bound_count_].name, formal.name)) at++;
        const Bound *found = at < bound_count_ ? &bound_[(next + at) % bound_count_] : nullptr;
        if (!found || !(found->type == formal.type))
            throw Error(Error::Kind::unsupported, std::string("posattn: kernel ") + entry_->function +
                                                      " expects argument '" + formal.name +
                                                      "', which the runtime did not bind with its type");
        next = (next + at + 1) % bound_count_;
        argv[size_t(a)] = found->address;
        natives[size_t(a)] = found->native_device;
        if (found->native_device && !device_)  // (the argument checks say so first)
            throw Error(Error::Kind::invalid_argument, std::string("posattn: argument '") + formal.name +
                                                           "' is device memory; expected host memory on a CPU call");
    }
    int status = device_ ? run_on_device(meta, argv, natives) : cpu_instance(meta, argv)(argv.data());
    // An autoscheduled baseline may compute in tiles larger than a small call's extents (shifted
    // to start before 0), which Halide refuses when it checks the buffers, before any write.
    if (status == halide_error_code_access_out_of_bounds && std::string_view(entry_->schedule) != "hand")
        throw Error(Error::Kind::unsupported,
                    std::string("posattn: schedule '") + entry_->schedule + "' of " + entry_->function +
                        " (an autoscheduled baseline) computes in tiles too large for this call's shape (" + halide_errors +
                        "; Halide counts dimensions from the innermost axis); expected a shape its tiles fit, or "
                        "schedule='hand', which runs every shape");
    if (status != 0)  // (on a GPU API, mostly a driver or device that is absent or fails: named as the device)
        throw Error(Error::Kind::kernel_failed,
                    (device_ ? "posattn: argument 'device' is '" + std::string(entry_->family) + "', where kernel " + entry_->function
                             : "posattn: kernel " + std::string(entry_->function) + "." + entry_->family) +
                        " failed (Halide status " + std::to_string(status) + "): " + halide_errors);
}

// The kernel, or its twin with non-temporal output stores where the outputs are too large to
// stay cached for their consumer anyway (a store then skips reading its line first).
ArgvFunction KernelCall::cpu_instance(const halide_filter_metadata_t *meta, const Arguments &argv) const {
    if (!entry_->nontemporal_argv) return entry_->argv;
    size_t output_bytes = 0;
    for (int a = 0; a < meta->num_arguments; a++)
        if (meta->arguments[a].kind == halide_argument_kind_output_buffer)
            output_bytes += static_cast<const halide_buffer_t *>(argv[size_t(a)])->size_in_bytes();
    return output_bytes >= streaming_threshold() ? entry_->nontemporal_argv : entry_->argv;
}

// Stages every host buffer argument through its own device copy and wraps every device buffer's
// handle, runs the kernel, waits for the device buffers it writes, copies the host outputs back
// and frees the copies (also after a failure); returns the first failing status.
int KernelCall::run_on_device(const halide_filter_metadata_t *meta, Arguments &argv,
                              const std::array<uint64_t, kMaxArguments> &natives) {
    std::deque<DeviceStaging> staged;
    std::vector<halide_buffer_t *> wrapped;
    int status = 0;
    for (int a = 0; a < meta->num_arguments && status == 0; a++) {
        auto *buffer = static_cast<halide_buffer_t *>(argv[size_t(a)]);
        if (meta->arguments[a].kind == halide_argument_kind_input_scalar) continue;
        if (natives[size_t(a)]) {
            status = halide_device_wrap_native(this, buffer, natives[size_t(a)], device_);
            if (status == 0) wrapped.push_back(buffer);
        } else {
            status = staged.emplace_back(buffer, meta->arguments[a].kind == halide_argument_kind_output_buffer).to_device(this, device_);
        }
    }
    if (status == 0) status = entry_->argv(argv.data());
    for (halide_buffer_t *buffer : wrapped) {
        if (status == 0 && buffer->device_dirty()) status = halide_device_sync(this, buffer);
        buffer->set_device_dirty(false);
        int detached = halide_device_detach_native(this, buffer);
        if (status == 0) status = detached;
    }
    for (DeviceStaging &s : staged) status = s.to_host_and_free(this, status);
    if (std::string_view(entry_->family) == "vulkan" && halide_vulkan_release_unused_device_allocations) {
        int released = halide_vulkan_release_unused_device_allocations(this);
        if (status == 0) status = released;
    }
    return status;
}

// Tensors are host memory on every device. Each buffer argument of a GPU kernel gets a device
// copy made here rather than by the kernel: a flat byte buffer of the argument's span rounded up
// to whole 64-byte blocks (with the allocator setting above, what keeps Halide 21's Vulkan copies
// whole on lavapipe), whose device handle the argument then shares, so that outputs come back
// element by element (two output views of one memory must not overwrite each other's elements).
// The copy keeps the argument's strides, unless one is negative (a reversed view): a device
// handle addresses element 0 at its start, so such an argument is staged row-major.
DeviceStaging::DeviceStaging(halide_buffer_t *argument, bool output)
    : argument_(argument), output_(output), own_dims_(argument->dim),
      staged_dims_(argument->dim, argument->dim + argument->dimensions) {
    reversed_ = std::any_of(staged_dims_.begin(), staged_dims_.end(), [](const halide_dimension_t &d) { return d.stride < 0; });
    int64_t elements = 1;
    for (halide_dimension_t &d : staged_dims_) {
        if (reversed_) d.stride = int32_t(elements);  // (< 2^31: the runtime's checks bound every offset)
        elements *= d.extent;
    }
    bytes_ = reversed_ ? size_t(elements) * argument->type.bytes() : argument->size_in_bytes();
    first_ = reversed_ ? 0 : size_t(argument->host - argument->begin());
    host_.resize((bytes_ + 63) / 64 * 64 + (bytes_ == 0 ? 64 : 0));
    dim_ = halide_dimension_t(0, int32_t(host_.size()), 1);
    flat_.host = host_.data();
    flat_.type = halide_type_t(halide_type_uint, 8);
    flat_.dimensions = 1;
    flat_.dim = &dim_;
}

namespace {
// Copies the elements of view b (dimension d and inside) from src, laid out by `from`, to dst,
// laid out by `to`, each pointing at the view's first element; not the bytes between elements,
// which may belong to another view of the same memory (RoPE's rotated and pass-through channels).
void copy_elements(const halide_buffer_t &b, int d, const halide_dimension_t *from, const uint8_t *src,
                   const halide_dimension_t *to, uint8_t *dst) {
    const size_t element = b.type.bytes();
    if (d < 0) return std::memcpy(dst, src, element), void();
    if (d == 0 && from[0].stride == 1 && to[0].stride == 1)
        return std::memcpy(dst, src, size_t(b.dim[0].extent) * element), void();
    const int64_t src_step = int64_t(from[d].stride) * int64_t(element), dst_step = int64_t(to[d].stride) * int64_t(element);
    for (int32_t i = 0; i < b.dim[d].extent; i++) copy_elements(b, d - 1, from, src + i * src_step, to, dst + i * dst_step);
}
}  // namespace

int DeviceStaging::to_device(void *user_context, const halide_device_interface_t *device) {
    argument_->dim = staged_dims_.data();
    // An output is only allocated: every kernel writes each element of its outputs, and only
    // those are copied back (a GPU encoding table's output is its whole traffic).
    int status = 0;
    if (output_) {
        status = halide_device_malloc(user_context, &flat_, device);
    } else {
        if (reversed_) copy_elements(*argument_, argument_->dimensions - 1, own_dims_, argument_->host, staged_dims_.data(), host_.data());
        else if (bytes_) std::memcpy(host_.data(), argument_->host - first_, bytes_);
        flat_.set_host_dirty(true);
        status = halide_copy_to_device(user_context, &flat_, device);
    }
    if (status != 0) return status;
    argument_->device = flat_.device;
    argument_->device_interface = flat_.device_interface;
    argument_->set_host_dirty(false);
    argument_->set_device_dirty(false);
    return 0;
}

int DeviceStaging::to_host_and_free(void *user_context, int status) {
    if (status == 0 && output_ && argument_->device_dirty()) {
        flat_.set_device_dirty(true);
        status = halide_copy_to_host(user_context, &flat_);
        if (status == 0)
            copy_elements(*argument_, argument_->dimensions - 1, staged_dims_.data(), host_.data() + first_, own_dims_, argument_->host);
    }
    argument_->dim = own_dims_;
    argument_->device = 0;
    argument_->device_interface = nullptr;
    argument_->set_device_dirty(false);
    if (flat_.device) halide_device_free(user_context, &flat_);
    return status;
}

// The device interface of a call on a GPU API of this build, for its device buffers.
const halide_device_interface_t *device_interface(const CallOptions &call) {
    for (const DeviceApi *api = kDeviceApis; api->family; api++)
        if (call.device == api->family) return api->interface();
    throw Error(Error::Kind::unsupported, "posattn: this build has no '" + call.device + "' runtime for device buffers");
}

namespace {

// Device tensor t's Halide view with its handle wrapped (status() says whether that worked) and,
// optionally, `host` as its host side; detached again, its dirty bits cleared, when it goes.
class WrappedDevice {
public:
    WrappedDevice(const Tensor &t, bool output, const halide_device_interface_t *interface, void *host = nullptr)
        : view_(t, output) {
        buffer()->host = static_cast<uint8_t *>(host);
        status_ = halide_device_wrap_native(nullptr, buffer(), reinterpret_cast<uint64_t>(t.data), interface);
    }
    WrappedDevice(const WrappedDevice &) = delete;
    WrappedDevice &operator=(const WrappedDevice &) = delete;
    ~WrappedDevice() {
        if (status_ != 0) return;
        buffer()->set_host_dirty(false), buffer()->set_device_dirty(false);
        halide_device_detach_native(nullptr, buffer());
    }
    int status() const { return status_; }
    halide_buffer_t *buffer() { return view_.buffer(); }

private:
    HalideView view_;
    int status_ = 0;
};

// Copies the elements of device tensor t from or to `host`, laid out alike, through t's own
// Halide view (32-bit extents per dimension, where a flat byte view of a span over 2 GiB would
// not fit; the bytes between elements are not copied).
void transfer(const Tensor &t, const CallOptions &call, void *host, bool to_host) {
    const halide_device_interface_t *interface = device_interface(call);
    WrappedDevice view(t, false, interface, host);
    halide_buffer_t *b = view.buffer();
    int status = view.status();
    if (status == 0 && to_host) {
        b->set_device_dirty(true);
        status = halide_copy_to_host(nullptr, b);
    } else if (status == 0) {
        b->set_host_dirty(true);
        status = halide_copy_to_device(nullptr, b, interface);
        if (status == 0) status = halide_device_sync(nullptr, b);
    }
    if (status != 0)
        throw Error(Error::Kind::kernel_failed, "posattn: copying a device buffer " + std::string(to_host ? "to" : "from") +
                                                    " the host failed (Halide status " + std::to_string(status) + ")");
}
}  // namespace

void device_to_host(const Tensor &t, const CallOptions &call, void *host) { transfer(t, call, host, true); }
void host_to_device(const void *host, const Tensor &t, const CallOptions &call) {
    transfer(t, call, const_cast<void *>(host), false);
}

void device_copy(const Tensor &from, const Tensor &to, const CallOptions &call) {
    const halide_device_interface_t *interface = device_interface(call);
    WrappedDevice source(from, false, interface), destination(to, true, interface);
    int status = source.status() != 0 ? source.status() : destination.status();
    if (status == 0) {
        source.buffer()->set_device_dirty(true);
        status = halide_buffer_copy(nullptr, source.buffer(), interface, destination.buffer());
        if (status == 0) status = halide_device_sync(nullptr, destination.buffer());
    }
    if (status != 0)
        throw Error(Error::Kind::kernel_failed, "posattn: copying between device buffers failed (Halide status " +
                                                    std::to_string(status) + ")");
}

}  // namespace detail

void set_num_threads(int64_t threads) {
    if (threads < 0 || threads > kMaxThreads)
        throw Error(Error::Kind::invalid_argument, "posattn.set_num_threads: argument 'threads' is " + std::to_string(threads) +
                                                       "; expected 0 <= threads <= " + std::to_string(kMaxThreads) +
                                                       " (0: one per core)");
    halide_set_num_threads(int(threads));
}

DeviceContext device_context(const std::string &device) {
    check_device(device);
    const bool opencl = device == "opencl" && halide_acquire_cl_context, cuda = device == "cuda" && halide_cuda_acquire_context;
    if (!opencl && !cuda)
        throw Error(Error::Kind::unsupported, "posattn.device_context: argument 'device' is '" + device +
                                                  "'; expected cuda or opencl in a build with GPU APIs");
    // A first allocation through the API loads its driver and creates the context (acquiring the
    // context alone does neither).
    uint8_t byte = 0;
    halide_dimension_t dim(0, 1, 1);
    halide_buffer_t probe{};
    probe.host = &byte, probe.type = halide_type_t(halide_type_uint, 8), probe.dimensions = 1, probe.dim = &dim;
    int status = halide_device_malloc(nullptr, &probe, detail::device_interface(CallOptions{"hand", device}));
    if (status == 0) halide_device_free(nullptr, &probe);
    if (status != 0)
        throw Error(Error::Kind::kernel_failed, "posattn.device_context: argument 'device' is '" + device +
                                                    "', but no such device answers (Halide status " + std::to_string(status) +
                                                    "; is the driver installed?)");
    DeviceContext c;
    if (opencl) {
        status = halide_acquire_cl_context(nullptr, &c.context, &c.queue, true);
        if (status == 0) halide_release_cl_context(nullptr);
    } else {
        status = halide_cuda_acquire_context(nullptr, &c.context, true);
        if (status == 0) {
            status = halide_cuda_get_stream(nullptr, c.context, &c.queue);
            halide_cuda_release_context(nullptr);
        }
    }
    if (status != 0 || !c.context)
        throw Error(Error::Kind::kernel_failed, "posattn.device_context: argument 'device' is '" + device + "', but it gave no context (Halide status " +
                                                    std::to_string(status) + "; is the driver installed?)");
    return c;
}

const std::vector<std::string> &devices() {
    static const std::vector<std::string> names{"cpu", "cuda", "opencl", "vulkan"};
    return names;
}

void check_device(const std::string &device) {
    const std::vector<std::string> &names = devices();
    if (std::find(names.begin(), names.end(), device) == names.end())
        throw Error(Error::Kind::invalid_argument,
                    "posattn: argument 'device' is '" + device + "'; expected cpu, cuda, opencl or vulkan");
}

namespace {
// A kernel may be added as `function` with `schedule` on `device`: a kernel of this build, or one's
// own outside posattn_, not yet there.
void check_new_kernel(const Checker &check, const std::string &function, const std::string &schedule, const std::string &device) {
    bool known = false;
    detail::for_each_kernel([&](const detail::KernelEntry &e) { known = known || function == e.function; });
    if (!known && (function.empty() || function.rfind("posattn_", 0) == 0))
        check.fail("argument 'function' is '" + function +
                   "', which is not a kernel of this build; expected one of kernels(), or a name of one's own outside posattn_");
    check_device(device);
    if (detail::find_kernel(function, CallOptions{schedule, device}))
        check.fail("argument 'schedule': " + function + " already has a schedule '" + schedule + "'");
}

void add_entry(const std::string &function, KernelArgv argv, KernelMetadata metadata, const std::string &schedule,
               const std::string &device) {
    std::lock_guard<std::mutex> lock(detail::loaded_mutex);
    const char *function_name = detail::loaded_names.emplace_back(function).c_str();
    const char *schedule_name = detail::loaded_names.emplace_back(schedule).c_str();
    const char *family = device == "cpu" ? detail::kCpuFamily : detail::loaded_names.emplace_back(device).c_str();
    detail::entries_by_function()[function_name].push_back(
        &detail::loaded.emplace_back(detail::KernelEntry{function_name, family, schedule_name, metadata()->target, argv, metadata}));
}
}  // namespace

void add_kernel(const std::string &function, KernelArgv argv, KernelMetadata metadata, const std::string &schedule,
                const std::string &device) {
    Checker check("add_kernel");
    check_new_kernel(check, function, schedule, device);
    if (!argv || !metadata) check.fail(std::string("argument '") + (argv ? "metadata" : "argv") + "' is null; expected the kernel's entry point");
    add_entry(function, argv, metadata, schedule, device);
}

void load_kernel(const std::string &path, const std::string &symbol, const std::string &function,
                 const std::string &schedule, const std::string &device) {
    Checker check("load_kernel");
    check_new_kernel(check, function, schedule, device);
    // RTLD_LOCAL: the library's kernel symbols stay its own; it takes Halide's runtime from this one.
    // (It stays loaded for good: its kernel may be called at any time.)
    void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) check.fail("argument 'path': " + std::string(dlerror()));
    auto argv = reinterpret_cast<KernelArgv>(dlsym(library, (symbol + "_argv").c_str()));
    auto metadata = reinterpret_cast<KernelMetadata>(dlsym(library, (symbol + "_metadata").c_str()));
    if (!argv || !metadata) {
        dlclose(library);
        check.fail("argument 'symbol': " + path + " has no " + symbol + "_argv and _metadata");
    }
    add_entry(function, argv, metadata, schedule, device);
}

std::vector<KernelInfo> kernels() {
    std::vector<KernelInfo> list;
    detail::for_each_kernel([&](const detail::KernelEntry &e) {
        list.push_back({std::string(e.function) + "." + e.family, e.function, e.family, e.schedule, e.targets});
    });
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
