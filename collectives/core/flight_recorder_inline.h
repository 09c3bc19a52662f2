// The flight recorder's part that every operation runs (flight_recorder.h): its slot's layout,
// the claim of a new record, and the mark of a completed one, inline in the communicator's own
// code. Out of line, in flight_recorder.cc's pages, the same instructions cost 15 to 20 ns more
// of a 0.4 us allreduce over shm (docs/PERF.md: measured side by side, the call to the
// recorder's code against the same work inline), three times what the stores themselves cost.
// Included by flight_recorder.h only.
#pragma once

#include <algorithm>

namespace hoop {

// Every field an atomic, written between the version's two steps (odd: being written) and read
// between two equal even readings of it: a seqlock, its fields race-free by construction. What
// every operation writes fills two cache lines, in 13 stores: what never changes after the claim
// is packed (what, who), and what only a failure sets (its end's time, its message's length, its
// peers; the message and peers themselves live apart, in Cold) is not reset: a reader takes it
// only from a slot whose state is failed. A name's length is reset only where names were made.
//
// Who writes a slot: records are made one at a time (a communicator's turn: whichever thread
// runs its operations), each claiming the next id and its slot with plain stores; from then until
// the operation ends, the thread running it (the turn's holder, or the mailbox completing a send
// or receive) is the slot's only writer. No read-modify-write anywhere: a locked instruction
// waits for the caller's earlier stores, the messages it just wrote to shared memory, to leave
// its core (a third of the recorder's cost in a half-microsecond allreduce, when it had two).
// A claim never takes the slot of an operation still queued or started: that one is what a hung
// job's dump is for, so the newer one goes unrecorded (counted in dropped()).
struct alignas(64) FlightRecorder::Slot {
  static constexpr auto kRelaxed = std::memory_order_relaxed;
  std::atomic<uint64_t> version{0};
  std::atomic<uint64_t> id{0}, count{0};
  std::atomic<int64_t> seq{-1}, queued_ns{0}, started_ns{-1}, ended_ns{-1};
  std::atomic<uint64_t> what{0};  // kind, p2p (1 send, 2 receive), dtype, mem, stream: a byte each
  std::atomic<uint64_t> who{0};   // root, and peer << 32 (each as uint32_t)
  std::atomic<int32_t> tag{0};
  std::atomic<uint64_t> where{0};  // step, and chunk << 32
  std::atomic<uint8_t> state{0}, waits{0}, algo{kNoAlgo};
  std::atomic<uint16_t> error_len{0};
  std::atomic<uint8_t> name_len{0};

  static uint64_t What(const TraceCall& c) {
    return uint64_t{static_cast<uint8_t>(c.kind)} |
           uint64_t{c.send   ? 1u
                    : c.recv ? 2u
                             : 0u}
               << 8 |
           uint64_t{static_cast<uint8_t>(c.dtype)} << 16 | uint64_t{static_cast<uint8_t>(c.mem)} << 24 |
           uint64_t{c.stream ? 1u : 0u} << 32;
  }
  static uint64_t Who(const TraceCall& c) {
    return uint64_t{static_cast<uint32_t>(c.root)} | uint64_t{static_cast<uint32_t>(c.peer)} << 32;
  }
  uint8_t p2p() const { return static_cast<uint8_t>(what.load(kRelaxed) >> 8); }

  void Begin() {
    version.store(version.load(kRelaxed) + 1, kRelaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  void End() { version.store(version.load(kRelaxed) + 1, std::memory_order_release); }
  bool InFlight() const {
    const auto st = static_cast<TraceState>(state.load(std::memory_order_acquire));
    return id.load(kRelaxed) != 0 && (st == TraceState::kQueued || st == TraceState::kStarted);
  }
  void Fill(uint64_t new_id, const TraceCall& c, bool started, int64_t new_seq, Algo a, int64_t now, bool names) {
    id.store(new_id, kRelaxed);
    seq.store(new_seq, kRelaxed);
    what.store(What(c), kRelaxed);
    count.store(c.count, kRelaxed);
    who.store(Who(c), kRelaxed);
    tag.store(c.tag, kRelaxed);
    algo.store(started && !c.send && !c.recv ? static_cast<uint8_t>(a) : kNoAlgo, kRelaxed);
    state.store(static_cast<uint8_t>(started ? TraceState::kStarted : TraceState::kQueued), kRelaxed);
    queued_ns.store(now, kRelaxed);
    started_ns.store(started ? now : -1, kRelaxed);
    where.store(0, kRelaxed);
    if (names) name_len.store(0, kRelaxed);
  }
};

inline FlightRecorder::Slot* FlightRecorder::Owned(uint64_t id) const {
  if (id == 0) return nullptr;
  Slot& s = slots_[(id - 1) & mask_];
  return s.id.load(std::memory_order_relaxed) == id ? &s : nullptr;
}

inline uint64_t FlightRecorder::Claim(const TraceCall& c, bool started, int64_t seq, Algo algo, int64_t now_ns) {
  if (!capacity_) return 0;
  const uint64_t id = next_.load(std::memory_order_relaxed);  // one at a time: no fetch-and-add
  next_.store(id + 1, std::memory_order_relaxed);
  Slot& s = slots_[(id - 1) & mask_];
  if (s.InFlight()) {  // held by one queued or started
    dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return 0;
  }
  if (s.version.load(std::memory_order_acquire) & 1) AwaitWriter(s);  // its last writer finishing
  s.Begin();
  s.Fill(id, c, started, seq, algo, std::max<int64_t>(0, now_ns - begin_ns_),
         names_.load(std::memory_order_relaxed) != nullptr);
  s.End();
  return id;
}

inline uint64_t FlightRecorder::Begun(const TraceCall& call, int64_t seq, Algo algo,
                                      std::chrono::steady_clock::time_point at) {
  return capacity_ ? Claim(call, true, seq, algo,
                           std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count())
                   : 0;
}

inline void FlightRecorder::Done(uint64_t id, Algo algo) {
  Slot* s = Owned(id);
  if (!s) return;
  if (algo != Algo::kAuto) s->algo.store(static_cast<uint8_t>(algo), std::memory_order_relaxed);
  // With release: a claimer that reads it done sees the rest (InFlight).
  s->state.store(static_cast<uint8_t>(TraceState::kDone), std::memory_order_release);
}

}  // namespace hoop
