// A collective ordered on a caller's CUDA stream, the way ncclAllReduce is: it starts after the
// work queued before it on that stream, and work queued after it waits for it, while the calling
// thread returns at once.
//
// At the call (Enter, on the caller's thread, in the communicator's queue order) one host function
// is queued on the stream. When the stream reaches it (its earlier work done: the input is ready)
// it tells the worker so, then holds the stream until the call's own release word is set. The
// worker waits for the input, runs the operation and, when it is over, failed or not, Release
// sets the word and the stream goes on. Each call has its own word: a send or receive completes
// when its peer does its part, so calls on different streams end in any order, and one stream
// must never wait for another's call (a receive on one stream while the sends that feed the
// peer's receives go on another). A failure poisons the communicator, as for any call: the next
// call says why (the stream is released all the same; what it then reads of the output is
// undefined, as after a failed NCCL call).
//
// The worker makes no CUDA call between the hold and the release: CUDA calls can wait for the
// held stream. The GPU runs showed two such hangs: pinned memory allocated for the call's staging
// (allocation synchronises the device), and a copy through pageable memory, which queued behind a
// lock of the driver's held by the caller's own pageable copy, itself queued behind the hold.
// Device buffers are therefore staged by copies the caller's thread queues on its stream around
// the hold (stream_staging.h), and the release word is ordinary memory, shared with the queued
// host function so that it outlives the communicator if need be.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"

namespace hoop {

// Between the host function on the caller's stream and hoop's worker.
struct StreamSignal {
  std::mutex mu;
  std::condition_variable cv;
  bool input_ready = false;
  std::atomic<uint32_t> released{0};  // 1: the stream goes on
};

struct StreamTicket {
  uint64_t seq = 0;  // the call's number on this communicator's streams (0: not on a stream)
  std::shared_ptr<StreamSignal> signal;
};

class StreamOrder {
 public:
  // Queues fn(arg) on a stream (CudaLaunchHostFunc; a unit test's fake stream runs it itself).
  using LaunchHostFn = Status (*)(void* stream, void (*fn)(void*), void* arg);
  explicit StreamOrder(LaunchHostFn launch = nullptr);
  // Releases every stream still held.
  ~StreamOrder();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  // At the call: holds `stream` from here until Release, once its earlier work is done.
  StatusOr<StreamTicket> Enter(void* stream);
  // On the worker: waits (no CUDA call) until the stream's work before the call is done.
  Status WaitInput(const StreamTicket& t, Deadline deadline);
  // Whether it is, without waiting.
  static bool InputReady(const StreamTicket& t);
  // When the operation is over (whatever its result): the stream goes on. Any thread, any order;
  // needs only the ticket (a send or receive completes in the mailbox, which may outlive this).
  static void Release(const StreamTicket& t);

 private:
  static void HoldUntilReleased(void* signal);  // the host function, on CUDA's thread

  const LaunchHostFn launch_;
  std::mutex mu_;
  std::vector<std::shared_ptr<StreamSignal>> held_;  // entered, perhaps released (pruned at Enter)
  uint64_t next_ = 0;
};

}  // namespace hoop
