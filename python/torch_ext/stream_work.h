// Calls on CUDA tensors (PyTorch 2.x), queued with hoop's *_stream calls as ProcessGroupNCCL
// queues NCCL's: on a stream of the group's own for the tensors' device (SideStreams), which first
// waits for the work queued on PyTorch's current stream before the call. So the call starts after
// what produced its inputs, the calling thread does not block, and the current stream goes on
// meanwhile: the backward pass computes the next gradients while DDP's buckets are reduced. Copies
// a call needs before it (a contiguous copy, a list joined) are PyTorch ops on the current stream;
// those after it (a list split back) go on the call's stream, right behind it.
//
// StreamWork is the Work of such a call: an event recorded on the call's stream after it. wait()
// makes the caller's current stream wait for that event (no host block; with a timeout, the host
// polls it); the Future is complete at once and carries the event, so DDP's hooks chained on it
// wait on the GPU, not on the host. The tensors are recorded on the call's stream
// (record_stream), so PyTorch's allocator does not hand their memory to other work before the
// call is done with it, whenever the caller drops them. A failure once queued poisons the
// communicator (hoop.h): the next call on the group raises, naming it.
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

// Queues the call (`issue`, given the stream's cudaStream_t) on `side`, a stream of `device` that
// first waits for the current stream's work, with that device current, then `after` (the copies
// back); the tensors are recorded on `side` for the allocator. Throws where hoop refuses the call.
c10::intrusive_ptr<c10d::Work> StartOnStream(int rank, c10d::OpType type, const char* call,
                                             std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
                                             const std::function<void()>& after, const c10::Device& device,
                                             const std::function<hoop_status_t(void* stream)>& issue,
                                             const c10::Stream& side);

// A group's streams for calls on CUDA tensors, from PyTorch's pool: one per device for the
// collectives (kCollectives), which hoop runs in the order they were called; and for sends and
// receives one per device, peer and direction: on one stream, `irecv(prev); send(next)` would hang
// (the send would wait behind the receive on every rank); on streams of their own the two go at
// once, as on the host.
class SideStreams {
 public:
  static constexpr int kCollectives = -1;  // the peer given for the collectives' stream
  c10::Stream Get(const c10::Device& device, int peer, bool recv);

 private:
  std::mutex mu_;
  std::map<std::tuple<int, int, bool>, c10::Stream> streams_;
};

}  // namespace hoop::torch_ext
#else
#define HOOP_TORCH_STREAMS 0
#endif
