// See stream_work.h.
#include "python/torch_ext/stream_work.h"

#if HOOP_TORCH_STREAMS
#include <ATen/core/jit_type.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <stdexcept>
#include <string>
#include <thread>

namespace hoop::torch_ext {

StreamWork::StreamWork(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                       std::vector<at::Tensor> keep, c10::Stream stream)
    : c10d::Work(rank, type, title),
      outputs_(std::move(outputs)),
      keep_(std::move(keep)),
      stream_(stream),
      event_(stream.device_type()) {
  event_.record(stream_);
}

bool StreamWork::isCompleted() { return event_.query(); }

bool StreamWork::wait(std::chrono::milliseconds timeout) {
  if (timeout != kNoTimeout) {  // the host waits, up to the timeout
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!event_.query()) {
      if (std::chrono::steady_clock::now() >= until)
        throw std::runtime_error("hoop: Work.wait: not complete within " + std::to_string(timeout.count()) + " ms");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
  }
  event_.block(CurrentStream(stream_.device()));
  return true;
}

void StreamWork::synchronize() { event_.block(CurrentStream(stream_.device())); }

c10::intrusive_ptr<c10::ivalue::Future> StreamWork::getFuture() {
  if (!future_) {
    future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::vector<c10::Device>{stream_.device()});
    c10::StreamGuard on(stream_);  // the Future's own events go on the call's stream
    future_->markCompleted(c10::IValue(outputs_));
  }
  return future_;
}

std::optional<c10::Device> DeviceOfCall(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b, int rank,
                                        const char* call) {
  std::optional<c10::Device> device;
  bool cpu = false;
  for (const auto* ts : {&a, &b})
    for (const auto& t : *ts) {
      if (!t.defined()) continue;
      if (t.device().is_cpu()) {
        cpu = true;
        continue;
      }
      TORCH_CHECK(!device || *device == t.device(), "hoop: rank ", rank, ": ", call, ": tensors on ", *device, " and ",
                  t.device(), " in one call (one device per call)");
      device = t.device();
    }
  TORCH_CHECK(!device || !cpu, "hoop: rank ", rank, ": ", call, ": tensors on cpu and ", *device,
              " in one call (one device per call)");
  return device;
}

c10::Stream CurrentStream(const c10::Device& device) {
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

c10::intrusive_ptr<c10d::Work> StartOnStream(int rank, c10d::OpType type, const char* call,
                                             std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
                                             const std::function<void()>& after, const c10::Device& device,
                                             const std::function<hoop_status_t(void* stream)>& issue,
                                             const c10::Stream& stream) {
  c10::DeviceGuard on(device);  // hoop_*_stream use the caller's current device, as NCCL's calls do
  c10::Event inputs_ready(device.type());
  inputs_ready.record(CurrentStream(device));
  inputs_ready.block(stream);
  for (const auto* ts : {&outputs, &keep})
    for (const auto& t : *ts)
      if (t.defined()) t.record_stream(stream);
  if (issue(stream.native_handle()) != HOOP_SUCCESS)
    throw std::runtime_error(std::string("hoop: ") + hoop_last_error());
  if (after) {
    c10::StreamGuard after_the_call(stream);
    after();
  }
  return c10::make_intrusive<StreamWork>(rank, type, call, std::move(outputs), std::move(keep), stream);
}

c10::Stream SideStreams::Get(const c10::Device& device, int peer, bool recv) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto key = std::make_tuple(static_cast<int>(device.index()), peer, recv);
  auto it = streams_.find(key);
  if (it == streams_.end())
    it = streams_.emplace(key, c10::impl::getDeviceGuardImpl(device.type())->getStreamFromGlobalPool(device)).first;
  return it->second;
}

}  // namespace hoop::torch_ext
#endif
