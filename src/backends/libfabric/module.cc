#include "backends/libfabric/module.h"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <mutex>
#include <string>

#include "core/error.h"

namespace fabriclab::backends {

namespace {

// libfabric's PSM provider installs signal handlers when it is loaded and when it starts
// (they turn SIGINT into exit 1, or ignore it): the process keeps its own.
class KeepSignals {
 public:
  KeepSignals() {
    for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], nullptr, &saved_[i]);
  }
  ~KeepSignals() {
    for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &saved_[i], nullptr);
  }
  KeepSignals(const KeepSignals&) = delete;
  KeepSignals& operator=(const KeepSignals&) = delete;

 private:
  static constexpr std::array<int, 7> kSignals = {SIGINT, SIGTERM, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
  std::array<struct sigaction, 7> saved_{};
};

exec::NicFactory g_module_open = nullptr;  // the module's open_libfabric_nic

std::unique_ptr<exec::Nic> open_keeping_signals(const std::string& provider, offload::Datatype dt) {
  const KeepSignals keep;
  return g_module_open(provider, dt);
}

}  // namespace

exec::NicFactory load_libfabric_backend() {
  static std::once_flag once;
  static std::string failed;
  std::call_once(once, [] {
    const KeepSignals keep;
    // Beside the binary (the build directory, or wherever both were copied).
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string file = (exe.parent_path() / "libfabriclab_libfabric.so").string();
    void* module = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
      const char* why = dlerror();
      failed = "cannot load the libfabric backend " + file + ": " + (why ? why : "unknown reason") +
               " (it is built beside the fabriclab binary; libfabric1 must be installed: scripts/install-deps.sh)";
      return;
    }
    auto entry = reinterpret_cast<exec::NicFactory (*)()>(dlsym(module, "fabriclab_libfabric_backend"));
    if (!entry) {
      failed = "the libfabric backend " + file + " does not export fabriclab_libfabric_backend: rebuild it";
      return;
    }
    g_module_open = entry();
  });
  if (!g_module_open) throw InputError(failed);
  return &open_keeping_signals;
}

}  // namespace fabriclab::backends
