#include "transport/peer_watch.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace hoop {

Status PeerWatch::Watch(int peer, int pid) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0)
    return ErrnoStatus(errno == ESRCH ? Code::kUnavailable : Code::kInternal,
                       "watching rank " + std::to_string(peer) + " (pid " + std::to_string(pid) + ")", errno);
  entries_.push_back({peer, pid, Fd(fd)});
  return Status::Ok();
}

std::vector<int> PeerWatch::Exited() {
  std::vector<int> gone;
  for (auto& e : entries_) {
    if (e.reported) continue;
    pollfd p{e.fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      e.reported = true;
      gone.push_back(e.peer);
    }
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

std::string ExitedText(int peer, int pid) {
  return "lost peer " + std::to_string(peer) + " (process " + std::to_string(pid) + " on this host exited)";
}

}  // namespace hoop
