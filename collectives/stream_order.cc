// StreamOrder (stream_order.h).
#include "collectives/stream_order.h"

#include <algorithm>

#include "common/device.h"

namespace hoop {

StreamOrder::StreamOrder(LaunchHostFn launch) : launch_(launch != nullptr ? launch : &CudaLaunchHostFunc) {}

StreamOrder::~StreamOrder() {
  // Nothing is left to run (the communicator drained its queue): let every held stream go. The
  // host functions still queued keep their words alive themselves.
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : held_) Release(StreamTicket{1, s});
}

void StreamOrder::HoldUntilReleased(void* arg) {
  // The host function owns one reference to the signal, given at Enter.
  std::unique_ptr<std::shared_ptr<StreamSignal>> owned(static_cast<std::shared_ptr<StreamSignal>*>(arg));
  StreamSignal& s = **owned;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.input_ready = true;
  }
  s.cv.notify_all();
  while (s.released.load(std::memory_order_acquire) == 0) s.released.wait(0, std::memory_order_acquire);
}

StatusOr<StreamTicket> StreamOrder::Enter(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  // Calls released since the last Enter need no release from the destructor.
  held_.erase(std::remove_if(held_.begin(), held_.end(),
                             [](const auto& s) { return s->released.load(std::memory_order_acquire) != 0; }),
              held_.end());
  StreamTicket t;
  t.seq = next_ + 1;
  t.signal = std::make_shared<StreamSignal>();
  auto owned = std::make_unique<std::shared_ptr<StreamSignal>>(t.signal);
  HOOP_RETURN_IF_ERROR(launch_(stream, &StreamOrder::HoldUntilReleased, owned.get()));
  owned.release();  // the host function owns it now
  held_.push_back(t.signal);
  next_ = t.seq;
  return t;
}

Status StreamOrder::WaitInput(const StreamTicket& t, Deadline deadline) {
  std::unique_lock<std::mutex> lock(t.signal->mu);
  if (deadline.IsNever()) {
    t.signal->cv.wait(lock, [&] { return t.signal->input_ready; });
    return Status::Ok();
  }
  if (!t.signal->cv.wait_until(lock, deadline.at(), [&] { return t.signal->input_ready; }))
    return DeadlineExceeded("the CUDA stream's work queued before the call did not finish in time (HOOP_TIMEOUT)");
  return Status::Ok();
}

bool StreamOrder::InputReady(const StreamTicket& t) {
  std::lock_guard<std::mutex> lock(t.signal->mu);
  return t.signal->input_ready;
}

void StreamOrder::Release(const StreamTicket& t) {
  t.signal->released.store(1, std::memory_order_release);
  t.signal->released.notify_all();
}

}  // namespace hoop
