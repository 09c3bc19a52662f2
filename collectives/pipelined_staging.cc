// See pipelined_staging.h.
#include "collectives/pipelined_staging.h"

#include <algorithm>
#include <chrono>
#include <map>
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

// In place (one host copy): unit u also needs, before it writes a range, every copy in that
// lands there. Each side's ranges are disjoint, so each is looked up in a map by its start.
static void AddWriteNeeds(const Plan& plan, size_t esize, StageMap& m) {
  std::map<size_t, std::pair<size_t, uint32_t>> side[2];  // lo -> (hi, index in m.in)
  for (uint32_t i = 0; i < m.in.size(); ++i) side[m.in[i].out].emplace(m.in[i].lo, std::make_pair(m.in[i].hi, i));
  for (size_t u = 0; u < m.need.size(); ++u) {
    const ByteRange w = UnitWritesOut(plan, u, esize);
    if (w.lo >= w.hi) continue;
    for (auto& ranges : side) {
      auto it = ranges.upper_bound(w.lo);
      if (it != ranges.begin() && std::prev(it)->second.first > w.lo) --it;
      for (; it != ranges.end() && it->first < w.hi; ++it) m.need[u] = std::max(m.need[u], it->second.second + 1);
    }
  }
}

Status PipelinedStaging::Begin(const Plan& plan, size_t esize) {
  times_ = {};
  AddElapsed t{times_.queue_in_us};
  map_ = BuildStageMap(plan, esize);
  if (host_in_ != nullptr && host_in_ == host_out_) AddWriteNeeds(plan, esize, map_);
  waited_ = 0;
  bytes_out_ = copies_in_ = copies_out_ = 0;
  pending_ = {};
  copies_by_.assign(map_.in.size(), 0);
  size_t cap = 0;  // the first copy: one range
  for (size_t i = 0; i < map_.in.size();) {
    // A side read in place (host memory) copies nothing, but keeps its place in the count.
    const ByteRange& r = map_.in[i];
    const char* from = r.out ? dev_out_ : dev_in_;
    char* to = r.out ? host_out_ : host_in_;
    if (r.out && !from)
      return Internal("the plan reads output placed before the run, and the output is not staged");
    size_t j = i + 1, hi = r.hi;
    while (j < map_.in.size() && map_.in[j].out == r.out && map_.in[j].lo == hi && map_.in[j].hi - r.lo <= cap)
      hi = map_.in[j++].hi;
    HOOP_RETURN_IF_ERROR(copies_.QueueIn(to ? to + r.lo : nullptr, from ? from + r.lo : nullptr, from ? hi - r.lo : 0)
                             .WithContext("queueing the copy of the device input to host memory"));
    ++copies_in_;
    for (; i < j; ++i) copies_by_[i] = static_cast<uint32_t>(copies_in_);
    cap = std::min(stage_bytes_, std::max(cap, 2 * (hi - r.lo)));
  }
  return Status::Ok();
}

Status PipelinedStaging::BeforeRead(size_t unit) {
  const uint32_t need = map_.need[unit] == 0 ? 0 : copies_by_[map_.need[unit] - 1];
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
    bytes_out_ += r.hi - r.lo;
    if (pending_.hi > pending_.lo && r.lo == pending_.hi && r.hi - pending_.lo <= stage_bytes_) {
      pending_.hi = r.hi;
      continue;
    }
    HOOP_RETURN_IF_ERROR(Flush());
    pending_ = r;
  }
  // Full: no later range can join it.
  if (pending_.hi - pending_.lo >= stage_bytes_) return Flush();
  return Status::Ok();
}

Status PipelinedStaging::Flush() {
  if (pending_.hi <= pending_.lo) return Status::Ok();
  const ByteRange r = pending_;
  pending_ = {};
  ++copies_out_;
  return copies_.QueueOut(dev_out_ + r.lo, host_out_ + r.lo, r.hi - r.lo)
      .WithContext("queueing the copy of the output back to the device");
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
