// ReadyEvents (ready_events.h).
#include "collectives/device/ready_events.h"

#include "common/device.h"

namespace hoop {

ReadyEvents::~ReadyEvents() {
  for (const Ready& r : free_) CudaEventDestroy(r.event);
}

StatusOr<ReadyEvents::Ready> ReadyEvents::Record() {
  HOOP_ASSIGN_OR_RETURN(int device, CudaGetDevice());
  Ready r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < free_.size(); ++i)
      if (free_[i].device == device) {
        r = free_[i];
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
  if (r.event == nullptr) {
    HOOP_ASSIGN_OR_RETURN(r.event, CudaEventCreate(false));  // on the current device
    r.device = device;
  }
  if (Status s = CudaEventRecord(r.event, nullptr); !s.ok()) {
    Give(r);
    return s;
  }
  return r;
}

void ReadyEvents::Give(Ready r) {
  if (r.event == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(r);
}

}  // namespace hoop
