// WakeWatcher: one thread sleeps in a back end that only a call can wake (shm, on its futex
// doorbell) while the other back ends' news arrive on file descriptors (tcp's epoll, UCX's event
// descriptor). During each such sleep a thread of the watcher's own polls those descriptors and,
// when one turns readable, makes the call (Transport::Kick) once; then it waits for the next sleep.
//
// Without it a job spanning hosts slept in one back end at a time (MultiTransport took turns,
// 1 ms each), so a message from another host could wait a millisecond for a rank asleep on its
// shm doorbell: a small allreduce over 2 hosts x 2 ranks took hundreds of microseconds.
//
// Arm before the sleep, Disarm after it. A kick that comes as the sleep ends is harmless: the
// back end's next sleep ends at once, one extra turn. The thread starts at the first Arm, so
// transports that never sleep across back ends cost nothing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"

namespace hoop {

class WakeWatcher {
 public:
  WakeWatcher() = default;
  ~WakeWatcher();
  WakeWatcher(const WakeWatcher&) = delete;
  WakeWatcher& operator=(const WakeWatcher&) = delete;

  // Watches `fds` until Disarm: the first time one is readable (at once, if one is now), calls
  // kick(), on the watcher's thread.
  Status Arm(const std::vector<int>& fds, std::function<void()> kick);
  void Disarm();
  // Sleeps the watcher has ended by a kick (for tests and reports).
  uint64_t kicks() const;

 private:
  void Loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool stop_ = false;
  uint64_t arms_ = 0;  // Arm calls so far: a poll answers only the arm it was made for
  uint64_t kicks_ = 0;
  std::vector<int> fds_;
  std::function<void()> kick_;
  int control_ = -1;  // an eventfd: Disarm and the destructor end a poll under way
  std::thread thread_;
};

}  // namespace hoop
