// Where a plain call on device memory starts: after the caller's work queued before the call,
// as the plain form promises. That point is an event recorded on the caller's legacy default
// stream at the call (the legacy stream waits for the work on every blocking stream), not when
// hoop's worker gets to the call: by then a call on a stream made after it may hold that stream
// (stream_order.h), and the legacy stream would wait for the hold, which waits for the worker.
// The staging (device_staging.cc, pipelined_staging.h) makes its streams wait for the event.
//
// Events are pooled per device (one is recorded only on a stream of its own device) and reused
// once their call is over.
#pragma once

#include <mutex>
#include <vector>

#include "common/status.h"

namespace hoop {

class ReadyEvents {
 public:
  struct Ready {
    void* event = nullptr;  // null: none recorded (a call that needs none)
    int device = -1;
  };
  ReadyEvents() = default;
  ~ReadyEvents();
  ReadyEvents(const ReadyEvents&) = delete;
  ReadyEvents& operator=(const ReadyEvents&) = delete;

  // Records an event on the calling thread's current device's legacy default stream.
  StatusOr<Ready> Record();
  // Back to the pool, once the call that waited for it is over.
  void Give(Ready r);

 private:
  std::mutex mu_;
  std::vector<Ready> free_;
};

}  // namespace hoop
