// The DeviceQueue (transport/device_queue.h) on CUDA: a non-blocking stream of hoop's own on one
// device, pooled events for its marks, the collectives' device reduction kernels
// (kernels/device_reduce.h), scratch device memory, and CUDA IPC export and mapping. A mapping
// of a peer's allocation is kept (by the allocation's buffer id, which CUDA never reuses, so a
// freed and reallocated address is mapped anew) until the queue ends or the cache fills.
//
// One queue may be used from several threads (communicators share their connections,
// shared_transport.h): every operation holds the queue's lock.
#pragma once

#include <memory>

#include "transport/device_queue.h"

namespace hoop {

// What a communicator hands its transport: CUDA queues where this build has CUDA (the device
// count is asked only when a queue is first made), none otherwise.
DeviceAccess CudaDeviceAccess();

}  // namespace hoop
