#include "transport/device_queue.h"

namespace hoop {

StatusOr<DeviceQueue*> DeviceQueues::Get(int device) {
  if (!available()) return Unimplemented("this back end has no access to device memory");
  if (device < 0) return InvalidArgument("not device memory");
  const size_t d = static_cast<size_t>(device);
  if (queues_.size() <= d) queues_.resize(d + 1);
  if (!queues_[d]) {
    HOOP_ASSIGN_OR_RETURN(queues_[d], access_.make_queue(device));
  }
  return queues_[d].get();
}

StatusOr<DeviceQueue*> DeviceQueues::Any() {
  for (auto& q : queues_)
    if (q) return q.get();
  return Get(0);
}

}  // namespace hoop
