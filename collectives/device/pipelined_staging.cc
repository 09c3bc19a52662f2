// See pipelined_staging.h.
#include "collectives/device/pipelined_staging.h"

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
  ~AddElapsed() {
    total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  }
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

namespace {
// The ranges sorted by address, those that touch joined (a side's ranges never overlap).
std::vector<ByteRange> Joined(std::vector<ByteRange> r) {
  std::sort(r.begin(), r.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.out != b.out ? a.out < b.out : a.lo < b.lo; });
  std::vector<ByteRange> j;
  for (const ByteRange& x : r) {
    if (!j.empty() && j.back().out == x.out && j.back().hi == x.lo)
      j.back().hi = x.hi;
    else
      j.push_back(x);
  }
  return j;
}
}  // namespace

Status PipelinedStaging::Begin(const Plan& plan, size_t esize) {
  times_ = {};
  AddElapsed t{times_.queue_in_us};
  map_ = BuildStageMap(plan, esize);
  if (host_in_ != nullptr && host_in_ == host_out_) AddWriteNeeds(plan, esize, map_);
  waited_ = 0;
  bytes_out_ = copies_in_ = marks_in_ = copies_out_ = 0;
  pending_.clear();
  pending_bytes_ = 0;
  marks_by_.assign(map_.in.size(), 0);
  out_cap_ = std::min(stage_bytes_, map_.written / kOutBatches);
  batch_copies_.clear();
  batch_at_.assign(1, 0);
  batch_end_.assign(1, 0);
  size_t cap = 0;  // the first batch: one range
  for (size_t i = 0; i < map_.in.size();) {
    size_t j = i + 1, bytes = map_.in[i].hi - map_.in[i].lo;
    for (; j < map_.in.size() && bytes + (map_.in[j].hi - map_.in[j].lo) <= cap; ++j)
      bytes += map_.in[j].hi - map_.in[j].lo;
    // A side read in place (host memory) copies nothing, but its ranges keep their mark.
    std::vector<ByteRange> copies;
    for (size_t k = i; k < j; ++k) {
      const ByteRange& r = map_.in[k];
      if (r.out && !dev_out_)
        return Internal("the plan reads output placed before the run, and the output is not staged");
      if ((r.out ? dev_out_ : dev_in_) != nullptr) copies.push_back(r);
    }
    copies = Joined(std::move(copies));
    if (copies.empty()) copies.push_back({});  // the mark alone
    size_t copied = 0;
    for (const ByteRange& r : copies) copied += r.hi - r.lo;
    batch_copies_.insert(batch_copies_.end(), copies.begin(), copies.end());
    batch_at_.push_back(batch_copies_.size());
    batch_end_.push_back(batch_end_.back() + copied);
    for (; i < j; ++i) marks_by_[i] = static_cast<uint32_t>(batch_at_.size() - 1);
    cap = std::min(stage_bytes_, std::max(cap, 2 * bytes));
  }
  return QueueAhead(1);
}

// Queues the batches up to mark `need` at least, and then while fewer than ahead_bytes_ beyond it
// are queued.
Status PipelinedStaging::QueueAhead(size_t need) {
  const size_t batches = batch_at_.size() - 1;
  need = std::min(need, batches);
  const size_t goal = batch_end_[need] + ahead_bytes_;
  while (marks_in_ < batches && (marks_in_ < need || batch_end_[marks_in_] < goal)) {
    for (size_t k = batch_at_[marks_in_]; k < batch_at_[marks_in_ + 1]; ++k) {
      const ByteRange& r = batch_copies_[k];
      const char* from = r.out ? dev_out_ : dev_in_;
      char* to = r.out ? host_out_ : host_in_;
      const bool none = r.hi == r.lo;
      HOOP_RETURN_IF_ERROR(copies_
                               .QueueIn(none ? nullptr : to + r.lo, none ? nullptr : from + r.lo, r.hi - r.lo,
                                        k + 1 == batch_at_[marks_in_ + 1])
                               .WithContext("queueing the copy of the device input to host memory"));
      copies_in_ += none ? 0 : 1;
    }
    ++marks_in_;
  }
  return Status::Ok();
}

Status PipelinedStaging::BeforeRead(size_t unit) {
  const uint32_t need = map_.need[unit] == 0 ? 0 : marks_by_[map_.need[unit] - 1];
  if (marks_in_ + 1 < batch_at_.size()) {
    AddElapsed t{times_.queue_in_us};
    HOOP_RETURN_IF_ERROR(QueueAhead(std::max<size_t>(need, waited_)));
  }
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
    pending_bytes_ += r.hi - r.lo;
    pending_.push_back(r);
  }
  return pending_bytes_ >= out_cap_ ? Flush() : Status::Ok();
}

Status PipelinedStaging::Flush() {
  if (marks_in_ + 1 < batch_at_.size()) {  // copies back start after every copy in (StageCopies::QueueOut)
    AddElapsed t{times_.queue_in_us};
    HOOP_RETURN_IF_ERROR(QueueAhead(batch_at_.size() - 1));
  }
  const std::vector<ByteRange> copies = Joined(std::move(pending_));
  pending_.clear();
  pending_bytes_ = 0;
  for (const ByteRange& r : copies) {
    ++copies_out_;
    HOOP_RETURN_IF_ERROR(copies_.QueueOut(dev_out_ + r.lo, host_out_ + r.lo, r.hi - r.lo)
                             .WithContext("queueing the copy of the output back to the device"));
  }
  return Status::Ok();
}

CudaStageCopies::~CudaStageCopies() {
  CudaStreamDestroy(in_);
  CudaStreamDestroy(out_);
  CudaEventDestroy(start_);
  CudaEventDestroy(ins_done_);
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
    HOOP_ASSIGN_OR_RETURN(ins_done_, CudaEventCreate(false));
  }
  queued_ = 0;
  copies_ = 0;
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

Status CudaStageCopies::QueueIn(void* host, const void* device, size_t bytes, bool mark) {
  HOOP_RETURN_IF_ERROR(CopyMem(host, MemKind::kCudaPinned, device, MemKind::kCuda, bytes, in_));
  ++copies_;
  if (!mark) return Status::Ok();
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
  if (k > queued_)
    return Internal("waiting for copy " + std::to_string(k) + " of " + std::to_string(queued_) + " queued");
  // Polled, not cudaEventSynchronize: the wait keeps the deadline. The copy engine is far ahead of
  // any wire, so this spins briefly at the start of a call and seldom after.
  for (int polls = 0;; ++polls) {
    HOOP_ASSIGN_OR_RETURN(bool done, CudaEventDone(marks_[k - 1]));
    if (done) return Status::Ok();
    if (deadline.Expired())
      return DeadlineExceeded("the copy of the device input to host memory had not finished by the deadline");
    if (polls < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Status CudaStageCopies::QueueOut(void* device, const void* host, size_t bytes) {
  if (!out_waits_ && copies_ > 0) {
    HOOP_RETURN_IF_ERROR(CudaEventRecord(ins_done_, in_));
    HOOP_RETURN_IF_ERROR(CudaStreamWaitEvent(out_, ins_done_));
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
