// StreamOrder (stream_order.h).
#include "collectives/stream_order.h"

#include <limits>

#include "common/device.h"

namespace hoop {

StreamOrder::~StreamOrder() {
  // Nothing is left to run (the communicator drained its queue): let every held stream go. The
  // host functions still queued keep the counter alive themselves.
  released_->store(std::numeric_limits<uint64_t>::max(), std::memory_order_release);
  released_->notify_all();
  CudaStreamDestroy(staging_);
}

void StreamOrder::HoldUntilReleased(void* arg) {
  std::unique_ptr<Hold> h(static_cast<Hold*>(arg));
  for (uint64_t now = h->released->load(std::memory_order_acquire); now < h->seq;
       now = h->released->load(std::memory_order_acquire))
    h->released->wait(now, std::memory_order_acquire);
}

StatusOr<StreamTicket> StreamOrder::Enter(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  StreamTicket t;
  t.stream = stream;
  HOOP_ASSIGN_OR_RETURN(t.ready, CudaEventCreate(false));
  auto undo = [&](const Status& s) {
    CudaEventDestroy(t.ready);
    return s;
  };
  if (Status s = CudaEventRecord(t.ready, stream); !s.ok()) return undo(s);
  t.seq = next_ + 1;
  auto hold = std::make_unique<Hold>(Hold{released_, t.seq});
  if (Status s = CudaLaunchHostFunc(stream, &StreamOrder::HoldUntilReleased, hold.get()); !s.ok()) return undo(s);
  hold.release();  // the host function owns it now
  next_ = t.seq;
  return t;
}

Status StreamOrder::WaitInput(const StreamTicket& t, void* on) { return CudaStreamWaitEvent(on, t.ready); }

Status StreamOrder::WaitInputHere(const StreamTicket& t) { return CudaEventSync(t.ready); }

void StreamOrder::Release(const StreamTicket& t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (released_->load(std::memory_order_acquire) < t.seq) {
    released_->store(t.seq, std::memory_order_release);
    released_->notify_all();
  }
  CudaEventDestroy(t.ready);
}

StatusOr<void*> StreamOrder::Staging(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (staging_ != nullptr && staging_device_ == device) return staging_;
  HOOP_ASSIGN_OR_RETURN(void* s, CudaStreamCreate(device));
  CudaStreamDestroy(staging_);
  staging_ = s;
  staging_device_ = device;
  return s;
}

}  // namespace hoop
