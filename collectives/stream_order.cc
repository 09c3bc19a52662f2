// StreamOrder (stream_order.h).
#include "collectives/stream_order.h"

#include <limits>

#include "collectives/kernels/device_wait.h"
#include "common/device.h"

namespace hoop {

StreamOrder::~StreamOrder() {
  if (word_ != nullptr) {
    // Nothing is left to run (the communicator drained its queue): let every held stream go,
    // and keep the word alive until each wait kernel has read it.
    __atomic_store_n(word_, std::numeric_limits<uint64_t>::max(), __ATOMIC_RELEASE);
    for (void* e : held_) {
      (void)CudaEventSync(e);
      CudaEventDestroy(e);
    }
    CudaFree(word_, MemKind::kCudaPinned);
  }
  CudaStreamDestroy(staging_);
}

StatusOr<StreamTicket> StreamOrder::Enter(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (word_ == nullptr) {
    HOOP_ASSIGN_OR_RETURN(void* p, CudaAllocPinned(sizeof(uint64_t)));
    word_ = static_cast<uint64_t*>(p);
    __atomic_store_n(word_, next_, __ATOMIC_RELEASE);
  }
  // Forget the wait kernels that are over.
  for (size_t i = 0; i < held_.size();) {
    auto done = CudaEventDone(held_[i]);
    if (done.ok() && *done) {
      CudaEventDestroy(held_[i]);
      held_[i] = held_.back();
      held_.pop_back();
    } else {
      ++i;
    }
  }
  StreamTicket t;
  t.stream = stream;
  HOOP_ASSIGN_OR_RETURN(t.ready, CudaEventCreate(false));
  auto undo = [&](const Status& s) {
    CudaEventDestroy(t.ready);
    return s;
  };
  if (Status s = CudaEventRecord(t.ready, stream); !s.ok()) return undo(s);
  t.seq = next_ + 1;
  if (Status s = LaunchWaitAtLeast(word_, t.seq, stream); !s.ok()) return undo(s);
  next_ = t.seq;
  auto after = CudaEventCreate(false);
  if (after.ok()) {
    if (CudaEventRecord(*after, stream).ok()) held_.push_back(*after);
    else CudaEventDestroy(*after);
  }
  return t;
}

Status StreamOrder::WaitInput(const StreamTicket& t, void* on) { return CudaStreamWaitEvent(on, t.ready); }

Status StreamOrder::WaitInputHere(const StreamTicket& t) { return CudaEventSync(t.ready); }

void StreamOrder::Release(const StreamTicket& t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (word_ != nullptr && __atomic_load_n(word_, __ATOMIC_ACQUIRE) < t.seq) __atomic_store_n(word_, t.seq, __ATOMIC_RELEASE);
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
