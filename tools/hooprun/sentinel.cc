#include "tools/hooprun/sentinel.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

namespace hoop::run {
namespace {

constexpr int32_t kDone = 0;  // then +pgid: started, -pgid: reaped

// The sentinel's whole life: async-signal-safe calls only (it is forked from hooprun).
[[noreturn]] void Watch(int rfd) {
  ::setpgid(0, 0);  // not in hooprun's group: a kill of that group leaves it to clean up
  for (int s = 1; s < 32; ++s)
    if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD) ::signal(s, SIG_IGN);
  for (int fd = 0; fd < 1024; ++fd)
    if (fd != rfd) ::close(fd);
  constexpr int kMax = 4096;
  pid_t groups[kMax];
  int n = 0;
  while (true) {
    int32_t word;
    ssize_t got = ::read(rfd, &word, sizeof word);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof word)) break;  // EOF: hooprun is gone
    if (word == kDone) ::_exit(0);
    if (word > 0 && n < kMax) groups[n++] = word;
    for (int i = 0; word < 0 && i < n; ++i)
      if (groups[i] == -word) groups[i] = groups[--n];
  }
  for (int i = 0; i < n; ++i) ::kill(-groups[i], SIGKILL);
  ::_exit(0);
}

}  // namespace

Sentinel::Sentinel() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    std::perror("hooprun: no sentinel (pipe)");
    return;
  }
  pid_t pid = ::fork();
  if (pid == 0) Watch(p[0]);
  ::close(p[0]);
  if (pid < 0) {
    std::perror("hooprun: no sentinel (fork)");
    ::close(p[1]);
    return;
  }
  fd_ = p[1];
}

void Sentinel::Done() {
  Send(kDone);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Sentinel::Started(pid_t pgid) { Send(static_cast<int32_t>(pgid)); }
void Sentinel::Reaped(pid_t pgid) { Send(-static_cast<int32_t>(pgid)); }

void Sentinel::Send(int32_t word) {
  if (fd_ < 0) return;
  while (::write(fd_, &word, sizeof word) < 0 && errno == EINTR) {
  }
}

}  // namespace hoop::run
