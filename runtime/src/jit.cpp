// posattn::jit (posattn.hpp): a kernel of this build compiled again at run time by posattn's
// generator executable in a helper process, linked against this library, cached on disk and
// loaded (load_kernel). A helper process, not Halide's in-process JIT: no second LLVM enters the
// caller's process (PoCL brings its own).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "HalideRuntime.h"
#include "internal.h"

extern char **environ;

namespace posattn {
namespace {

namespace fs = std::filesystem;

std::mutex jit_mutex;  // one lookup, compile and load at a time (two threads may ask for one kernel)

[[noreturn]] void fail(Error::Kind kind, const std::string &what) { throw Error(kind, "posattn.jit: " + what); }
[[noreturn]] void refuse(const std::string &what) { fail(Error::Kind::invalid_argument, what); }
[[noreturn]] void unavailable(const std::string &what) { fail(Error::Kind::unsupported, what); }

std::string directory_of(const std::string &path) { return path.substr(0, path.rfind('/')); }
bool starts_with(const std::string &s, const std::string &prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string env(const char *name) {
    const char *value = std::getenv(name);
    return value ? value : "";
}

// This library's folder: kernels are linked against it. A static runtime has no file to link them
// against (and a second copy of the runtime would come with them).
std::string library_dir() {
    Dl_info self{};
    const std::string suffix = "/libposattn.so";
    if (!dladdr(reinterpret_cast<void *>(&library_dir), &self) || !self.dli_fname ||
        !ends_with(self.dli_fname, suffix))
        unavailable("needs the shared runtime, libposattn.so (posattn::runtime), not the static one");
    return directory_of(self.dli_fname);
}

// posattn's generator executable: $POSATTN_GENERATORS, or the one beside this library in its build
// (build/posattn_generators) or install (<libexecdir>/posattn/).
std::string generator_binary(const std::string &lib) {
    for (const std::string &path : {env("POSATTN_GENERATORS"), lib + "/posattn_generators",
                                    lib + "/" + detail::kLibexecFromLib + "/posattn/posattn_generators"})
        if (!path.empty() && access(path.c_str(), X_OK) == 0) return path;
    unavailable("no posattn_generators executable beside " + lib + " (set POSATTN_GENERATORS to a build's or an install's)");
}

// $POSATTN_JIT_CACHE, or posattn/jit in the user's cache folder (absolute paths only).
std::string cache_root() {
    if (starts_with(env("POSATTN_JIT_CACHE"), "/")) return env("POSATTN_JIT_CACHE");
    if (starts_with(env("XDG_CACHE_HOME"), "/")) return env("XDG_CACHE_HOME") + "/posattn/jit";
    std::string home = env("HOME");
    if (!starts_with(home, "/"))
        if (const passwd *user = getpwuid(getuid())) home = user->pw_dir;
    if (!starts_with(home, "/")) unavailable("no cache folder: set POSATTN_JIT_CACHE to an absolute path");
    return home + "/.cache/posattn/jit";
}

// The CPU target this build's multi-target libraries dispatch to on this machine
// (CMakeLists.txt's POSATTN_TARGETS, best first).
std::string cpu_target() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return "x86-64-linux-avx512_skylake";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "x86-64-linux-avx2-fma-f16c-sse41";
    return "x86-64-linux-sse41";
#else
    return "arm-64-linux";
#endif
}

std::string target_of(const std::string &device) {
    for (const detail::JitTarget *t = detail::kJitTargets; t->device; t++)
        if (device == t->device) return t->target;
    return cpu_target();
}

const detail::BuiltKernel &built_kernel(const std::string &function, const std::string &device) {
    const std::string_view family = detail::family_of(device);
    for (const detail::BuiltKernel *b = detail::kBuiltKernels; b->function; b++)
        if (function == b->function && family == b->family) return *b;
    refuse("argument 'function' is '" + function + "', which this build has no '" + device + "' kernel of");
}

// The AOT kernel's params, then the caller's over them.
std::map<std::string, std::string> kernel_params(const detail::BuiltKernel &built, const JitOptions &options) {
    std::map<std::string, std::string> params;
    std::istringstream lines(built.params);
    for (std::string line; std::getline(lines, line);) params[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
    for (const auto &[name, value] : options.params) params[name] = value;
    if (options.schedule_params) params["schedule_params"] = *options.schedule_params;
    return params;
}

uint64_t fnv1a(const std::string &bytes, uint64_t hash) {
    for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
    return hash;
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// The cache key of a kernel: the generator's content (read once per binary), the Halide version,
// the generator, its target and params.
std::string cache_key(const std::string &binary, const std::vector<std::string> &arguments) {
    static std::unordered_map<std::string, std::string> contents;  // (under jit_mutex)
    auto known = contents.find(binary);
    if (known == contents.end()) known = contents.emplace(binary, read_file(binary)).first;
    std::string text = known->second;
    text += "\nhalide " + std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
            std::to_string(HALIDE_VERSION_PATCH);
    for (const std::string &arg : arguments) text += "\n" + arg;
    char key[33];
    std::snprintf(key, sizeof key, "%016llx%016llx", (unsigned long long)fnv1a(text, 1469598103934665603ull),
                  (unsigned long long)fnv1a(text, 0x9e3779b97f4a7c15ull));
    return key;
}

// Runs argv with its standard error in err_path; "" when it succeeds, else why not (a failing
// step's last line of standard error: Halide's message).
std::string run(const std::vector<std::string> &argv, const std::string &err_path) {
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    const int spawned = posix_spawnp(&pid, args[0], &files, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    int status = 0;
    if (spawned != 0) return "cannot run " + argv[0] + ": " + std::strerror(spawned);
    if (waitpid(pid, &status, 0) < 0) return "waiting for " + argv[0] + ": " + std::strerror(errno);
    if (WIFSIGNALED(status)) return argv[0] + " was killed by signal " + std::to_string(WTERMSIG(status));
    if (WEXITSTATUS(status) == 0) return "";
    std::istringstream lines(read_file(err_path));
    std::string line, last = argv[0] + " exited with status " + std::to_string(WEXITSTATUS(status));
    while (std::getline(lines, line))
        if (!line.empty()) last = line;
    const std::string prefix = "Unhandled exception: ";
    return starts_with(last, prefix) ? last.substr(prefix.size()) : last;
}

// Compiles symbol into entry/<symbol>.so: in a folder of its own, moved into place whole, so that
// the cache never holds a part (a process that loses the race keeps the other's).
void compile(const std::string &entry, const std::string &symbol, std::vector<std::string> generator_run,
             const std::string &lib, bool schedule_given) {
    std::error_code error;
    fs::create_directories(directory_of(entry), error);
    std::string work = directory_of(entry) + "/.compiling.XXXXXX";
    if (!mkdtemp(work.data())) unavailable("cannot write the cache " + directory_of(entry) + ": " + std::strerror(errno));
    auto give_up = [&](Error::Kind kind, const std::string &why) {
        fs::remove_all(work, error);
        fail(kind, why);
    };
    generator_run.insert(generator_run.begin() + 1, {"-o", work});
    if (std::string why = run(generator_run, work + "/stderr"); !why.empty()) {
        const bool by_schedule = schedule_given && why.find("schedule param") != std::string::npos;
        const bool by_params = why.find("posattn") != std::string::npos || why.find("GeneratorParam") != std::string::npos;
        if (!by_schedule && !by_params) give_up(Error::Kind::kernel_failed, "the generator failed: " + why);
        give_up(Error::Kind::invalid_argument, std::string("argument '") + (by_schedule ? "schedule_params" : "params") + "': " + why);
    }
    const std::string library = work + "/" + symbol + ".so", cxx = env("CXX").empty() ? "c++" : env("CXX");
    if (std::string why = run({cxx, "-shared", "-o", library, work + "/" + symbol + ".o", "-L" + lib, "-lposattn",
                               "-Xlinker", "-rpath", "-Xlinker", lib}, work + "/stderr"); !why.empty())
        give_up(Error::Kind::unsupported, "linking the kernel with " + cxx + " (CXX) failed: " + why);
    for (const std::string made : {".o", ".h"}) fs::remove(work + "/" + symbol + made, error);
    fs::remove(work + "/stderr", error);
    fs::rename(work, entry, error);
    if (error && !fs::exists(entry + "/" + symbol + ".so")) give_up(Error::Kind::unsupported, "cannot write " + entry + ": " + error.message());
    fs::remove_all(work, error);  // (another process's came first)
}

}  // namespace

std::string jit(const std::string &function, const JitOptions &options) {
    check_device(options.device);
    std::lock_guard<std::mutex> lock(jit_mutex);
    const detail::BuiltKernel &built = built_kernel(function, options.device);
    const std::string lib = library_dir(), binary = generator_binary(lib);
    const std::string features = *built.features ? std::string("-") + built.features : "";
    std::vector<std::string> arguments{"-g", built.generator, "-e", "object",
                                       "target=" + target_of(options.device) + features + "-user_context-large_buffers-no_runtime"};
    for (const auto &[name, value] : kernel_params(built, options)) arguments.push_back(name + "=" + value);
    const std::string key = cache_key(binary, arguments), symbol = "posattn_jit_" + key, schedule = "jit_" + key.substr(0, 16);
    if (detail::find_kernel(function, CallOptions{schedule, options.device})) return schedule;  // loaded before

    const std::string entry = cache_root() + "/" + key, library = entry + "/" + symbol + ".so";
    if (!fs::exists(library)) {
        std::vector<std::string> generator_run{binary, "-f", symbol};
        generator_run.insert(generator_run.end(), arguments.begin(), arguments.end());
        compile(entry, symbol, generator_run, lib, options.schedule_params.has_value());
    }
    load_kernel(library, symbol, function, schedule, options.device);
    return schedule;
}

}  // namespace posattn
