#include "collectives/device/cuda_queue.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "collectives/kernels/device_reduce.h"
#include "common/device.h"
#include "common/ipc_mappings.h"

namespace hoop {
namespace {

constexpr size_t kMaxMappings = 256;
constexpr size_t kMaxExports = 64;

class CudaQueue final : public DeviceQueue {
 public:
  CudaQueue(int device, void* stream) : device_(device), stream_(stream) {}
  ~CudaQueue() override {
    std::lock_guard<std::mutex> l(mu_);
    (void)CudaSetDevice(device_);
    (void)CudaStreamSync(stream_);
    CloseMappings();
    for (auto& s : scratch_) CudaFree(s.first, MemKind::kCuda);
    for (auto& m : live_) CudaEventDestroy(m.second);
    for (void* e : free_) CudaEventDestroy(e);
    CudaStreamDestroy(stream_);
  }

  int device() const override { return device_; }

  Status Copy(void* dst, MemKind dk, const void* src, MemKind sk, size_t bytes) override {
    if (bytes == 0) return Status::Ok();
    std::lock_guard<std::mutex> l(mu_);
    HOOP_RETURN_IF_ERROR(CudaSetDevice(device_));
    fresh_ = true;
    return CopyMem(dst, dk, src, sk, bytes, stream_);
  }

  Status Reduce(DType t, ReduceOp op, void* dst, const void* a, const void* b, size_t n, int divisor) override {
    DeviceReduceFn fn = LookupDeviceReduce(t, op);
    if (fn == nullptr)
      return Unimplemented(std::string("no device reduction for ") + DTypeName(t) + " " + ReduceOpName(op));
    if (n == 0) return Status::Ok();
    std::lock_guard<std::mutex> l(mu_);
    HOOP_RETURN_IF_ERROR(CudaSetDevice(device_));
    fresh_ = true;
    return fn(dst, a, b, n, divisor, stream_);
  }

  bool CanReduce(DType t, ReduceOp op) const override { return LookupDeviceReduce(t, op) != nullptr; }

  StatusOr<uint64_t> Mark() override {
    std::lock_guard<std::mutex> l(mu_);
    // Nothing queued since the last mark (a send of what a completed receive wrote): the same
    // point, no new event.
    if (!fresh_ && marks_ > 0) return marks_;
    HOOP_RETURN_IF_ERROR(CudaSetDevice(device_));
    void* e = nullptr;
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    } else {
      HOOP_ASSIGN_OR_RETURN(e, CudaEventCreate(false));
    }
    if (Status s = CudaEventRecord(e, stream_); !s.ok()) {
      free_.push_back(e);
      return s;
    }
    live_.emplace_back(++marks_, e);
    fresh_ = false;
    return marks_;
  }

  StatusOr<bool> Passed(uint64_t mark) override {
    std::lock_guard<std::mutex> l(mu_);
    // Events pass in the order they were recorded: look from the oldest, stop at the first not done.
    while (mark > passed_ && !live_.empty()) {
      HOOP_ASSIGN_OR_RETURN(bool done, CudaEventDone(live_.front().second));
      if (!done) break;
      passed_ = live_.front().first;
      free_.push_back(live_.front().second);
      live_.pop_front();
    }
    return mark <= passed_;
  }

  Status Drain() override {
    std::lock_guard<std::mutex> l(mu_);
    return DrainLocked();
  }

  Status After(void* event) override {
    if (event == nullptr) return Status::Ok();
    std::lock_guard<std::mutex> l(mu_);
    HOOP_RETURN_IF_ERROR(CudaSetDevice(device_));
    fresh_ = true;
    return CudaStreamWaitEvent(stream_, event);
  }

  StatusOr<char*> Scratch(int which, size_t bytes) override {
    std::lock_guard<std::mutex> l(mu_);
    const size_t w = static_cast<size_t>(which);
    if (scratch_.size() <= w) scratch_.resize(w + 1, {nullptr, 0});
    auto& s = scratch_[w];
    if (s.first == nullptr || s.second < bytes) {
      const size_t want = std::max(bytes, 2 * s.second);
      HOOP_RETURN_IF_ERROR(DrainLocked());  // queued work may still use the old memory
      CudaFree(s.first, MemKind::kCuda);
      s = {nullptr, 0};
      HOOP_ASSIGN_OR_RETURN(void* p, CudaAlloc(device_, std::max<size_t>(want, 1)));
      s = {static_cast<char*>(p), want};
    }
    return s.first;
  }

  StatusOr<IpcRef> Export(const void* p) override {
    std::lock_guard<std::mutex> l(mu_);
    // An allocation exported before, if p lies in it and it is still the same allocation (its
    // buffer id): the handle is reused, sparing two driver calls per message.
    const auto at = reinterpret_cast<uint64_t>(p);
    CudaIpcExport x;
    auto hit = std::find_if(exports_.begin(), exports_.end(),
                            [&](const CudaIpcExport& e) { return at >= e.base && at < e.base + e.size; });
    if (hit != exports_.end()) {
      HOOP_ASSIGN_OR_RETURN(uint64_t id, CudaBufferId(p));
      if (id == hit->buffer_id) {
        x = *hit;
        x.offset = static_cast<size_t>(at - x.base);
      } else {
        exports_.erase(hit);
        hit = exports_.end();
      }
    }
    if (hit == exports_.end()) {
      HOOP_ASSIGN_OR_RETURN(x, CudaIpcGet(p));
      if (exports_.size() >= kMaxExports) exports_.erase(exports_.begin());
      exports_.push_back(x);
    }
    IpcRef r;
    r.pid = static_cast<int32_t>(::getpid());
    r.buffer_id = x.buffer_id;
    r.base = x.base;
    r.offset = x.offset;
    std::copy(std::begin(x.handle), std::end(x.handle), r.handle);
    return r;
  }

  StatusOr<Mapped> Open(const IpcRef& ref) override {
    std::lock_guard<std::mutex> l(mu_);
    const char* base = nullptr;
    if (ref.pid == static_cast<int32_t>(::getpid())) {
      base = reinterpret_cast<const char*>(ref.base);  // ranks as threads of one process
    } else {
      const std::pair<int32_t, uint64_t> key{ref.pid, ref.buffer_id};
      auto it = maps_.find(key);
      if (it == maps_.end()) {
        if (maps_.size() >= kMaxMappings) {  // nothing queued may still read what is unmapped
          HOOP_RETURN_IF_ERROR(DrainLocked());
          CloseMappings();
        }
        // The process's table (common/ipc_mappings.h): other communicators' queues may map the
        // same buffers.
        auto open = [&] { return OpenAnywhere(ref); };
        auto m = IpcMappings::Process().Open(key, open);
        if (m.status().code() == Code::kFailedPrecondition) {
          // A mapping of another allocation of that process holds this one's memory block
          // (device.h, CudaIpcOpen): once nothing queued here reads them, let go of ours and retry.
          HOOP_RETURN_IF_ERROR(DrainLocked());
          ClosePeerMappings(ref.pid);
          m = IpcMappings::Process().Open(key, open);
        }
        if (!m.ok()) return m.status().WithContext("mapping process " + std::to_string(ref.pid) + "'s device memory");
        it = maps_.emplace(key, *m).first;
      }
      base = static_cast<const char*>(it->second);
    }
    Mapped m;
    m.ptr = base + ref.offset;
    m.local = QueryMemory(m.ptr).device == device_;
    return m;
  }

 private:
  Status DrainLocked() {
    HOOP_RETURN_IF_ERROR(CudaSetDevice(device_));
    HOOP_RETURN_IF_ERROR(CudaStreamSync(stream_));
    for (auto& m : live_) free_.push_back(m.second);
    live_.clear();
    passed_ = marks_;
    return Status::Ok();
  }
  // On this queue's device first (peer access enabled as needed); where that device cannot map
  // the sender's (no peer access between them), on the sender's own device, found by trying the
  // others: copies from there still reach this device (through host memory, by the driver), and
  // Mapped::local says a kernel here cannot read it in place.
  StatusOr<void*> OpenAnywhere(const IpcRef& ref) {
    HOOP_RETURN_IF_ERROR(CudaSetDevice(device_));
    auto m = CudaIpcOpen(ref.handle);
    if (m.ok()) return m;
    const Status first = m.status();
    auto n = CudaDeviceCount();
    for (int d = 0; n.ok() && d < *n; ++d) {
      if (d == device_ || !CudaSetDevice(d).ok()) continue;
      auto other = CudaIpcOpen(ref.handle);
      (void)CudaSetDevice(device_);
      if (other.ok()) return other;
    }
    (void)CudaSetDevice(device_);
    return first;
  }
  // Let go of mappings (the table unmaps them when no queue holds them and it needs room): only
  // once nothing queued reads them.
  void CloseMappings() {
    for (auto& m : maps_) IpcMappings::Process().Release(m.first);
    maps_.clear();
  }
  void ClosePeerMappings(int32_t pid) {
    for (auto it = maps_.begin(); it != maps_.end();) {
      if (it->first.first != pid) {
        ++it;
        continue;
      }
      IpcMappings::Process().Release(it->first);
      it = maps_.erase(it);
    }
  }

  const int device_;
  void* const stream_;
  std::mutex mu_;
  uint64_t marks_ = 0, passed_ = 0;
  bool fresh_ = false;                           // work queued since the last mark
  std::deque<std::pair<uint64_t, void*>> live_;  // recorded events not known to have passed
  std::vector<void*> free_;
  std::vector<std::pair<char*, size_t>> scratch_;
  std::map<std::pair<int32_t, uint64_t>, void*> maps_;  // (pid, buffer id) -> mapping
  std::vector<CudaIpcExport> exports_;                  // allocations exported, oldest first
};

StatusOr<std::unique_ptr<DeviceQueue>> MakeCudaQueue(int device) {
  HOOP_ASSIGN_OR_RETURN(int n, CudaDeviceCount());
  if (device < 0 || device >= n)
    return InvalidArgument("CUDA device " + std::to_string(device) + " is not one of this process's " +
                           std::to_string(n));
  HOOP_ASSIGN_OR_RETURN(void* stream, CudaStreamCreate(device));
  return std::unique_ptr<DeviceQueue>(new CudaQueue(device, stream));
}

}  // namespace

DeviceAccess CudaDeviceAccess() {
  if (!BuiltWithCuda()) return {};
  DeviceAccess a;
  a.make_queue = &MakeCudaQueue;
  a.device_of = [](const void* p) {
    const MemInfo m = QueryMemory(p);
    return m.kind == MemKind::kCuda ? m.device : -1;
  };
  return a;
}

}  // namespace hoop
