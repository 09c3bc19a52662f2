// Deadline: an absolute point on the steady clock. Every blocking wait in hoop takes one, so no
// wait is ever unbounded; the communicator's single timeout (HOOP_TIMEOUT) becomes a Deadline at
// the start of each operation.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

namespace hoop {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline After(std::chrono::milliseconds d) { return Deadline(Clock::now() + d); }
  static Deadline AfterSeconds(double s) { return After(std::chrono::milliseconds(static_cast<long long>(s * 1000))); }
  static Deadline Never() { return Deadline(Clock::time_point::max()); }
  static Deadline At(Clock::time_point at) { return Deadline(at); }

  bool Expired() const { return Clock::now() >= at_; }
  bool IsNever() const { return at_ == Clock::time_point::max(); }
  // Milliseconds left, clamped to [0, cap] (for poll/epoll timeouts).
  int RemainingMs(int cap = INT_MAX) const {
    if (IsNever()) return cap;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }
  Clock::time_point at() const { return at_; }
  Deadline Earlier(const Deadline& o) const { return at_ < o.at_ ? *this : o; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// The pause between tries of something that may succeed later (a connect, a key to appear): it
// starts at `first_ms` and doubles up to `cap_ms`, and never sleeps past `deadline`.
class Backoff {
 public:
  Backoff(int first_ms, int cap_ms) : next_ms_(first_ms), cap_ms_(cap_ms) {}
  void Pause(const Deadline& deadline = Deadline::Never()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(deadline.RemainingMs(next_ms_)));
    next_ms_ = std::min(next_ms_ * 2, cap_ms_);
  }
  int next_ms() const { return next_ms_; }  // the next pause's length, before the deadline

 private:
  int next_ms_, cap_ms_;
};

}  // namespace hoop
