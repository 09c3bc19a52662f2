// A fake CUDA device for the device runs and the shm back end's CUDA IPC protocol without a GPU
// (installed with CommOptions::device_access). Its "device memory" is host memory it allocated
// (FakeDevice::Alloc); only that counts as on the device. Each rank's queue records every copy
// and reduction and does it only when the queue "gets there": a job is done once it has waited
// `lag` and a mark is asked about, or at Drain. So work lags behind the host as a GPU's does
// (a kernel launch takes microseconds to start), and whoever reads
// memory before the queue has passed the work that writes it (a descriptor published too early,
// an acknowledgement sent before the read, a run that returns before its last reduction) reads
// stale bytes. More than that, the fake keeps every queued job's ranges until it is done: a job
// queued to read what another rank's queue has still to write, or to write what another rank's
// queue has still to read or write, is a hazard the protocol should have ordered (by a mark or an
// acknowledgement), named in hazard() whether or not the timing made the bytes come out wrong.
// A copy from host memory reads its source when queued, as CUDA's copies from pageable memory do. Ranks are threads of
// one
// process, so a descriptor's address is used as it is (as the CUDA queue does within a process).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/device_queue.h"

namespace hoop::test {

class FakeDevice {
 public:
  explicit FakeDevice(std::chrono::microseconds lag = std::chrono::microseconds(200)) : lag_(lag) {}
  FakeDevice(const FakeDevice&) = delete;
  FakeDevice& operator=(const FakeDevice&) = delete;

  // "Device memory" on device 0, freed with the FakeDevice.
  char* Alloc(size_t bytes);
  int DeviceOf(const void* p) const;
  // What CommOptions::device_access points at (it lives as long as this).
  const DeviceAccess* access() const { return &access_; }
  // Descriptors opened (IPC receives) and work done, over every queue so far.
  uint64_t descriptors() const { return descriptors_.load(); }
  uint64_t jobs() const { return jobs_.load(); }
  // The first hazard seen ("" if none).
  std::string hazard() const;
  // From now on, copies fail (as a device whose copy engine faulted would say), after `n` more.
  void FailCopiesAfter(uint64_t n) { fail_after_ = static_cast<int64_t>(n); }
  // The host is about to read or write [p, p + bytes) (a call has returned): a hazard if any
  // queue still has work on it (a peer still reading what this rank's call was done with).
  void Touch(const void* p, size_t bytes);

 private:
  friend class FakeQueue;
  struct Range {
    const char* lo;
    const char* hi;
  };
  struct Pending {
    const void* queue;
    uint64_t job;
    std::vector<Range> reads, writes;
  };
  // Registers a job about to be queued, and names a hazard against other queues' pending jobs.
  void Queued(const void* queue, uint64_t job, std::vector<Range> reads, std::vector<Range> writes);
  void Done(const void* queue, uint64_t job);
  const std::chrono::microseconds lag_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::unique_ptr<char[]>, size_t>> blocks_;
  std::vector<Pending> pending_;
  std::string hazard_;
  std::atomic<uint64_t> descriptors_{0}, jobs_{0};
  std::atomic<int64_t> fail_after_{-1};  // -1: never
  DeviceAccess access_ = MakeAccess();
  DeviceAccess MakeAccess();
};

}  // namespace hoop::test
