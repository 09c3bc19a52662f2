// A Handle is the caller's end of one submitted tensor: wait for it, test it, or have a callback
// run when it completes. It completes exactly once, with the tensor's Status: OK when the result
// is in the caller's output buffer, or the reason it never will be (the ranks disagreed, a peer
// was lost, the runtime shut down, ...). Until then the caller's buffers belong to the runtime.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"

namespace hoop::fusion {

// Runs on the runtime's thread (or on the submitting thread, for a call refused at once); it
// must not block, but it may submit more tensors.
using Callback = std::function<void(const Status&)>;

struct HandleState {
  explicit HandleState(std::string n, Callback cb) : name(std::move(n)), callback(std::move(cb)) {}
  const std::string name;
  std::mutex mu;
  std::condition_variable cv;
  bool completing = false;            // status is final; the callback is running or has run
  bool done = false;                  // ... and has returned: what Wait and Test report
  std::atomic<bool> finished{false};  // done, readable without the lock
  Status status;
  Callback callback;
  std::shared_ptr<std::atomic<int>> waiters;  // the runtime's count of threads blocked in Wait
};

// Completes the handle (once; later calls do nothing): sets its status, runs its callback, then
// marks it done, so a waiter that wakes knows the callback has finished.
void Complete(HandleState& h, Status s);
// Completes many at once: every callback runs, then every handle is marked done before any
// waiter is woken, so a thread waiting on them one after another sleeps at most once instead of
// once per handle (on a crowded host each wake-up can cost a context switch).
void CompleteAll(std::vector<std::pair<std::shared_ptr<HandleState>, Status>>& done);

class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<HandleState> s) : s_(std::move(s)) {}
  // Blocks until the tensor completes, or until `deadline` (DeadlineExceeded; the tensor goes on).
  // The runtime itself completes every tensor within HOOP_TIMEOUT of its last rank's
  // submission, so a plain Wait() never hangs on a lost or missing peer.
  Status Wait(Deadline deadline = Deadline::Never()) const;
  bool Test() const;  // completed?
  // Runs `cb` when the tensor completes: at once, on this thread, if it already has (or is
  // completing). Replaces a callback given at submission.
  void OnComplete(Callback cb) const;
  const std::string& name() const;
  bool valid() const { return s_ != nullptr; }

 private:
  std::shared_ptr<HandleState> s_;
};

}  // namespace hoop::fusion
