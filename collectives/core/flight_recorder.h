// The flight recorder (issue 55): per communicator, a ring of its last N operations, each with
// what was called (kind, dtype, count, root or peer, algorithm, memory, stream), where it got to
// (queued, started, done, failed), its times, and, for one that failed, why and which peers it
// was waiting for. PyTorch's flight recorder and NCCL's RAS answer the same question: when a job
// hangs, which rank is where. A dump is one JSON document per rank (ToJson), which hoop-doctor
// and `hooprun --status` read.
//
// Cost: 13 plain stores inline in the communicator's code (flight_recorder_inline.h; no
// read-modify-write: records are made one at a time, by whoever holds the communicator's turn)
// and no clock read of its own for a call run on its caller's thread (it takes the one its
// deadline reads), else the kernel's coarse clock (its tick: 1 to 4 ms); a completed operation's
// end is not timed. A blocking call on its caller's thread is recorded at its first receive or
// wait, after its first messages went (CommCore::RecordDeferred), with its call's time: a dump
// taken in the microseconds before that does not list it yet. docs/PERF.md has the measured cost
// (hoop-perf recorder). The ring's slot is the id's low bits (N rounded up to a power of two).
// Reading never waits: a slot being written is read again, and after a few tries given up
// ("busy"), so a dump taken while a thread is stopped anywhere, even mid-write, still returns the
// rest. An operation still queued or started keeps its slot (the one a hung job's dump is for):
// a newer one that would take it goes unrecorded and counted (dropped).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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
  std::string name;  // the caller's name for it (fusion: its tensors; torch: PyTorch's op), "": none
  TraceState state = TraceState::kQueued;
  uint32_t step = 0, chunk = 0;  // where a started collective last waited (Step)
  // Seconds since the recorder began; -1: not (yet). A completed operation's end is not timed.
  double queued_s = 0, started_s = -1, ended_s = -1;
  std::string error;             // a failed one's message (its first 240 characters)
  std::vector<int> waiting_for;  // a timed-out one's peers it waited on
  bool busy = false;             // being written whenever read: left out
};

// Whether a failure owes a dump: not a call refused for its caller's arguments, nor a revoke
// (which the application asked for: Poison writes none either).
inline bool OwesDump(const Status& s) {
  return !s.ok() && s.code() != Code::kInvalidArgument && s.code() != Code::kRevoked;
}

class FlightRecorder {
 public:
  // `capacity`: the operations kept (HOOP_TRACE_OPS); 0 turns recording off.
  // (Rounded up to a power of two.)
  explicit FlightRecorder(size_t capacity);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  bool on() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }
  // Records are made one thread at a time (a communicator: under its turn), and an operation's
  // own writes then come from the thread running it. A new operation; its id, which the others
  // take (0: off, or not recorded).
  uint64_t Queued(const TraceCall& call);
  // One starting now: queued and started at once, at the coarse clock's time, or at `at` (a
  // clock read its caller took anyway, for its deadline).
  uint64_t Begun(const TraceCall& call, int64_t seq, Algo algo);
  uint64_t Begun(const TraceCall& call, int64_t seq, Algo algo, std::chrono::steady_clock::time_point at);
  // By the thread running the operation, its only writer until it ends.
  void Started(uint64_t id, int64_t seq, Algo algo);
  void Chose(uint64_t id, Algo algo);  // the algorithm a started one resolved to
  // Where a started collective waits: the step of its schedule (from 0), the chunk, and the
  // algorithm it resolved to.
  void Step(uint64_t id, uint32_t step, uint32_t chunk, Algo algo);
  // The caller's name for a just-recorded operation (its first 95 characters), by the thread that
  // recorded it, before anyone else writes it. Kept apart, made at the first name.
  void Name(uint64_t id, std::string_view name);
  // Completed, by `algo` (a collective's resolved algorithm; kAuto: as recorded).
  void Done(uint64_t id, Algo algo = Algo::kAuto);
  // Done where `result` is ok, else failed with its message and the peers it waited for.
  void Ended(uint64_t id, const Status& result, const std::vector<int>& waiting_for = {});

  // The kept operations, oldest first; never waits for a writer.
  std::vector<TraceRecord> Snapshot() const;
  // Every operation called so far (the ring keeps the last capacity() of them, and those in flight).
  uint64_t recorded() const { return next_.load(std::memory_order_relaxed) - 1; }
  // Those not recorded: their slot held an operation still in flight.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Whether a recorded operation failed, other than by its caller's arguments or a revoke (which
  // the application asked for: no dump, as Poison writes none).
  bool failed_any() const { return failed_.load(std::memory_order_relaxed); }
  // Seconds since the recorder began, as its records' times count them.
  double Seconds() const;

 private:
  struct Slot;
  struct Cold;                              // a failure's message and peers, apart from what every operation writes
  struct Names;                             // the callers' names (most communicators never get one)
  static constexpr uint8_t kNoAlgo = 0xff;  // a point-to-point call, or one not started
  // (Claim, Owned, the Begun with a time and Done: flight_recorder_inline.h.)
  uint64_t Claim(const TraceCall& call, bool started, int64_t seq, Algo algo, int64_t now_ns);
  static void AwaitWriter(const Slot& s);  // a slot's last writer finishing (rare: out of line)
  Slot* Owned(uint64_t id) const;          // the slot `id` holds, or null
  bool Read(size_t index, TraceRecord* out) const;
  Cold* ColdFor(uint64_t id);  // made at the first failure: most communicators never need it

  size_t capacity_, mask_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<Cold*> cold_{nullptr};
  std::atomic<Names*> names_{nullptr};
  int64_t begin_ns_;
  // On a cache line of their own, apart from whatever the allocator put beside this object.
  alignas(64) std::atomic<uint64_t> next_{1};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> failed_{false};  // (atomics only so that a reader on another thread may read them)
  // (The class's alignment, 64, pads its end: nothing else shares their line.)
};

// Who wrote a dump: the JSON's header.
struct TraceOwner {
  std::string comm;  // the communicator's name
  int rank = 0, size = 1, job_rank = 0, pid = 0;
  std::string host;
  std::string reason;  // "timeout", "error", "request", "signal"
  // The calls queued behind the running one, not yet started (not in the recorder), in order;
  // queue_listed false where the queue could not be read without waiting for its lock.
  std::vector<TraceCall> queued;
  bool queue_listed = true;
  std::string label;  // the caller's name for the communicator (a PyTorch process group's); "": none
  // By rank: the segments resent on the link to each, as taken at the last timeout
  // (Endpoint::Retransmits; -1: not known, or itself); empty: none taken.
  std::vector<int64_t> retransmits;
};
// One rank's dump: {"hoop_trace": 1, the owner's fields, "capacity", "recorded", "dropped",
// "now_s" (the recorder's clock at the dump), ["retransmits": [...] by rank,] "ops": [...],
// "queued": [...] (or null: not listed)}. `last`: only the newest that many operations, and every one still in flight (the
// live view's answer).
std::string TraceJson(const TraceOwner& owner, const FlightRecorder& recorder, size_t last = SIZE_MAX);
// Writes TraceJson to DIR/hoop-trace.<comm>.<rank>.json (atomically: a temporary file renamed);
// the path written, or why not.
StatusOr<std::string> WriteTrace(const std::string& dir, const TraceOwner& owner, const FlightRecorder& recorder);

}  // namespace hoop

#include "collectives/core/flight_recorder_inline.h"  // IWYU pragma: export
