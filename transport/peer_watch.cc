#include "transport/peer_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hoop {
namespace {

// A process's state letter and start time (clock ticks since boot) from /proc/PID/stat: the
// start time tells the process from a later one that got the same pid. nullopt: no such process
// (or /proc says nothing about it).
struct ProcStat {
  char state = '?';
  unsigned long long start = 0;
};
std::optional<ProcStat> ReadProcStat(int pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  char buf[1024];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf) - 1);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  // "pid (comm) S ppid ..."; comm may hold spaces and parentheses, so look after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ') return std::nullopt;
  ProcStat st;
  st.state = p[2];
  // Fields after the state: ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime priority nice num_threads itrealvalue starttime (the 19th).
  if (p[3] != ' ') return std::nullopt;
  const char* q = p + 4;  // at ppid
  for (int field = 0; field < 18 && q; ++field) {
    q = std::strchr(q, ' ');
    if (q) ++q;
  }
  if (!q) return std::nullopt;
  st.start = std::strtoull(q, nullptr, 10);
  return st;
}

}  // namespace

unsigned long long ProcessStartTime(int pid) {
  auto st = ReadProcStat(pid);
  return st ? st->start : 0;
}

bool ProcessGone(int pid, unsigned long long start) {
  if (pid <= 0) return false;
  auto st = ReadProcStat(pid);
  if (st) return st->state == 'Z' || st->state == 'X' || (start != 0 && st->start != start);
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

bool ProcessStopped(int pid) {
  if (pid <= 0) return false;
  auto st = ReadProcStat(pid);
  return st && (st->state == 'T' || st->state == 't');
}

PeerWatch::PeerWatch(Method method) : method_(method) {}

Status PeerWatch::Watch(int peer, int pid) {
  const std::string who = "watching rank " + std::to_string(peer) + " (pid " + std::to_string(pid) + ")";
  if (method_ == Method::kPidfd) {
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
      entries_.push_back({peer, pid, Fd(fd), 0});
      return Status::Ok();
    }
    if (errno == ESRCH) return ErrnoStatus(Code::kUnavailable, who, errno);
    // Refused (ENOSYS before Linux 5.3 and under valgrind; EPERM or ENOSYS under some seccomp
    // profiles): look at the process instead.
  }
  auto st = ReadProcStat(pid);
  if (!st || st->state == 'Z' || st->state == 'X') {
    if (::kill(pid, 0) == 0 || errno == EPERM) {
      if (!st) {  // alive, but /proc tells nothing: kill(pid, 0) alone then
        entries_.push_back({peer, pid, Fd(), 0});
        return Status::Ok();
      }
    }
    return Unavailable(who + ": the process is gone");
  }
  entries_.push_back({peer, pid, Fd(), st->start});
  return Status::Ok();
}

bool PeerWatch::Gone(const Entry& e) {
  if (e.fd.valid()) {
    pollfd p{e.fd.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
  }
  if (e.start == 0) return ::kill(e.pid, 0) != 0 && errno == ESRCH;
  auto st = ReadProcStat(e.pid);
  return !st || st->state == 'Z' || st->state == 'X' || st->start != e.start;
}

std::vector<int> PeerWatch::Exited() {
  std::vector<int> gone;
  for (auto& e : entries_) {
    if (e.reported || !Gone(e)) continue;
    e.reported = true;
    gone.push_back(e.peer);
  }
  return gone;
}

bool PeerWatch::Due(std::chrono::milliseconds every) {
  auto now = std::chrono::steady_clock::now();
  if (now < next_) return false;
  next_ = now + every;
  return true;
}

int PeerWatch::pid_of(int peer) const {
  for (auto& e : entries_)
    if (e.peer == peer) return e.pid;
  return -1;
}

void DeferredLosses::Add(int peer, const Status& why, std::chrono::milliseconds delay) {
  for (int p : seen_)
    if (p == peer) return;
  seen_.push_back(peer);
  pending_.push_back({peer, why, std::chrono::steady_clock::now() + delay});
}

std::vector<std::pair<int, Status>> DeferredLosses::Due() {
  std::vector<std::pair<int, Status>> due;
  auto now = std::chrono::steady_clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->at <= now) {
      due.emplace_back(it->peer, it->why);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

namespace {
constexpr char kRevokeMark[] = "[hoop revoke] ";
}  // namespace

std::string RevokeNotice(const std::string& message) { return kRevokeMark + message; }

Status LocalAbort(const std::string& cause) {
  if (cause.rfind(kRevokeMark, 0) == 0) return Revoked(cause.substr(sizeof(kRevokeMark) - 1));
  return Aborted(cause);
}

Status PeerAborted(int peer, const std::string& cause) {
  if (cause.rfind(kRevokeMark, 0) == 0) return Revoked(Escaped(cause.substr(sizeof(kRevokeMark) - 1)));
  return Aborted("rank " + std::to_string(peer) + " aborted: " + Escaped(cause));
}

std::string ExitedText(int peer, int pid) {
  return "lost peer " + std::to_string(peer) + " (process " + std::to_string(pid) + " on this host exited)";
}

}  // namespace hoop
