// posattn::jit (posattn.hpp): a kernel of this build compiled again at run time by posattn's
// generator executable in a helper process, linked against this library, cached on disk and
// loaded (load_kernel). A helper process, not Halide's in-process JIT: no second LLVM enters the
// caller's process (PoCL brings its own), and the tuner compiles its candidates the same way.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "HalideRuntime.h"
#include "internal.h"

extern char **environ;

namespace posattn {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string &what) { throw Error(Error::Kind::invalid_argument, "posattn.jit: " + what); }

std::string directory_of(const std::string &path) { return path.substr(0, path.rfind('/')); }

// posattn's generator executable: $POSATTN_GENERATORS, or the one beside this library in its build
// (build/posattn_generators) or install (<prefix>/libexec/posattn/).
std::string generator_binary() {
    Dl_info self;
    dladdr(reinterpret_cast<void *>(&generator_binary), &self);
    const std::string lib = directory_of(self.dli_fname);
    const char *given = std::getenv("POSATTN_GENERATORS");
    for (std::string path : {given ? std::string(given) : "", lib + "/posattn_generators",
                             directory_of(lib) + "/libexec/posattn/posattn_generators"})
        if (!path.empty() && access(path.c_str(), X_OK) == 0) return path;
    fail("no posattn_generators executable beside " + lib + " (set POSATTN_GENERATORS to a build's or an install's)");
}

// The CPU target this build's multi-target libraries dispatch to on this machine.
std::string cpu_target() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return "x86-64-linux-avx512_skylake";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "x86-64-linux-avx2-fma-f16c-sse41";
    return "x86-64-linux-sse41";
#else
    return "arm-64-linux";
#endif
}

uint64_t fnv1a(const std::string &bytes, uint64_t hash = 1469598103934665603ull) {
    for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
    return hash;
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs argv, its standard error to err_path; the exit status.
int run(const std::vector<std::string> &argv, const std::string &err_path) {
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int status = posix_spawnp(&pid, args[0], &files, nullptr, args.data(), environ) == 0 ? 0 : -1;
    posix_spawn_file_actions_destroy(&files);
    if (status == 0 && waitpid(pid, &status, 0) < 0) status = -1;
    return status;
}

// The last line of a failed step's standard error, Halide's message.
std::string last_line(const std::string &path) {
    std::istringstream lines(read_file(path));
    std::string line, last = "failed";
    while (std::getline(lines, line))
        if (!line.empty()) last = line;
    const std::string prefix = "Unhandled exception: ";
    return last.rfind(prefix, 0) == 0 ? last.substr(prefix.size()) : last;
}

// Compiles into a folder of its own and moves it into place whole: the cache never holds a part.
void compile(const std::string &entry, const std::string &symbol, const std::vector<std::string> &generator_run,
             bool schedule_given) {
    const std::string root = directory_of(entry);
    std::string work = root + "/.compiling.XXXXXX";
    std::error_code error;
    fs::create_directories(root, error);
    if (!mkdtemp(work.data())) fail("cannot write the cache " + root + " (set POSATTN_JIT_CACHE)");
    std::vector<std::string> argv = generator_run;
    argv.insert(argv.begin() + 6, work);  // after "-o"
    if (run(argv, work + "/stderr") != 0) {
        const std::string why = last_line(work + "/stderr");
        fs::remove_all(work, error);
        const bool schedule = schedule_given && why.find("schedule param") != std::string::npos;
        fail(std::string("argument '") + (schedule ? "schedule_params" : "params") + "': " + why);
    }
    Dl_info self;
    dladdr(reinterpret_cast<void *>(&compile), &self);
    const std::string lib = directory_of(self.dli_fname), cxx = std::getenv("CXX") ? std::getenv("CXX") : "c++";
    if (run({cxx, "-shared", "-o", work + "/" + symbol + ".so", work + "/" + symbol + ".o", "-L" + lib, "-lposattn",
             "-Wl,-rpath," + lib}, work + "/stderr") != 0) {
        const std::string why = last_line(work + "/stderr");
        fs::remove_all(work, error);
        fail("linking the kernel failed: " + why);
    }
    for (const char *made : {".o", ".h"}) fs::remove(work + "/" + symbol + made, error);
    fs::remove(work + "/stderr", error);
    fs::rename(work, entry, error);
    if (error) fs::remove_all(work, error);  // another process's came first
}

}  // namespace

std::string jit(const std::string &function, const JitOptions &options) {
    check_device(options.device);
    const std::string family = options.device == "cpu" ? detail::kCpuFamily : options.device;
    const detail::BuiltKernel *built = detail::kBuiltKernels;
    while (built->function && (function != built->function || family != built->family)) built++;
    if (!built->function) fail("argument 'function' is '" + function + "', which this build has no '" + options.device + "' kernel of");
    std::map<std::string, std::string> params;
    std::istringstream lines(built->params);
    for (std::string line; std::getline(lines, line);) params[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
    for (const auto &[name, value] : options.params) params[name] = value;
    if (options.schedule_params) params["schedule_params"] = *options.schedule_params;
    std::string target = cpu_target();
    for (const detail::JitTarget *t = detail::kJitTargets; options.device != "cpu" && t->device; t++)
        if (options.device == t->device) target = t->target;

    const std::string binary = generator_binary();
    std::vector<std::string> run{binary, "-g", built->generator, "-f", "", "-o", "-e", "object",
                                 target + "-user_context-large_buffers-no_runtime"};
    std::string key_text = read_file(binary) + "\n" + std::to_string(HALIDE_VERSION_MAJOR) + "." +
                           std::to_string(HALIDE_VERSION_MINOR) + "." + std::to_string(HALIDE_VERSION_PATCH);
    for (const std::string &arg : run) key_text += "\n" + arg;
    for (const auto &[name, value] : params) key_text += "\n" + name + "=" + value;
    char key[33];
    std::snprintf(key, sizeof key, "%016llx%016llx", (unsigned long long)fnv1a(key_text),
                  (unsigned long long)fnv1a(key_text, 0xcbf29ce484222325ull ^ 0x9e3779b97f4a7c15ull));
    const std::string symbol = std::string("posattn_jit_") + key, schedule = "jit_" + std::string(key, 16);
    if (detail::find_kernel(function, CallOptions{schedule, options.device})) return schedule;  // loaded before

    const char *cache = std::getenv("POSATTN_JIT_CACHE"), *xdg = std::getenv("XDG_CACHE_HOME"), *home = std::getenv("HOME");
    const std::string entry = (cache ? std::string(cache) : (xdg ? std::string(xdg) : std::string(home ? home : "/tmp") + "/.cache") +
                               "/posattn/jit") + "/" + key;
    run[4] = symbol;
    run.back() = "target=" + run.back();
    for (const auto &[name, value] : params) run.push_back(name + "=" + value);
    if (!fs::exists(entry + "/" + symbol + ".so")) compile(entry, symbol, run, options.schedule_params.has_value());
    load_kernel(entry + "/" + symbol + ".so", symbol, function, schedule, options.device);
    return schedule;
}

}  // namespace posattn
