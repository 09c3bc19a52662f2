// The flight recorder (issue 55): per communicator, a ring of its last N operations, each with
// what was called (kind, dtype, count, root or peer, algorithm, memory, stream), where it got to
// (queued, started, done, failed), its times, and, for one that failed, why and which peers it
// was waiting for. PyTorch's flight recorder and NCCL's RAS answer the same question: when a job
// hangs, which rank is where. A dump is one JSON document per rank (ToJson), which hoop-doctor
// and `hooprun --status` read.
//
// Cost: a few stores per operation under the slot's own flag (held for those stores, never
// across a wait) and the kernel's coarse clock (times are at its tick, 1 to 4 ms). Reading never
// waits: a slot being written is read again, and after a few tries given up ("busy"), so a dump
// taken while a thread is stopped anywhere, even mid-write, still returns the rest. An operation
// whose slot a newer one has taken (N newer operations queued while it was in flight) drops its
// writes, and a caller delayed between taking its id and writing does not overwrite a newer one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/core/algo.h"
#include "collectives/core/op_desc.h"
#include "common/dtype.h"
#include "common/status.h"

namespace hoop {

enum class TraceState : uint8_t { kQueued, kStarted, kDone, kFailed };
const char* TraceStateName(TraceState s);  // "queued", "started", "done", "failed"

// What an operation is, as Queued records it.
struct TraceCall {
  CollKind kind = CollKind::kAllreduce;
  bool send = false, recv = false;  // a point-to-point call (kind is then meaningless)
  DType dtype = DType::kF32;
  uint64_t count = 0;
  int root = -1;  // rooted collectives
  int peer = -1;  // point-to-point
  int tag = 0;
  MemKind mem = MemKind::kHost;
  bool stream = false;  // on a CUDA stream
};

// One operation as a dump reads it.
struct TraceRecord {
  uint64_t id = 0;   // the communicator's operations in call order, from 1
  int64_t seq = -1;  // a collective's sequence number, the same on every rank (once started)
  TraceCall call;
  std::string algo;  // once started ("" for point-to-point)
  TraceState state = TraceState::kQueued;
  double queued_s = 0, started_s = -1, ended_s = -1;  // seconds since the recorder began
  std::string error;                                  // a failed one's message (its first 240 characters)
  std::vector<int> waiting_for;                       // a timed-out one's peers it waited on
  bool busy = false;                                  // being written whenever read: left out
};

class FlightRecorder {
 public:
  // `capacity`: the operations kept (HOOP_TRACE_OPS); 0 turns recording off.
  explicit FlightRecorder(size_t capacity);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  bool on() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }
  // A new operation; its id (0 when off), which the others take.
  uint64_t Queued(const TraceCall& call);
  void Started(uint64_t id, int64_t seq, Algo algo);
  void Chose(uint64_t id, Algo algo);  // the algorithm a started one resolved to
  void Ended(uint64_t id, const Status& result, const std::vector<int>& waiting_for = {});

  // The kept operations, oldest first; never waits for a writer.
  std::vector<TraceRecord> Snapshot() const;
  // Every operation recorded so far (the ring keeps the last capacity() of them).
  uint64_t recorded() const { return next_.load(std::memory_order_relaxed) - 1; }

 private:
  struct Slot;
  struct Cold;              // a failure's message and peers, apart from what every operation writes
  Slot* Take(uint64_t id);  // the slot of `id`, its write begun, or null when a newer operation holds it
  bool Read(const Slot& s, const Cold& cold, TraceRecord* out) const;

  size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<Cold[]> cold_;
  std::atomic<uint64_t> next_{1};
  int64_t begin_ns_;
};

// Who wrote a dump: the JSON's header.
struct TraceOwner {
  std::string comm;  // the communicator's name
  int rank = 0, size = 1, job_rank = 0, pid = 0;
  std::string host;
  std::string reason;  // "timeout", "request", "signal", "peer lost"
};
// One rank's dump: {"hoop_trace": 1, the owner's fields, "capacity", "recorded", "ops": [...]}.
std::string TraceJson(const TraceOwner& owner, const FlightRecorder& recorder);
// Writes TraceJson to DIR/hoop-trace.<comm>.<rank>.json (atomically: a temporary file renamed);
// the path written, or why not.
StatusOr<std::string> WriteTrace(const std::string& dir, const TraceOwner& owner, const FlightRecorder& recorder);

}  // namespace hoop
