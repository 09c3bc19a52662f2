// See pipelined_staging.h.
#include "collectives/pipelined_staging.h"

#include <chrono>
#include <thread>

#include "common/device.h"

namespace hoop {
namespace {
// Adds the microseconds since `start` to `total` when it goes out of scope.
struct AddElapsed {
  double& total;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  ~AddElapsed() { total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count(); }
};
}  // namespace

Status PipelinedStaging::Begin(const Plan& plan, size_t esize) {
  times_ = {};
  AddElapsed t{times_.queue_in_us};
  map_ = BuildStageMap(plan, esize);
  waited_ = 0;
  bytes_out_ = 0;
  for (const ByteRange& r : map_.in) {
    // A side read in place (host memory) copies nothing, but keeps its place in the count.
    const char* from = r.out ? dev_out_ : dev_in_;
    char* to = r.out ? host_out_ : host_in_;
    if (r.out && !from)
      return Internal("the plan reads output placed before the run, and the output is not staged");
    HOOP_RETURN_IF_ERROR(copies_.QueueIn(to ? to + r.lo : nullptr, from ? from + r.lo : nullptr, from ? r.hi - r.lo : 0)
                             .WithContext("queueing the copy of the device input to host memory"));
  }
  return Status::Ok();
}

Status PipelinedStaging::BeforeRead(size_t unit) {
  const uint32_t need = map_.need[unit];
  if (need <= waited_) return Status::Ok();
  AddElapsed t{times_.wait_in_us};
  HOOP_RETURN_IF_ERROR(copies_.WaitIn(need, deadline_));
  waited_ = need;
  return Status::Ok();
}

Status PipelinedStaging::AfterAct(size_t unit) {
  if (!dev_out_ || map_.final_at[unit] == map_.final_at[unit + 1]) return Status::Ok();
  AddElapsed t{times_.queue_out_us};
  for (uint32_t i = map_.final_at[unit]; i < map_.final_at[unit + 1]; ++i) {
    const ByteRange& r = map_.final[i];
    HOOP_RETURN_IF_ERROR(copies_.QueueOut(dev_out_ + r.lo, host_out_ + r.lo, r.hi - r.lo)
                             .WithContext("queueing the copy of the output back to the device"));
    bytes_out_ += r.hi - r.lo;
  }
  return Status::Ok();
}

CudaStageCopies::~CudaStageCopies() {
  CudaStreamDestroy(in_);
  CudaStreamDestroy(out_);
  CudaEventDestroy(start_);
  for (void* e : marks_) CudaEventDestroy(e);
}

Status CudaStageCopies::Prepare(void* ready) {
  auto current = CudaGetDevice();
  caller_device_ = current.ok() ? *current : -1;
  HOOP_RETURN_IF_ERROR(CudaSetDevice(device_));
  if (in_ == nullptr) {
    HOOP_ASSIGN_OR_RETURN(in_, CudaStreamCreate(device_));
    HOOP_ASSIGN_OR_RETURN(out_, CudaStreamCreate(device_));
    HOOP_ASSIGN_OR_RETURN(start_, CudaEventCreate(false));
  }
  queued_ = 0;
  out_waits_ = false;
  // The legacy default stream waits for the caller's work on every blocking stream; both of
  // ours wait for the point marked on it at the call (or now).
  if (ready == nullptr) {
    HOOP_RETURN_IF_ERROR(CudaEventRecord(start_, nullptr));
    ready = start_;
  }
  HOOP_RETURN_IF_ERROR(CudaStreamWaitEvent(in_, ready));
  return CudaStreamWaitEvent(out_, ready);
}

Status CudaStageCopies::Place(void* device_dst, const void* device_src, size_t bytes) {
  return CopyMem(device_dst, MemKind::kCuda, device_src, MemKind::kCuda, bytes, in_);
}

Status CudaStageCopies::QueueIn(void* host, const void* device, size_t bytes) {
  HOOP_RETURN_IF_ERROR(CopyMem(host, MemKind::kCudaPinned, device, MemKind::kCuda, bytes, in_));
  if (queued_ == marks_.size()) {
    HOOP_ASSIGN_OR_RETURN(void* e, CudaEventCreate(false));
    marks_.push_back(e);
  }
  HOOP_RETURN_IF_ERROR(CudaEventRecord(marks_[queued_], in_));
  ++queued_;
  return Status::Ok();
}

Status CudaStageCopies::WaitIn(uint32_t k, Deadline deadline) {
  if (k == 0) return Status::Ok();
  if (k > queued_) return Internal("waiting for copy " + std::to_string(k) + " of " + std::to_string(queued_) + " queued");
  // Polled, not cudaEventSynchronize: the wait keeps the deadline. The copy engine is far ahead of
  // any wire, so this spins briefly at the start of a call and seldom after.
  for (int polls = 0;; ++polls) {
    HOOP_ASSIGN_OR_RETURN(bool done, CudaEventDone(marks_[k - 1]));
    if (done) return Status::Ok();
    if (deadline.Expired())
      return DeadlineExceeded("the copy of the device input to host memory had not finished by the deadline");
    if (polls < 1000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Status CudaStageCopies::QueueOut(void* device, const void* host, size_t bytes) {
  if (!out_waits_ && queued_ > 0) {
    HOOP_RETURN_IF_ERROR(CudaStreamWaitEvent(out_, marks_[queued_ - 1]));
    out_waits_ = true;
  }
  return CopyMem(device, MemKind::kCuda, host, MemKind::kCudaPinned, bytes, out_);
}

Status CudaStageCopies::Finish() {
  Status in = in_ ? CudaStreamSync(in_) : Status::Ok();
  Status out = out_ ? CudaStreamSync(out_) : Status::Ok();
  if (caller_device_ >= 0 && caller_device_ != device_) (void)CudaSetDevice(caller_device_);
  return in.ok() ? out : in;
}

}  // namespace hoop
