// See trace_signal.h.
#include "collectives/core/trace_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

#include "common/logging.h"

namespace hoop {

namespace {

struct Registry {
  std::mutex mu;
  std::map<int, TraceSignal::Dump> dumps;
  int next = 1;
  int pipe_w = -1;          // the handlers' end
  bool handled[NSIG] = {};  // signals whose handler is ours
  bool started = false;     // the dumping thread
};

// Never destroyed: the dumping thread and a late signal may outlive static destruction.
Registry& Reg() {
  static Registry* r = new Registry;
  return *r;
}

int g_pipe_w = -1;  // read by the handler: a plain int, set before any handler is installed

void OnSignal(int) {
  const int saved = errno;
  char b = 1;
  ssize_t ignored = ::write(g_pipe_w, &b, 1);  // nonblocking: a full pipe already holds a request
  (void)ignored;
  errno = saved;
}

void DumpAll(int pipe_r) {
  char buf[64];
  while (true) {
    const ssize_t n = ::read(pipe_r, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& [handle, dump] : r.dumps) {
      const std::string said = dump();
      if (!said.empty()) HOOP_LOG(kWarn, said);
    }
  }
}

// Under the registry's lock: the pipe, the thread and the handler, once each.
bool Install(Registry& r, int sig) {
  if (r.handled[sig]) return true;
  struct sigaction now {};
  if (::sigaction(sig, nullptr, &now) != 0 || now.sa_handler != SIG_DFL || (now.sa_flags & SA_SIGINFO))
    return false;  // the application's (or ignored): not ours to take
  if (r.pipe_w < 0) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
    r.pipe_w = g_pipe_w = fds[1];
    std::thread(DumpAll, fds[0]).detach();
    r.started = true;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (::sigaction(sig, &sa, nullptr) != 0) return false;
  r.handled[sig] = true;
  return true;
}

}  // namespace

int TraceSignal::Register(int sig, Dump dump) {
  if (sig <= 0 || sig >= NSIG) return 0;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!Install(r, sig)) return 0;
  const int handle = r.next++;
  r.dumps.emplace(handle, std::move(dump));
  return handle;
}

void TraceSignal::Unregister(int handle) {
  if (handle == 0) return;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);  // waits for a dump in progress: it may be this one's
  r.dumps.erase(handle);
}

}  // namespace hoop
