// Calls on CUDA tensors (PyTorch 2.x): queued on PyTorch's current stream of the tensors' device
// with hoop's *_stream calls, as ProcessGroupNCCL queues NCCL's (there on a stream of its own):
// the call starts after the work queued before it, later work on the stream waits for it, and the
// calling thread does not block. Copies a call needs around it (a contiguous copy, a list joined
// or split back) are PyTorch ops on the same stream, queued right before and after it.
//
// StreamWork is the Work of such a call: an event recorded on the stream after it. wait() makes
// the caller's current stream wait for that event (no host block; with a timeout, the host polls
// it); the Future is complete at once and carries the event, so DDP's hooks chained on it wait on
// the GPU, not on the host. The tensors are safe without record_stream: they are used on the
// stream they were made on, and PyTorch's allocator hands their memory only to later work on that
// stream, which waits for the call. A failure once queued poisons the communicator (hoop.h): the
// next call on the group raises, naming it.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/version.h>

// Stream::native_handle (the cudaStream_t) and devices on Futures came with PyTorch 2.
#if TORCH_VERSION_MAJOR >= 2
#define HOOP_TORCH_STREAMS 1
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "hoop/hoop.h"

namespace hoop::torch_ext {

class StreamWork : public c10d::Work {
 public:
  // Records its event on `stream`, after the call and its copies were queued there.
  StreamWork(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
             std::vector<at::Tensor> keep, c10::Stream stream);

  bool isCompleted() override;
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::vector<at::Tensor> outputs_, keep_;
  c10::Stream stream_;
  c10::Event event_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// The device of a call's tensors where they are not on the CPU; every defined tensor must be on
// the same device (the error names the rank and the call).
std::optional<c10::Device> DeviceOfCall(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b, int rank,
                                        const char* call);

// PyTorch's current stream on `device`.
c10::Stream CurrentStream(const c10::Device& device);

// Queues the call (`issue`, given the stream's cudaStream_t) on the current stream of `device`,
// with that device current, then `after` (the copies back); throws where hoop refuses the call.
// `side` (sends and receives): a stream of their own instead, which first waits for the current
// stream's work; the tensors are then recorded on it for the allocator.
c10::intrusive_ptr<c10d::Work> StartOnStream(int rank, c10d::OpType type, const char* call,
                                             std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
                                             const std::function<void()>& after, const c10::Device& device,
                                             const std::function<hoop_status_t(void* stream)>& issue,
                                             const std::optional<c10::Stream>& side);

// The streams of point-to-point calls on CUDA tensors, one per device, peer and direction, from
// PyTorch's pool: on the current stream, `irecv(prev); send(next)` would hang (the send would wait
// behind the receive on every rank); on streams of their own the two go at once, as on the host.
class PeerStreams {
 public:
  c10::Stream Get(const c10::Device& device, int peer, bool recv);

 private:
  std::mutex mu_;
  std::map<std::tuple<int, int, bool>, c10::Stream> streams_;
};

}  // namespace hoop::torch_ext
#else
#define HOOP_TORCH_STREAMS 0
#endif
