// The tensor fusion runtime: Horovod's engine, without its globals.
//
// Any thread submits a named tensor (allreduce, broadcast or allgather) and gets a Handle at
// once. A background thread runs a negotiation cycle every HOOP_CYCLE_TIME_MS: the ranks agree
// which tensors every one of them has submitted (negotiator.h: one small allreduce in steady
// state, thanks to the response cache; rank 0's coordinator for anything new), plan fusion
// groups from the agreed list (fusion_planner.h), and run each group as one collective
// (execute.h). Ranks may submit in any order, at any time, from any threads: every rank runs
// the same tensors in the same order.
//
// What can go wrong, and what the caller sees:
//  - a bad call (null buffer, counts that do not fit, a root that is not a rank, scale factors
//    on integers, device memory, a name already pending here): that handle fails at once;
//  - ranks submitting one name with different parameters: that tensor fails on every rank with
//    one message naming it, the ranks and the values; the runtime goes on;
//  - a name some ranks never submit: rank 0 warns every HOOP_STALL_WARNING_S which ranks are
//    missing, and after HOOP_TIMEOUT fails it on the ranks that did;
//  - a lost peer or any failed collective: the tensors of that collective fail with its error,
//    every other pending and later one with Aborted carrying it;
//  - Shutdown() on any rank: negotiated, so every rank stops after the same cycle; tensors not
//    run by then fail with Aborted saying so.
//
// Join() is Horovod's join, for ranks whose data runs out before the others': a rank that has
// joined stands in for every allreduce the others go on submitting (with the op's identity,
// stand_in.h), until every rank has joined.
//
// The runtime drives the communicator from its own thread: while it runs, nothing else may call
// collectives on that communicator (their order could not match across ranks). Once every rank
// has shut it down, the communicator is free again.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collectives/api/communicator.h"
#include "common/config.h"
#include "tensorfusion/execute.h"
#include "tensorfusion/handle.h"
#include "tensorfusion/negotiator.h"
#include "tensorfusion/response_cache.h"
#include "tensorfusion/timeline.h"

namespace hoop::fusion {

struct FusionOptions {
  double cycle_time_ms = 1;                   // HOOP_CYCLE_TIME_MS
  uint64_t fusion_threshold = 64u << 20;      // HOOP_FUSION_THRESHOLD (0: no fusion)
  size_t cache_capacity = 1024;               // HOOP_CACHE_CAPACITY (0: always ask rank 0)
  double stall_warning_s = 60;                // HOOP_STALL_WARNING_S (0: never warn)
  std::string timeline;                       // HOOP_TIMELINE (rank 0 writes it)
  bool timeline_mark_cycles = false;          // HOOP_TIMELINE_MARK_CYCLES
  std::chrono::milliseconds timeout{300000};  // HOOP_TIMEOUT
  std::string timeout_name = "HOOP_TIMEOUT";  // what set timeout, as its errors say
  static FusionOptions FromConfig(const Config& c);
};

struct TensorOptions {
  std::optional<Compression> compression;  // allreduce: as CallOptions::compression
  double prescale = 1, postscale = 1;      // allreduce of f16/bf16/f32/f64: in * pre, out * post
  Callback callback;                       // run when the tensor completes (handle.h)
  // false: the tensor runs alone, straight on its buffers, never packed into the fusion buffer
  // (a bucket of its own already); every rank must submit it alike.
  bool fuse = true;
};

struct RuntimeStats {
  uint64_t cycles = 0;               // negotiation cycles run
  uint64_t coordinated_cycles = 0;   // those that also went through rank 0's coordinator
  double readiness_us = 0;           // time in the one-allreduce exchange, all cycles
  double coordinate_us = 0;          // time in the coordinator's exchanges
  uint64_t tensors = 0, groups = 0;  // tensors run, and the collectives that ran them
};

class Runtime {
 public:
  // Starts the background thread. Every rank of `comm` must start one.
  static StatusOr<std::unique_ptr<Runtime>> Start(Communicator& comm, const FusionOptions& options);
  ~Runtime();  // Shutdown()
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // in and out as Communicator's calls take them (in may equal out). `name` identifies the
  // tensor across ranks; it may be reused once its earlier submission has completed.
  Handle Allreduce(const std::string& name, const Buffer& in, const Buffer& out, ReduceOp op, TensorOptions o = {});
  Handle Broadcast(const std::string& name, const Buffer& in, const Buffer& out, int root, TensorOptions o = {});
  Handle Allgather(const std::string& name, const Buffer& in, const Buffer& out, TensorOptions o = {});

  // This rank has no more tensors for now. Until every rank has joined, its runtime stands in for
  // it in every allreduce the other ranks submit (stand_in.h: sum and avg see zeros, so avg
  // divides by every rank, as Horovod's), while a broadcast or allgather submitted meanwhile fails
  // on the ranks that submitted it, naming the joined ranks. The handle completes once every rank
  // has joined, after `*last_rank` is set to the rank that joined last (the same on every rank);
  // then the ranks submit as before. Tensors this rank submitted before joining run as usual. One
  // join at a time (a second before the first completes is refused); Synchronize does not wait
  // for it.
  Handle Join(int* last_rank);
  // Some rank has joined and not every rank has yet, as of this rank's latest cycle.
  bool SomeJoined() const { return some_joined_.load(); }

  // Horovod's start_timeline and stop_timeline, from any thread: (re)starts the timeline in a new
  // file at `path` (rank 0 writes it; on the other ranks this does nothing), or ends it, leaving
  // a complete file. Started at start-up by HOOP_TIMELINE.
  Status StartTimeline(const std::string& path, bool mark_cycles);
  void StopTimeline();

  // Waits for every tensor this rank submitted before the call; the first failure among them,
  // or DeadlineExceeded.
  Status Synchronize(Deadline deadline = Deadline::Never());
  // Asks every rank to stop (negotiated) and waits for this rank's thread to end. OK when it
  // stopped that way; the cause when it had stopped on an error before.
  Status Shutdown();
  RuntimeStats stats() const;

 private:
  struct Entry {
    TensorParams params;
    Buffer in, out;
    std::shared_ptr<HandleState> handle;
    std::chrono::steady_clock::time_point submitted, agreed;
    int slot = -1;          // the cache slot this rank marks ready this cycle, or -1
    bool reported = false;  // sent to the coordinator
  };
  using Clock = std::chrono::steady_clock;

  Runtime(Communicator& comm, const FusionOptions& o);
  Handle Submit(const std::string& name, TensorParams p, const Buffer& in, const Buffer& out, TensorOptions o);
  // Why the call is refused, or "" (Submit turns it into a Status naming rank and tensor).
  std::string Check(const TensorParams& p, const Buffer& in, const Buffer& out, const TensorOptions& o) const;
  void Loop();
  Status Cycle(int* shutdown_by);  // shutdown_by: the rank that asked, once agreed; else -1
  void Drain();
  // What this rank sends the coordinator: its pending tensors no cache slot made ready, and its
  // join, each once.
  std::vector<Request> Reports(Clock::time_point now);
  Status RunAgreed(const std::vector<Response>& agreed, Clock::time_point agreed_at);
  // A buffer of the op's identity standing in for this joined rank in tensor `a` (a response for
  // a name it has not submitted); the member runs it with the others.
  Member StandIn(const Response& a);
  void TimeGroup(const std::vector<Member>& group, uint64_t bytes, const GroupTimes& t);  // its timeline spans
  Status EndJoin(int last);                        // every rank has joined: completes this rank's join
  void Finish(const std::string& name, Status s);  // completes and forgets a pending tensor
  // The same for a group that ran together; a failure's message is prefixed with each name.
  void Finish(const std::vector<std::string>& names, const Status& s);

  Communicator& comm_;
  const FusionOptions opts_;
  Clock::duration report_after_;  // a cached tensor waiting this long goes to the coordinator

  // Callers blocked on a Handle (Handle::Wait): the thread's calls spin only while there are any.
  std::shared_ptr<std::atomic<int>> waiters_ = std::make_shared<std::atomic<int>>(0);
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::pair<std::string, Entry>> incoming_;
  // Submitted in order, for Synchronize; completed ones are dropped from the front.
  std::deque<std::shared_ptr<HandleState>> submitted_;
  // The latest submission of each name (under mu_): a name submitted again while that one is
  // unfinished is refused at the call, not at its wait.
  std::unordered_map<std::string, std::weak_ptr<HandleState>> latest_;
  bool shutdown_asked_ = false;
  // A join submitted and not yet taken by the thread; whether one is pending at all.
  std::shared_ptr<HandleState> join_incoming_;
  int* join_last_incoming_ = nullptr;
  bool join_pending_ = false;
  bool stopped_ = false;
  bool shut_down_ = false;  // stopped by an agreed Shutdown, not by an error
  Status stop_cause_;       // why the thread ended
  RuntimeStats stats_;
  std::mutex join_mu_;
  std::thread thread_;
  std::atomic<bool> some_joined_{false};

  // The thread's own.
  struct StandInBuffer {
    TensorParams params;
    std::vector<char> bytes;
  };
  std::shared_ptr<HandleState> join_;  // this rank's join, until every rank has joined
  int* join_last_ = nullptr;
  bool join_reported_ = false;
  std::map<std::string, StandInBuffer> stand_ins_;  // this cycle's
  std::unordered_map<std::string, Entry> pending_;
  ResponseCache cache_;
  Negotiator negotiator_;
  std::mutex timeline_mu_;  // the timeline may be started and stopped from other threads
  Timeline timeline_;
  std::vector<uint8_t> bits_, slot_ready_;
  Clock::time_point exchanged_;  // when the last readiness exchange ended
  std::vector<char> fusion_;
  DeviceFusionBuffer device_fusion_;
  std::vector<std::pair<std::shared_ptr<HandleState>, Status>> done_;
};

}  // namespace hoop::fusion
