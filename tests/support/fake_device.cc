#include "tests/support/fake_device.h"

#include <unistd.h>

#include <cstring>
#include <deque>
#include <functional>

#include "collectives/kernels/reduce.h"

namespace hoop::test {

char* FakeDevice::Alloc(size_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  blocks_.emplace_back(std::make_unique<char[]>(bytes == 0 ? 1 : bytes), bytes == 0 ? 1 : bytes);
  return blocks_.back().first.get();
}

int FakeDevice::DeviceOf(const void* p) const {
  std::lock_guard<std::mutex> l(mu_);
  const char* c = static_cast<const char*>(p);
  for (auto& b : blocks_)
    if (c >= b.first.get() && c < b.first.get() + b.second) return 0;
  return -1;
}

std::string FakeDevice::hazard() const {
  std::lock_guard<std::mutex> l(mu_);
  return hazard_;
}

void FakeDevice::Queued(const void* queue, uint64_t job, std::vector<Range> reads, std::vector<Range> writes) {
  auto overlap = [](const std::vector<Range>& a, const std::vector<Range>& b) {
    for (const Range& x : a)
      for (const Range& y : b)
        if (x.lo < y.hi && y.lo < x.hi) return true;
    return false;
  };
  std::lock_guard<std::mutex> l(mu_);
  for (const Pending& p : pending_) {
    if (p.queue == queue || !hazard_.empty()) continue;
    if (overlap(reads, p.writes))
      hazard_ = "a job reads memory another rank's queue has yet to write";
    else if (overlap(writes, p.reads))
      hazard_ = "a job writes memory another rank's queue has yet to read";
    else if (overlap(writes, p.writes))
      hazard_ = "a job writes memory another rank's queue has yet to write";
  }
  pending_.push_back({queue, job, std::move(reads), std::move(writes)});
}

void FakeDevice::Touch(const void* p, size_t bytes) {
  const char* lo = static_cast<const char*>(p);
  std::lock_guard<std::mutex> l(mu_);
  for (const Pending& q : pending_)
    for (const auto* set : {&q.reads, &q.writes})
      for (const Range& r : *set)
        if (hazard_.empty() && r.lo < lo + bytes && lo < r.hi)
          hazard_ = "the host touches memory a queue still has work on after the call returned";
}

void FakeDevice::Done(const void* queue, uint64_t job) {
  std::lock_guard<std::mutex> l(mu_);
  for (size_t i = 0; i < pending_.size(); ++i)
    if (pending_[i].queue == queue && pending_[i].job == job) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

class FakeQueue final : public DeviceQueue {
 public:
  explicit FakeQueue(FakeDevice& dev) : dev_(dev) {}
  int device() const override { return 0; }

  Status Copy(void* dst, MemKind, const void* src, MemKind, size_t bytes) override {
    if (dev_.fail_after_.load() >= 0 && dev_.fail_after_.fetch_sub(1) <= 0)
      return Internal("fake device: a copy failed (injected)");
    const FakeDevice::Range w{static_cast<const char*>(dst), static_cast<const char*>(dst) + bytes};
    if (dev_.DeviceOf(src) < 0) {  // host memory: read now
      auto held =
          std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
      return Queue([dst, held] { std::memcpy(dst, held->data(), held->size()); }, {}, {w});
    }
    const FakeDevice::Range r{static_cast<const char*>(src), static_cast<const char*>(src) + bytes};
    return Queue([dst, src, bytes] { std::memmove(dst, src, bytes); }, {r}, {w});
  }

  Status Reduce(DType t, ReduceOp op, void* dst, const void* a, const void* b, size_t n, int divisor) override {
    ReduceFn fn = LookupReduce(t, op, MemKind::kHost);
    if (fn == nullptr) return Unimplemented("fake device: no reduction for this data");
    const size_t len = n * DTypeSize(t);
    auto range = [len](const void* p) {
      return FakeDevice::Range{static_cast<const char*>(p), static_cast<const char*>(p) + len};
    };
    return Queue([=] { fn(dst, a, b, n, divisor); }, {range(a), range(b)}, {range(dst)});
  }

  bool CanReduce(DType t, ReduceOp op) const override { return LookupReduce(t, op, MemKind::kHost) != nullptr; }

  StatusOr<uint64_t> Mark() override {
    std::lock_guard<std::mutex> l(mu_);
    return done_ + jobs_.size();
  }

  StatusOr<bool> Passed(uint64_t mark) override {
    std::lock_guard<std::mutex> l(mu_);
    const auto now = std::chrono::steady_clock::now();
    while (done_ < mark && now - queued_at_.front() >= dev_.lag_) Step();  // the queue lags
    return done_ >= mark;
  }

  Status Drain() override {
    std::lock_guard<std::mutex> l(mu_);
    while (!jobs_.empty()) Step();
    return Status::Ok();
  }

  Status After(void*) override { return Status::Ok(); }

  StatusOr<char*> Scratch(int which, size_t bytes) override {
    std::lock_guard<std::mutex> l(mu_);
    const size_t w = static_cast<size_t>(which);
    if (scratch_.size() <= w) scratch_.resize(w + 1, {nullptr, 0});
    if (scratch_[w].first == nullptr || scratch_[w].second < bytes) {
      while (!jobs_.empty()) Step();
      scratch_[w] = {dev_.Alloc(bytes), bytes};
    }
    return scratch_[w].first;
  }

  StatusOr<IpcRef> Export(const void* p) override {
    if (dev_.DeviceOf(p) < 0) return InvalidArgument("fake device: exporting memory that is not on the device");
    IpcRef r;
    r.pid = static_cast<int32_t>(::getpid());
    r.base = reinterpret_cast<uint64_t>(p);
    return r;
  }

  StatusOr<Mapped> Open(const IpcRef& ref) override {
    if (ref.pid != static_cast<int32_t>(::getpid())) return Unimplemented("fake device: another process's memory");
    ++dev_.descriptors_;
    return Mapped{reinterpret_cast<const char*>(ref.base) + ref.offset, true};
  }

 private:
  Status Queue(std::function<void()> job, std::vector<FakeDevice::Range> reads, std::vector<FakeDevice::Range> writes) {
    std::lock_guard<std::mutex> l(mu_);
    dev_.Queued(this, done_ + jobs_.size(), std::move(reads), std::move(writes));
    jobs_.push_back(std::move(job));
    queued_at_.push_back(std::chrono::steady_clock::now());
    return Status::Ok();
  }
  void Step() {
    jobs_.front()();
    jobs_.pop_front();
    queued_at_.pop_front();
    dev_.Done(this, done_);
    ++done_;
    ++dev_.jobs_;
  }

  FakeDevice& dev_;
  std::mutex mu_;
  std::deque<std::function<void()>> jobs_;
  std::deque<std::chrono::steady_clock::time_point> queued_at_;
  uint64_t done_ = 0;
  std::vector<std::pair<char*, size_t>> scratch_;
};

DeviceAccess FakeDevice::MakeAccess() {
  DeviceAccess a;
  a.make_queue = [this](int device) -> StatusOr<std::unique_ptr<DeviceQueue>> {
    if (device != 0) return InvalidArgument("fake device: only device 0");
    return std::unique_ptr<DeviceQueue>(new FakeQueue(*this));
  };
  a.device_of = [this](const void* p) { return DeviceOf(p); };
  return a;
}

}  // namespace hoop::test
