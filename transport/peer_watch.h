// PeerWatch: notices that a process on this host has exited. Back ends whose links do not break
// when a peer dies (shared memory; UCX's and libfabric's shared-memory providers) ask it, so a
// killed rank surfaces as an error instead of a hang. It holds a pidfd per peer (Linux 5.3+);
// a pidfd turns readable the moment its process exits, zombie or not.
//
// Where pidfd_open is refused (kernels before 5.3, valgrind, some seccomp profiles) it reads the
// peer's /proc/PID/stat instead, each time it is asked: gone, a zombie, or another process with
// the same pid (a different start time) all count as exited. Without /proc, kill(pid, 0).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "transport/util/socket.h"

namespace hoop {

class PeerWatch {
 public:
  enum class Method { kPidfd, kProcStat };  // kPidfd falls back to kProcStat where refused
  explicit PeerWatch(Method method = Method::kPidfd);
  // Starts watching `pid` as rank `peer`; an error if that process is already gone.
  Status Watch(int peer, int pid);
  // The peers whose processes exited since the last call (each reported once). Cheap enough to
  // call often, but callers rate-limit it with Due().
  std::vector<int> Exited();
  // True at most once per `every`: whether it is time to look again.
  bool Due(std::chrono::milliseconds every = std::chrono::milliseconds(5));
  int pid_of(int peer) const;

 private:
  struct Entry {
    int peer;
    int pid;
    Fd fd;                         // the pidfd, or none: /proc (or kill) instead
    unsigned long long start = 0;  // /proc's start time of the process watched (0: unknown)
    bool reported = false;
  };
  static bool Gone(const Entry& e);
  Method method_;
  std::vector<Entry> entries_;
  std::chrono::steady_clock::time_point next_{};
};

// Peer losses held back a moment, so that an abort notice a dying peer sent first (which names
// the real cause) is read before the loss is reported. Used by the ucx and ofi back ends.
class DeferredLosses {
 public:
  // The first report for a peer counts; later ones are ignored.
  void Add(int peer, const Status& why, std::chrono::milliseconds delay = std::chrono::milliseconds(500));
  // The losses whose delay has passed, each handed out once.
  std::vector<std::pair<int, Status>> Due();
  bool empty() const { return pending_.empty(); }

 private:
  struct Loss {
    int peer;
    Status why;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<Loss> pending_;
  std::vector<int> seen_;
};

// Process `pid`'s start time as /proc gives it (clock ticks since boot; 0 where /proc says
// nothing): with the pid, what tells the process from a later one given the same pid.
unsigned long long ProcessStartTime(int pid);
// Whether process `pid`, started at `start` (0: not known), has exited: no such process, a
// zombie, or another process with its pid. Looks at /proc, else asks kill(pid, 0).
bool ProcessGone(int pid, unsigned long long start);

// Whether process `pid` is stopped (SIGSTOP, a debugger): /proc's state T or t. False where
// /proc says nothing.
bool ProcessStopped(int pid);

// "pid 123 on this host exited" style text for a lost local peer.
std::string ExitedText(int peer, int pid);
// What a peer's abort notice becomes: Aborted("rank N aborted: CAUSE"), the cause escaped; a
// cause made by RevokeNotice becomes Revoked(its message), so the peer's calls fail as revoked.
Status PeerAborted(int peer, const std::string& cause);
// The abort cause that tells peers the communicator was revoked: `message` (which names the rank
// that revoked it and why) behind a mark PeerAborted knows.
std::string RevokeNotice(const std::string& message);
// This rank's own abort with `cause`, as the other communicators over its connections see it:
// Aborted(cause), or Revoked(the message) for a RevokeNotice.
Status LocalAbort(const std::string& cause);

}  // namespace hoop
