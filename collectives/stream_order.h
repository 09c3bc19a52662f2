// A collective ordered on a caller's CUDA stream, the way ncclAllReduce is: it starts after the
// work queued before it on that stream, and work queued after it waits for it, while the calling
// thread returns at once.
//
// At the call (Enter, on the caller's thread, in the communicator's queue order) an event is
// recorded on the stream (the input is ready when it fires), and a wait kernel is queued behind
// it that holds the stream until a pinned word of this communicator reaches the operation's
// sequence number (kernels/device_wait.h). The worker thread runs the operation: its staging
// copies wait for the event on hoop's own non-blocking stream (never the caller's, never the
// legacy default stream, which would wait for the held stream in turn), and when the operation is
// over, failed or not, Release publishes the number and the caller's stream goes on. Operations
// finish in queue order, so one word serves them all. A failure poisons the communicator, as
// for any call: the next call says why (the stream is released all the same; what it then reads
// of the output is undefined, as after a failed NCCL call).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "common/status.h"

namespace hoop {

struct StreamTicket {
  uint64_t seq = 0;      // released once the word reaches it
  void* ready = nullptr;  // event: the input is ready
  void* stream = nullptr;  // the caller's stream
};

class StreamOrder {
 public:
  StreamOrder() = default;
  // Releases every stream still held and waits until their wait kernels have seen it.
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
  std::mutex mu_;
  uint64_t* word_ = nullptr;  // pinned: the sequence number released last
  uint64_t next_ = 0;
  std::vector<void*> held_;  // events recorded behind each wait kernel, not yet seen done
  void* staging_ = nullptr;
  int staging_device_ = -1;
};

}  // namespace hoop
