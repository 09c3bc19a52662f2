// The executor runs one rank's Plan (a Schedule cut into chunk units, plan.h) over a Transport:
// it keeps up to `window` receives in flight, reduces each chunk as it lands, and posts the sends
// that depend on it, so that sending, receiving and reducing overlap.
//
// Rules that keep it deadlock-free with bounded memory:
//  - receives are posted in unit order, at most `window` (x the schedule's window_scale)
//    outstanding; a reduce-receive lands in a staging chunk that is returned the moment the
//    chunk is reduced (results go to `out`);
//  - sends to each peer are posted in unit order, so every byte stream carries messages in the
//    order the receiver posts for them, and the message a receiver waits for is always the next
//    one on its stream;
//  - sends never wait for a window slot;
//  - a unit that writes what its own earlier send reads (after_sent) waits for that send to
//    complete; its receive is then staged, never landed in place early.
// The executor is also the single place where an operation's deadline is enforced.
//
// A device run (ExecArgs::queue) is the same run on device memory: Land queues reductions and
// copies on the device queue instead of doing them, and staging chunks are device memory.
//
// A fold (schedules/fold.cc) keeps its held messages in their staging chunks, holding their window
// places, until its chunk folds; the window is at least twice what the schedule holds at once.
//
// With wire compression (kernels/wire.h) every message is a chunk encoded in 16 bits: a receive
// always lands in a staging chunk and is decoded (added to the step's source, or copied) from
// there, and each send is encoded into a send chunk of its own, taken from a pool that grows to
// what the run keeps in flight and is released when the send completes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/core/plan.h"
#include "collectives/kernels/wire.h"
#include "common/deadline.h"
#include "common/dtype.h"
#include "transport/transport.h"

namespace hoop {

// A collective message's match word: sequence (15 bits: links keep order, so a rank at most
// a few operations ahead of its peer never aliases), chunk (24), message within the chunk's step
// (16). Bits 55-62 are the communicator's (transport/shared_transport.h); bit 63 marks
// point-to-point traffic (mailbox.h). The executor's, and blocking.cc's, which sends
// the same messages.
inline uint64_t MatchTag(uint32_t seq, uint32_t chunk, uint16_t msg) {
  return (uint64_t(seq & 0x7fff) << 40) | (uint64_t(chunk & 0xffffff) << 16) | msg;
}

// Reusable staging chunks, owned by the communicator so they are allocated once.
class StagingPool {
 public:
  // At least `slots` chunks of at least `bytes` (chunks never shrink, so calls that alternate
  // between sizes do not reallocate).
  Status Reserve(Transport& transport, size_t slots, size_t bytes);
  size_t Acquire();  // callers keep at most `slots` acquired at once
  // Device chunks for a device run: `slots` of `bytes` carved from the queue's scratch memory,
  // registered as device memory (they replace whatever the pool held).
  Status ReserveDevice(Transport& transport, DeviceQueue& queue, size_t slots, size_t bytes);
  // Acquire, adding a chunk when none is free.
  StatusOr<size_t> AcquireOrGrow(Transport& transport);
  void Release(size_t slot) { free_.push_back(slot); }
  const Region& region(size_t slot) const { return regions_[slot]; }

 private:
  size_t bytes_ = 0;
  std::vector<std::unique_ptr<char[]>> buffers_;
  std::vector<std::unique_ptr<char[]>> retired_;  // outgrown chunks, kept (Reserve)
  std::vector<Region> regions_;
  std::vector<size_t> free_;
};

// Hands a receive's pieces to the run that posted it (Endpoint::PostRecvTo).
struct UnitSink final : RecvSink {
  void (*land)(void* run, size_t unit, size_t off, const void* data, size_t len) = nullptr;
  void* run = nullptr;
  size_t unit = 0;
  void Consume(size_t off, const void* data, size_t len) override { land(run, unit, off, data, len); }
  int dev = -1;  // a device run's: `data` is device memory, and land queues its work
  int device() const override { return dev; }
};

// A run's per-unit bookkeeping, owned by the communicator and reused, so that a run allocates
// nothing once the arrays have grown to its plan's size.
struct ExecState {
  std::vector<uint8_t> recv_done, acted;
  std::vector<int> slot;
  std::vector<UnitSink> sinks;
  std::vector<uint32_t> sends_left;    // per unit: its sends not completed yet
  std::vector<uint32_t> deps_left;     // per unit: units it waits for that have not acted yet
  std::vector<size_t> ready;           // units whose last wait just ended, to try (TryAct)
  std::vector<size_t> send_cursor;     // per entry of Plan::sends: the next to post
  std::vector<Completion> done;        // Poll's output
  std::vector<int> send_slot;          // per unit: its encoded send chunk (compression), or -1
  StagingPool wire_sends;              // encoded send chunks
  StagingPool device_chunks;           // a device run's staging chunks
  std::vector<const void*> fold_srcs;  // a fold unit's operands (schedules/fold.cc)
};

// The executor's memory seam (pipelined staging of device buffers, pipelined_staging.h): told
// when a run begins, before a unit reads `in` or posts a receive (it may block until that part
// is readable, or, staged in place, writable), and
// after a unit has acted (what it wrote last of `out` may be taken). Null: `in` is readable from
// the start and `out` is handed over whole by the caller. An error from it ends the run.
class ExecMemory {
 public:
  virtual Status Begin(const Plan& plan, size_t esize) = 0;
  virtual Status BeforeRead(size_t unit) = 0;
  virtual Status AfterAct(size_t unit) = 0;

 protected:
  ~ExecMemory() = default;
};

struct ExecArgs {
  const Plan* plan = nullptr;
  Region in;
  Region out;
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  int nranks = 1;      // the average's divisor
  uint32_t seq = 0;    // operation sequence number (same on every rank)
  uint64_t check = 0;  // operation description both ends must agree on
  size_t chunk_bytes = 512 * 1024;
  size_t window = 8;
  // kFp16 / kBf16: f32 or f64 data travels encoded (kernels/wire.h); kNone: as it is.
  Compression compression = Compression::kNone;
  void* residual = nullptr;  // error feedback: same type and count as `in`, or null
  Deadline deadline = Deadline::Never();
  SpinGate gate;  // whether its waits may spin (transport.h)
  // Set by a revocation (CommCore::Revoke) while the run waits: it stops at its next look (every
  // `look` at most) and fails with revoked(). Null: nothing interrupts it.
  const std::atomic<bool>* interrupt = nullptr;
  std::chrono::milliseconds look{20};
  std::function<Status()> revoked;
  double timeout_s = 0;                            // for the timeout message
  std::string_view timeout_name = "HOOP_TIMEOUT";  // what set it (the communicator's options hold the text)
  // On a timeout: the peers whose messages this rank was still waiting for (collectives/core/stall.h
  // follows them to the rank that stopped).
  std::vector<int>* waiting_for = nullptr;
  // Where it waits, for the flight recorder: the step and chunk of the oldest unit not done, at
  // each poll (null: not recorded).
  std::function<void(uint32_t step, uint32_t chunk)> waits;
  // Error text only, so built only on an error (keep the closures pointer-sized: no allocation):
  // "rank 0: allreduce #5 (ring, 1000 x f32, sum)", and a peer's check word as
  // "count 1000 here, 999 on rank 1".
  std::function<std::string()> what;
  std::function<std::string(uint64_t peer_check, int peer)> explain_mismatch;
  // Completions of point-to-point traffic (op ids with mailbox.h's kP2pBit) that arrive while
  // the collective runs go here.
  std::function<void(const Completion&)> foreign;
  ExecMemory* memory = nullptr;
  // A device run: `in` and `out` are device memory the transport moves itself (its
  // DeviceQueueFor), and every reduction and copy of the run is queued here, never waited for.
  // A unit acts once its work is queued; the transport publishes a send only once the queue has
  // passed what was queued before it, and completes a receive once it has passed the receive's
  // work. The caller waits for the queue after the run. No compression, no memory seam.
  DeviceQueue* queue = nullptr;
};

Status Execute(Transport& transport, StagingPool& staging, ExecState& state, const ExecArgs& args);

}  // namespace hoop
