#include "transport/crash_signals.h"

#include <dlfcn.h>
#include <signal.h>

#include <cstring>

namespace hoop {
namespace {

// The libraries whose load-time handlers are taken back (matched on the file's base name).
constexpr const char* kBackEndLibraries[] = {"libucs.", "libucm.", "libuct.", "libucp.",
                                             "libinfinipath.", "libpsm", "libfabric."};

// The signals that end a process by default and that those libraries were seen to catch.
constexpr int kSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM};

bool InBackEndLibrary(void* handler) {
  Dl_info info{};
  if (::dladdr(handler, &info) == 0 || !info.dli_fname) return false;
  const char* slash = std::strrchr(info.dli_fname, '/');
  const char* base = slash ? slash + 1 : info.dli_fname;
  for (const char* lib : kBackEndLibraries)
    if (std::strncmp(base, lib, std::strlen(lib)) == 0) return true;
  return false;
}

// Runs when libhoop is loaded, after the libraries it depends on have run their constructors.
__attribute__((constructor)) void RestoreAtLoad() { RestoreBackEndSignals(); }

}  // namespace

std::vector<int> RestoreBackEndSignals() {
  std::vector<int> restored;
  for (int sig : kSignals) {
    struct sigaction sa {};
    if (::sigaction(sig, nullptr, &sa) != 0) continue;
    void* handler = (sa.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(sa.sa_sigaction)
                                               : reinterpret_cast<void*>(sa.sa_handler);
    if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN || !InBackEndLibrary(handler)) continue;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    if (::sigaction(sig, &dfl, nullptr) == 0) restored.push_back(sig);
  }
  return restored;
}

}  // namespace hoop
