// WakeWatcher (wake_watcher.h).
#include "transport/wake_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace hoop {

WakeWatcher::~WakeWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (control_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(control_, &one, sizeof(one));  // ends a poll under way
  }
  if (thread_.joinable()) thread_.join();
  if (control_ >= 0) ::close(control_);
}

Status WakeWatcher::Arm(const std::vector<int>& fds, std::function<void()> kick) {
  std::lock_guard<std::mutex> lock(mu_);
  if (control_ < 0) {
    control_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (control_ < 0) return ErrnoStatus(Code::kInternal, "eventfd (the wake watcher)", errno);
    thread_ = std::thread([this] { Loop(); });
  }
  fds_ = fds;
  kick_ = std::move(kick);
  armed_ = true;
  ++arms_;
  cv_.notify_one();
  return Status::Ok();
}

void WakeWatcher::Disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return;  // the watcher has kicked already, and polls nothing
  armed_ = false;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(control_, &one, sizeof(one));
}

uint64_t WakeWatcher::kicks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kicks_;
}

void WakeWatcher::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<pollfd> p;
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || armed_; });
    if (stop_) return;
    const uint64_t arm = arms_;
    p.clear();
    for (int fd : fds_) p.push_back({fd, POLLIN, 0});
    p.push_back({control_, POLLIN, 0});
    lock.unlock();
    // No time limit: Disarm, the destructor or news end it. A failed poll (EINTR) counts as
    // news: one early wake is harmless, a missed one is not.
    const int n = ::poll(p.data(), p.size(), -1);
    bool news = n < 0;
    for (size_t i = 0; i + 1 < p.size(); ++i) news |= p[i].revents != 0;
    if (p.back().revents != 0) {
      uint64_t drained;
      [[maybe_unused]] const ssize_t r = ::read(control_, &drained, sizeof(drained));
    }
    lock.lock();
    if (arms_ != arm || !armed_) continue;  // re-armed meanwhile (poll for that sleep), or disarmed
    if (news) {
      kick_();
      ++kicks_;
      armed_ = false;  // one kick per sleep; the descriptors may stay readable until Poll reads them
    }
    // Else the control descriptor spoke for a Disarm that came before this arm: poll again.
  }
}

}  // namespace hoop
