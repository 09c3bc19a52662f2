// Pipelined staging: a collective on device buffers runs on pinned host copies of them, and the
// copies move piece by piece beside the wire instead of whole before and after it.
//
// The ranges of the device input are queued for copying to host memory in the order the plan
// first reads them (stage_map.h), each batch followed by a mark. The executor asks before a unit
// reads `in` (ExecMemory::BeforeRead) and waits only for the marks of the ranges that unit needs:
// the first chunk goes on the wire after one chunk's copy, and the copy engine keeps ahead of the
// wire from there. The copies are queued a window ahead of what the run has asked for
// (`ahead_bytes`, 8 MiB by default), not all at the start: the call's first chunk is on the wire
// sooner, and where processes share one GPU, one rank's whole input no longer sits on the copy
// engine ahead of the other's first chunk (on an H200 shared by 2 ranks, one of them waited about
// 1 ms per 64 MiB call for its first chunk, docs/PERF.md). Every copy in is queued before the
// first copy back. Each unit that writes the last value of a part of `out`
// has that part queued for copying back to the device as soon as it has acted, so the copy back
// of a ring allreduce's early segments overlaps its allgather. Finish waits for every copy:
// then, as with the whole-buffer staging, the device output is complete when the call returns.
//
// A rank's buffer kinds change only where its bytes wait, never the messages it exchanges, so
// ranks mixing host and device buffers in one call still match. What a caller places in the
// output before its schedule runs (a broadcast root's copy, an allgather's own block) is placed
// on the device (StageCopies::Place) ahead of the copies in; the part of it the plan reads is
// copied in like input.
//
// Copies are few and large: each copy and each mark costs the driver some microseconds to queue,
// on the thread that drives the wire. So the ranges go in batches of up to `stage_bytes`
// (HOOP_STAGE_BYTES) with one mark each: the first batch is a single range, so the wire starts
// after one chunk's copy, and each later one doubles up to that size. A batch's ranges are
// sorted and those that touch are copied as one (a ring reads two segments by turns, so a batch
// is two copies). Final output gathers likewise until that many bytes wait, but at most a
// sixteenth of the output, so the copy back left after the run stays short beside it; then it
// goes back sorted and joined (Flush sends the rest at the end).
//
// In place on the device, the run is in place on one host copy too (host_in == host_out, as
// the host's own in-place run, which moves less memory). Then a unit also waits before it
// writes a range until that range's copy in has landed (the executor asks before it posts a
// receive), so no copy in lands on a result.
//
// The copies go through StageCopies: CudaStageCopies on the device's copy engines (two streams
// of hoop's own, copies in on one and back on the other, events as the marks), or a test's fake
// that hands the input over only when asked (tests/unit/pipelined_staging_test.cc), which is how
// the plan logic is checked without a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/core/executor.h"
#include "collectives/device/stage_map.h"
#include "common/deadline.h"
#include "common/status.h"

namespace hoop {

class StageCopies {
 public:
  virtual ~StageCopies() = default;
  // Orders what follows after the caller's earlier work (the plain calls' promise): after
  // `ready`, an event recorded at the call (ready_events.h), or null: the legacy default stream's
  // work so far.
  virtual Status Prepare(void* ready) = 0;
  // Queues a device-to-device copy ahead of the copies in (what the caller places in the output
  // before the run: an allgather's own block).
  virtual Status Place(void* device_dst, const void* device_src, size_t bytes) = 0;
  // Queues a copy of `bytes` from the device input to host memory, after those queued before
  // it; with `mark`, mark number k after it (k = the marks queued before it).
  virtual Status QueueIn(void* host, const void* device, size_t bytes, bool mark) = 0;
  // Blocks until every copy before mark k - 1 (marks [0, k)) is in host memory, or the deadline
  // passes.
  virtual Status WaitIn(uint32_t k, Deadline deadline) = 0;
  // Queues a copy of final output from host memory to the device; none starts before every copy
  // in has finished (in place, both are the same device memory).
  virtual Status QueueOut(void* device, const void* host, size_t bytes) = 0;
  // Waits for every copy queued; after it the host memory may be reused. Called whatever
  // happened before, once per Prepare.
  virtual Status Finish() = 0;
};

class PipelinedStaging final : public ExecMemory {
 public:
  // dev_in -> host_in: the device input and its host copy (both null: `in` is host memory, read
  // in place). host_out -> dev_out likewise for the output; what the plan reads of `out` before
  // writing it comes from dev_out too (placed there before the run).
  // host_in == host_out (and dev_in == dev_out): in place, one host copy. stage_bytes: the
  // largest batch of ranges under one mark, and of output gathered for copying back (0: one
  // copy per range). ahead_bytes: how far the copies in are queued beyond the last mark asked for.
  static constexpr size_t kAheadBytes = size_t{8} << 20;
  PipelinedStaging(StageCopies& copies, const char* dev_in, char* host_in, char* dev_out, char* host_out,
                   Deadline deadline, size_t stage_bytes = 0, size_t ahead_bytes = kAheadBytes)
      : copies_(copies),
        dev_in_(dev_in),
        host_in_(host_in),
        dev_out_(dev_out),
        host_out_(host_out),
        deadline_(deadline),
        stage_bytes_(stage_bytes),
        ahead_bytes_(ahead_bytes) {}

  Status Begin(const Plan& plan, size_t esize) override;
  Status BeforeRead(size_t unit) override;
  Status AfterAct(size_t unit) override;
  // Queues the copy back of the final output gathered and not yet sent: after a run that
  // succeeded, before StageCopies::Finish.
  Status Flush();

  // What the run handed over (for tests and reports).
  const StageMap& map() const { return map_; }
  size_t bytes_out() const { return bytes_out_; }
  size_t copies_in() const { return copies_in_; }
  size_t marks_in() const { return marks_in_; }
  size_t marks() const { return batch_at_.empty() ? 0 : batch_at_.size() - 1; }  // queued or not
  size_t copies_out() const { return copies_out_; }
  // Where the calling thread's time went, in microseconds: queueing the copies in (Begin, then
  // beside the run), waiting for copies in (BeforeRead), queueing copies back (AfterAct).
  // HOOP_LOG_LEVEL=debug prints them per staged call (device_staging.cc): what hides behind the wire and what not.
  struct Times {
    double queue_in_us = 0, wait_in_us = 0, queue_out_us = 0;
  };
  const Times& times() const { return times_; }

 private:
  StageCopies& copies_;
  const char* dev_in_;
  char* host_in_;
  char* dev_out_;
  char* host_out_;
  Deadline deadline_;
  static constexpr size_t kOutBatches = 16;  // the output goes back in at least this many batches
  size_t stage_bytes_;
  size_t ahead_bytes_;
  size_t out_cap_ = 0;  // bytes of final output gathered before they go back
  StageMap map_;
  std::vector<uint32_t> marks_by_;  // per range of map_.in: marks queued once it is
  // The batches of copies in, made at Begin and queued by QueueAhead: batch b (mark b + 1) is
  // batch_copies_[batch_at_[b], batch_at_[b + 1]); batch_end_[b]: bytes copied by batches [0, b).
  std::vector<ByteRange> batch_copies_;
  std::vector<size_t> batch_at_, batch_end_;
  Status QueueAhead(size_t need);
  uint32_t waited_ = 0;  // marks known to be passed
  size_t bytes_out_ = 0, copies_in_ = 0, marks_in_ = 0, copies_out_ = 0;
  std::vector<ByteRange> pending_;  // final output gathered for copying back
  size_t pending_bytes_ = 0;
  Times times_;
};

// StageCopies on one CUDA device: streams and events made on first use and kept (events are
// reused call after call, grown to the most ranges a call has had). A communicator keeps one per
// device it has staged for; the calling thread's current device is put back after each call.
class CudaStageCopies final : public StageCopies {
 public:
  explicit CudaStageCopies(int device) : device_(device) {}
  ~CudaStageCopies() override;
  CudaStageCopies(const CudaStageCopies&) = delete;
  CudaStageCopies& operator=(const CudaStageCopies&) = delete;
  int device() const { return device_; }

  Status Prepare(void* ready) override;
  Status Place(void* device_dst, const void* device_src, size_t bytes) override;
  Status QueueIn(void* host, const void* device, size_t bytes, bool mark) override;
  Status WaitIn(uint32_t k, Deadline deadline) override;
  Status QueueOut(void* device, const void* host, size_t bytes) override;
  Status Finish() override;

 private:
  int device_;
  int caller_device_ = -1;  // the thread's current device before Prepare
  void* in_ = nullptr;      // streams
  void* out_ = nullptr;
  void* start_ = nullptr;     // event: the caller's earlier work
  void* ins_done_ = nullptr;  // event: every copy in, for the out stream to wait on
  std::vector<void*> marks_;  // events: the marks after copies in
  uint32_t queued_ = 0;       // marks
  size_t copies_ = 0;         // copies in
  bool out_waits_ = false;    // the out stream already waits for every copy in
};

}  // namespace hoop
