// A collective ordered on a caller's CUDA stream, the way ncclAllReduce is: it starts after the
// work queued before it on that stream, and work queued after it waits for it, while the calling
// thread returns at once.
//
// At the call (Enter, on the caller's thread, in the communicator's queue order) an event is
// recorded on the stream (the input is ready when it fires), and a host function is queued behind
// it that holds the stream until this communicator's release counter reaches the operation's
// sequence number. The worker thread runs the operation: its staging copies wait for the event on
// hoop's own non-blocking stream (never the caller's, never the legacy default stream, which would
// wait for the held stream in turn), and when the operation is over, failed or not, Release
// publishes the number and the caller's stream goes on. Operations finish in queue order, so one
// counter serves them all. A failure poisons the communicator, as for any call: the next call says
// why (the stream is released all the same; what it then reads of the output is undefined, as
// after a failed NCCL call).
//
// While a stream is held nothing on the way to its release may allocate or free CUDA memory:
// those calls synchronise the device, which waits for the held stream (the first GPU run hung on
// exactly that, a pinned staging buffer allocated for a call on a stream). So the hold needs no
// memory of CUDA's (the counter is ordinary memory, shared with the queued host functions so that
// it outlives the communicator if need be), and calls on a stream stage through pageable host
// memory (device_staging.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "common/status.h"

namespace hoop {

struct StreamTicket {
  uint64_t seq = 0;       // released once the counter reaches it
  void* ready = nullptr;   // event: the input is ready
  void* stream = nullptr;  // the caller's stream
};

class StreamOrder {
 public:
  StreamOrder() = default;
  // Releases every stream still held.
  ~StreamOrder();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  // At the call: marks the input ready point and holds `stream` from here until Release.
  StatusOr<StreamTicket> Enter(void* stream);
  // On the worker: makes `on` (hoop's stream) wait for the ticket's input; or waits on this thread.
  Status WaitInput(const StreamTicket& t, void* on);
  Status WaitInputHere(const StreamTicket& t);
  // On the worker, when the operation is over (whatever its result): the stream goes on.
  void Release(const StreamTicket& t);
  // hoop's own non-blocking stream on `device`, for staging copies (made on first use).
  StatusOr<void*> Staging(int device);

 private:
  using Counter = std::atomic<uint64_t>;
  struct Hold {
    std::shared_ptr<Counter> released;
    uint64_t seq;
  };
  static void HoldUntilReleased(void* hold);  // the host function, on CUDA's thread

  std::mutex mu_;
  std::shared_ptr<Counter> released_ = std::make_shared<Counter>(0);
  uint64_t next_ = 0;
  void* staging_ = nullptr;
  int staging_device_ = -1;
};

}  // namespace hoop
