// StreamOrder (stream_order.h).
#include "collectives/stream_order.h"

#include <limits>

#include "common/device.h"

namespace hoop {

StreamOrder::StreamOrder(LaunchHostFn launch) : launch_(launch != nullptr ? launch : &CudaLaunchHostFunc) {}

StreamOrder::~StreamOrder() {
  // Nothing is left to run (the communicator drained its queue): let every held stream go. The
  // host functions still queued keep the counter alive themselves.
  released_->store(std::numeric_limits<uint64_t>::max(), std::memory_order_release);
  released_->notify_all();
}

void StreamOrder::HoldUntilReleased(void* arg) {
  std::unique_ptr<Hold> h(static_cast<Hold*>(arg));
  {
    std::lock_guard<std::mutex> lock(h->signal->mu);
    h->signal->input_ready = true;
  }
  h->signal->cv.notify_all();
  for (uint64_t now = h->released->load(std::memory_order_acquire); now < h->seq;
       now = h->released->load(std::memory_order_acquire))
    h->released->wait(now, std::memory_order_acquire);
}

StatusOr<StreamTicket> StreamOrder::Enter(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  StreamTicket t;
  t.seq = next_ + 1;
  t.signal = std::make_shared<StreamSignal>();
  auto hold = std::make_unique<Hold>(Hold{released_, t.signal, t.seq});
  HOOP_RETURN_IF_ERROR(launch_(stream, &StreamOrder::HoldUntilReleased, hold.get()));
  hold.release();  // the host function owns it now
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

void StreamOrder::Release(const StreamTicket& t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (released_->load(std::memory_order_acquire) < t.seq) {
    released_->store(t.seq, std::memory_order_release);
    released_->notify_all();
  }
}

}  // namespace hoop
