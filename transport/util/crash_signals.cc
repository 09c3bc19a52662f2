#include "transport/util/crash_signals.h"

#include <dlfcn.h>

#include <cstring>

#include "transport/signals/at_load.h"

namespace hoop {
namespace {

// The libraries whose handlers are taken back (matched on the file's base name).
constexpr const char* kBackEndLibraries[] = {"libucs.",        "libucm.", "libuct.",   "libucp.",
                                             "libinfinipath.", "libpsm",  "libfabric."};

// The signals that end a process by default and that those libraries were seen to catch.
constexpr int kSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM};

void* HandlerOf(const struct sigaction& sa) {
  return (sa.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(sa.sa_sigaction) : reinterpret_cast<void*>(sa.sa_handler);
}

bool InBackEndLibrary(const struct sigaction& sa) {
  if (!(sa.sa_flags & SA_SIGINFO) && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)) return false;
  Dl_info info{};
  if (::dladdr(HandlerOf(sa), &info) == 0 || !info.dli_fname) return false;
  const char* slash = std::strrchr(info.dli_fname, '/');
  const char* base = slash ? slash + 1 : info.dli_fname;
  for (const char* lib : kBackEndLibraries)
    if (std::strncmp(base, lib, std::strlen(lib)) == 0) return true;
  return false;
}

// Runs when libhoop is loaded, after the libraries it depends on have run their constructors.
__attribute__((constructor)) void RestoreAtLoad() { RestoreBackEndSignalsAtLoad(); }

}  // namespace

SignalActions SaveSignalActions() {
  SignalActions s;
  for (int sig : kSignals) {
    struct sigaction sa {};
    if (::sigaction(sig, nullptr, &sa) == 0) s.actions.emplace_back(sig, sa);
  }
  return s;
}

std::vector<int> RestoreBackEndSignals(const SignalActions& before) {
  std::vector<int> restored;
  for (int sig : kSignals) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) != 0 || !InBackEndLibrary(now)) continue;
    struct sigaction back {};
    back.sa_handler = SIG_DFL;
    sigemptyset(&back.sa_mask);
    for (const auto& [s, sa] : before.actions)
      if (s == sig && !InBackEndLibrary(sa)) back = sa;
    if (::sigaction(sig, &back, nullptr) == 0) restored.push_back(sig);
  }
  return restored;
}

std::vector<int> RestoreBackEndSignalsAtLoad() {
  SignalActions at_load;
  for (int sig : kSignals) {
    struct sigaction sa {};
    if (hoop_signal_at_load(sig, &sa)) at_load.actions.emplace_back(sig, sa);
  }
  return RestoreBackEndSignals(at_load);
}

}  // namespace hoop
