// Communicator: a group of ranks that run collectives together. Create() meets the other ranks
// through a Store, picks a transport, and connects to every peer (full mesh; every rank watches
// every connection, so the loss of any rank is seen by all at once).
//
// Calls return a Work at once; one worker thread per communicator runs the operations in call
// order (every rank must issue the same collectives in the same order). A blocking call
// (CallOptions::blocking) with nothing queued ahead of it runs on the caller's thread instead.
// Work::Wait blocks without spinning. The first failure poisons the communicator: that operation
// fails with the cause, peers are told (abort frames), and every later operation fails with
// Aborted carrying the first cause.
//
// This is the front; the implementation (CommCore, comm_core.h: the queue, the transport, the
// mailbox, device staging) sits behind a pointer, seen by collectives/ alone.
#pragma once

#include <chrono>
#include <csignal>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/core/algo.h"
#include "collectives/core/coll_call.h"
#include "collectives/kernels/wire.h"
#include "common/config.h"
#include "common/deadline.h"
#include "common/status.h"
#include "transport/store/store.h"

namespace hoop {

struct StreamOps;     // collectives/device/stream_order.h: a fake stream's operations, for tests
struct DeviceAccess;  // transport/device_queue.h: a fake device's queues, for tests
class CommCore;       // the implementation (comm_core.h), behind the front

struct CallOptions {
  CallOptions() = default;
  CallOptions(Algo a, bool block = false) : algo(a), blocking(block) {}  // NOLINT: `{algo}` at call sites
  Algo algo = Algo::kAuto;
  // Run on the calling thread when no earlier operation is pending (the returned Work is then
  // already done), instead of handing it to the worker thread: the way to call for the lowest
  // latency when the caller would wait at once anyway. The C API and hoop-perf call this way.
  bool blocking = false;
  // Allreduce only: how f32/f64 sum and avg data travel (kernels/wire.h). Unset: the
  // communicator's default (HOOP_COMPRESSION, where it applies: f32/f64 sum/avg calls).
  // Explicit fp16/bf16 on other data is an error; compression runs the ring algorithm.
  std::optional<Compression> compression;
  // Error feedback for a compressed allreduce: an array of the call's dtype and count, zero at
  // first and passed again on every call for the same tensor (kernels/wire.h). Null: off.
  void* residual = nullptr;
  // A CUDA stream (a cudaStream_t; nullptr is the legacy default stream) to order the call on,
  // as NCCL's calls are: it starts after the work queued on the stream before it, the stream's
  // later work waits for it, and the call never blocks the caller (stream_order.h). Collectives
  // only. Unset: the call is ordered by the caller's thread alone.
  std::optional<void*> stream;
  // Who waits for the call's result (transport.h's SpinGate). Null: its caller, on a blocking
  // call or in Work::Wait, so its waits spin a few tens of microseconds before they sleep, as a
  // reply to a small message comes within that. Set by a thread that calls for someone computing
  // meanwhile (the fusion runtime's): its waits spin only while this counts a waiting thread.
  const std::atomic<int>* waiters = nullptr;
  // The flight recorder's name for the call (the fusion runtime's: the tensors it carries),
  // copied at the call; its first 95 characters are kept. Collectives only.
  std::string_view trace_name;
};

struct CommOptions {
  std::string name = "world";  // store namespace; distinct communicators need distinct names
  int rank = 0;
  int size = 1;
  int job_rank = -1;       // this process's rank in its job (the launcher's): -1, the same as rank
  bool job_ranks = false;  // its ranks are the job's (init from HOOP_RANK/HOOP_SIZE): meet.cc
  int local_rank = -1;     // -1: derive from host names
  int local_size = -1;
  std::string host = "127.0.0.1";
  std::string token;
  std::string transport;  // empty: first registered back end that can reach every peer
  std::chrono::milliseconds timeout{300000};
  std::string timeout_name = "HOOP_TIMEOUT";     // what set timeout, as its errors say
  std::chrono::milliseconds shrink_wait{10000};  // HOOP_SHRINK_WAIT (shrink.cc)
  Algo algo = Algo::kAuto;                       // default when a call says auto
  size_t chunk_bytes = 0;                        // 0: the transport's preferred chunk
  size_t window = 8;
  Compression compression = Compression::kNone;  // default for allreduce calls (HOOP_COMPRESSION)
  // Reductions fold in rank order, bit for bit whatever carries them (HOOP_DETERMINISTIC;
  // schedules/fold.cc). Communicator::SetDeterministic changes it later.
  bool deterministic = false;
  size_t unexpected_bytes = 64u << 20;  // point-to-point messages held unreceived (HOOP_UNEXPECTED_BYTES)
  // The flight recorder (flight_recorder.h): operations kept (HOOP_TRACE_OPS; 0: off), and where
  // a rank whose communicator fails writes them (HOOP_TRACE_DIR; empty: nowhere).
  size_t trace_ops = kDefaultTraceOps;
  std::string trace_dir;
  // The signal that dumps it (trace_signal.h: SIGUSR1; 0: none), and where such a dump goes
  // without trace_dir.
  int trace_signal = SIGUSR1;
  std::string tmp_dir = "/tmp";
  // The job's tcp:// store (HOOP_STORE) where its launcher numbered the job: the live view
  // (`hooprun --status`, trace_status.h) asks there, and this communicator answers. Empty: not asked.
  std::string status_store;
  // Tests only: what is done to a "stream" (StreamOrder's seam). Set, calls on a stream need no
  // CUDA device, so their ordering is tested on a fake stream with host buffers.
  const StreamOps* stream_ops = nullptr;
  // Device buffers of ranks on one host move by CUDA IPC over the shm back end (HOOP_CUDA_IPC);
  // off, they are staged through pinned host memory like those of ranks on other hosts.
  bool cuda_ipc = true;
  // Calls that move fewer bytes than this (count x dtype size, as every rank passes them) stage
  // their device buffers through pinned host memory even where CUDA IPC could move them
  // (HOOP_CUDA_IPC_MIN_BYTES; 0: CUDA IPC at every size). device_route.cc.
  size_t cuda_ipc_min_bytes = 0;
  // The largest batch of copies between a device buffer and its pinned host staging in a call
  // staged piece by piece (HOOP_STAGE_BYTES; 0: one copy per pipeline chunk). pipelined_staging.h.
  size_t stage_bytes = 4u << 20;
  // How far past the run's asks the copies into host staging are queued (HOOP_STAGE_AHEAD).
  size_t stage_ahead_bytes = 8u << 20;
  // Tests only: the device queues the transport gets (transport/device_queue.h) instead of
  // CUDA's. Set, device buffers need no CUDA device: a fake "device" of host memory tests the
  // device runs and the IPC protocol.
  const DeviceAccess* device_access = nullptr;
  static CommOptions FromConfig(const Config& c);
};

// What a Work's waiter may ask of its communicator: to run the Work's operation, and those
// queued ahead of it, on the waiter's own thread while they are still queued, sparing the
// hand-off to the worker and back (CommCore::RunQueuedThrough).
class QueuedRunner {
 public:
  virtual ~QueuedRunner() = default;
  virtual void RunThrough(const void* state) = 0;
  // Threads blocked in Work::Wait on the communicator's nonblocking calls. While there are
  // none, their callers compute, and the waits of the thread running those calls sleep at once
  // instead of spinning on a core the caller needs (SpinGate).
  std::atomic<int> waiters{0};
};

class Work {
 public:
  Work() = default;
  // Completes when the operation finishes (each operation has its own deadline, HOOP_TIMEOUT).
  // One still queued behind nothing running is run on the waiting thread (with the plain
  // collectives queued ahead of it, in order), as the worker would have.
  Status Wait();
  // Gives up waiting at `deadline` (the operation itself goes on).
  Status Wait(Deadline deadline);
  // Wait() for a thread that stands in for no caller: a framework's completion thread, while
  // the caller it serves computes. The operation's waits do not spin for it (SpinGate).
  Status WaitInBackground();
  bool Done() const;
  // The call was refused before it was queued (a bad argument): it never ran, on any rank.
  bool Refused() const;

 private:
  friend class CommCore;
  struct State {
    mutable std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    bool refused = false;
    Status status;
    std::weak_ptr<QueuedRunner> runner;  // set before the Work is shared; empty: nothing to run here
  };
  static Work MakeRefused(Status s);
  Status WaitAs(Deadline deadline, bool counted);
  std::shared_ptr<State> state_;
};

inline constexpr int kUndefined = -1;  // Split's color for "no communicator" (HOOP_UNDEFINED)

class Communicator {
 public:
  // `store` must outlive the communicator: a timeout uses it to find the rank that stopped.
  static StatusOr<std::unique_ptr<Communicator>> Create(Store& store, const CommOptions& options);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  // The orderly end (hoop_finalize, hoop_comm_free; the destructor runs it too): the worker stops
  // once what is queued has run; then, if the communicator is healthy, what completed sends
  // handed over is delivered before it goes, even when the process exits right after: frames
  // still queued go out, and the last communicator over the connections closes them so every
  // byte reaches its peer (Transport::Close), all within HOOP_TIMEOUT. An error names the peer
  // that did not take them or is gone. Only the first call does anything; no call may follow.
  Status Close();

  int rank() const;
  int size() const;
  int local_rank() const;
  int local_size() const;
  std::string transport_name() const;
  // How this rank's calls move memory of CUDA device `device`: "by CUDA IPC" where the transport
  // moves it to every peer itself (ranks on one host over shm, HOOP_CUDA_IPC=1), else "staged
  // through pinned host memory". For reports (hoop-perf).
  std::string DeviceRoute(int device);
  // What it was created with, and the job's store: to create another communicator over some of
  // its ranks with connections of its own (trainer/ps_links.h), where Split's would be shared.
  const CommOptions& options() const;
  Store& store() const;
  // The algorithm a call of `kind` over `bytes` with `per_call` would run.
  Algo ChosenAlgo(CollKind kind, size_t bytes, Algo per_call) const;

  // in and out have the same count and dtype; they may be the same memory.
  Work Allreduce(const Buffer& in, const Buffer& out, ReduceOp op, const CallOptions& o = {});
  // root's in goes to every rank's out (root's in and out may be the same memory; others' in
  // is ignored and may be empty).
  Work Broadcast(const Buffer& in, const Buffer& out, int root, const CallOptions& o = {});
  // in: count elements; out: size*count, block r from rank r. in may be out's own block.
  Work Allgather(const Buffer& in, const Buffer& out, const CallOptions& o = {});
  // in: size*count elements; out: count elements, the reduction of block `rank`.
  Work ReduceScatter(const Buffer& in, const Buffer& out, ReduceOp op, const CallOptions& o = {});
  Work Barrier(const CallOptions& o = {});
  // The reduction of every rank's in (count elements) lands in root's out (count elements);
  // others' out is ignored and may be empty.
  Work Reduce(const Buffer& in, const Buffer& out, ReduceOp op, int root, const CallOptions& o = {});
  // in: count elements from every rank; root's out: size*count, block r from rank r (others'
  // out is ignored). Root's in may be its own block of out.
  Work Gather(const Buffer& in, const Buffer& out, int root, const CallOptions& o = {});
  // root's in: size*count elements, block r to rank r's out (count elements); others' in is
  // ignored. Root's out may be its own block of in.
  Work Scatter(const Buffer& in, const Buffer& out, int root, const CallOptions& o = {});
  // in and out: size*count elements; block p of in goes to rank p, block p of out comes from
  // rank p. in and out may be the same memory.
  Work Alltoall(const Buffer& in, const Buffer& out, const CallOptions& o = {});
  // The v-collectives, MPI's meanings; Blocks hold one count and displacement per rank, in
  // elements (schedule.h). Allgatherv: in (the rank's own block, may be it in out) goes into
  // block `rank` of every rank's out, laid out by `out_blocks`, the same on every rank.
  Work Allgatherv(const Buffer& in, const Buffer& out, Blocks out_blocks, const CallOptions& o = {});
  // ReduceScatterv: in holds every block back to back (counts[r] elements for rank r); out gets
  // the reduction of block `rank` (counts[rank] elements).
  Work ReduceScatterv(const Buffer& in, const Buffer& out, std::vector<size_t> counts, ReduceOp op,
                      const CallOptions& o = {});
  // Alltoallv: block p of in (laid out by `send`) goes to rank p, block p of out (laid out by
  // `recv`) comes from rank p; send.counts[p] here must be recv.counts[me] on rank p. in and
  // out may overlap (exchanged from a copy).
  Work Alltoallv(const Buffer& in, Blocks send, const Buffer& out, Blocks recv, const CallOptions& o = {});

  // Point-to-point (mailbox.h): `in` to rank `peer` with `tag` (>= 0); a receive takes the first
  // message from `peer` (or kAnySource) with `tag`, into `out`, which may be longer than the
  // message; `info` (may be null) gets its source, tag and count before the Work completes.
  // Between one pair with one tag, messages are received in the order sent. Sends and receives
  // are queued in call order like the collectives, but do not hold up what is called after
  // them: they complete whenever their peer does its part. Sends to self are allowed.
  Work Send(const Buffer& in, int peer, int tag, const CallOptions& o = {});
  Work Recv(const Buffer& out, int peer, int tag, std::shared_ptr<RecvInfo> info = nullptr, const CallOptions& o = {});
  // Blocking forms that make no Work: with nothing queued or running, the call runs on this
  // thread from post to completion (the point-to-point fast path: no queue, no hand-off, no
  // shared state); otherwise it is queued like Send/Recv and waited for. `refused` (may be null)
  // is set when the call was refused before it was posted (a bad argument).
  Status SendNow(const Buffer& in, int peer, int tag, bool* refused = nullptr);
  Status RecvNow(const Buffer& out, int peer, int tag, RecvInfo* info = nullptr, bool* refused = nullptr);
  // Sub-communicators (split.cc), MPI_Comm_split's meaning: every rank calls it (a collective on
  // this communicator); ranks with one color make one communicator, ordered by key, ties by rank
  // here; kUndefined gives none (null). The new one talks over this one's connections
  // (transport/shared_transport.h), in its own tag space, with its own worker and sequence, and
  // may be used at the same time as this one. Arguments that disagree (a negative color, a rank
  // that calls something else) fail on every rank. Connections are shared, and so is failure:
  // one that poisons either poisons both, on every rank. Dup: Split(0, rank()).
  StatusOr<std::unique_ptr<Communicator>> Split(int color, int key);
  StatusOr<std::unique_ptr<Communicator>> Dup();
  // Poisons the communicator and tells the peers.
  void Abort(const std::string& cause);
  // Deterministic mode (CommOptions::deterministic, HOOP_DETERMINISTIC): on, every reduction
  // gives each element the bits of the left fold over the ranks in rank order, whatever the
  // algorithm, chunking, fusion, transport, placement or buffer kind (schedules/fold.cc). For
  // the calls made after it; every rank must set the same (a rank that differs fails its next
  // reduction: the ranks disagree on the algorithm). Splits, dups, shrinks and grows inherit it.
  void SetDeterministic(bool on);
  bool deterministic() const;
  // The flight recorder (collectives/core/flight_recorder.h): this rank's last operations as
  // JSON, and that JSON written to DIR/hoop-trace.<name>.<rank>.json (the path; DIR empty:
  // HOOP_TRACE_DIR's). Neither waits on a running call.
  std::string TraceJson(const std::string& reason = "request") const;
  StatusOr<std::string> DumpTrace(const std::string& dir, const std::string& reason = "request") const;
  // The name its dumps give it beside its own ("label"): the caller's (a process group's).
  void SetTraceLabel(const std::string& label);
  // The recorder's name for the next call made on it, from any thread ("name" in a dump; its
  // first 95 characters): PyTorch's op name, given by the torch backend. CallOptions::trace_name
  // names one call where it is made.
  void NameNextCall(std::string name);
  // Revokes the communicator, from this rank alone and any thread: every call on it still
  // running or made later, on every rank, fails with Code::kRevoked naming this rank and `why`
  // (collectives/core/revoke.cc). So do the communicators sharing its connections.
  Status Revoke(const std::string& why);
  // The survivors' communicator (MPI ULFM's MPIX_Comm_shrink, NCCL's ncclCommShrink): every live
  // rank calls it, typically after a call failed with a lost rank or a revocation; they agree on
  // one membership through the store, even if another rank dies meanwhile, and get new ranks in
  // their order here, over connections of their own. A rank that died, or did not come within
  // HOOP_SHRINK_WAIT, is left out (a rank left out gets Unavailable saying so). `excluded`: ranks
  // the caller leaves out as well, alive or not (they do not call it), as PyTorch's shrink_group.
  StatusOr<std::unique_ptr<Communicator>> Shrink(const std::vector<int>& excluded = {});
  // The ranks of this communicator this rank knows to have failed, ascending: peers its
  // connections lost, processes on this host that exited, ranks hooprun saw exit.
  std::vector<int> FailedRanks();
  // This communicator and `count` newcomers (NCCL's ncclCommGrow; collectives/core/grow.cc):
  // every rank calls it; the ranks keep their numbers and the newcomers, each calling Join over
  // the job's store, follow in the order they came. Waits up to HOOP_TIMEOUT for them.
  StatusOr<std::unique_ptr<Communicator>> Grow(int count);
  // How many new processes wait at the job to be admitted (an elastic hooprun's replacements,
  // say): a collective, every rank gets the same count, ready for Grow.
  StatusOr<int> Newcomers();
  // A new process joins the job's next grow (options: its settings; name, rank and size are the
  // grow's). Waits up to HOOP_TIMEOUT to be admitted.
  static StatusOr<std::unique_ptr<Communicator>> Join(Store& store, const CommOptions& options);
  // No operation has failed (the communicator is not poisoned).
  bool healthy();
  // The largest buffer, in bytes, one call can take (message tags number at most 2^24 chunks).
  size_t MaxCallBytes() const;

 private:
  explicit Communicator(std::unique_ptr<CommCore> core);
  std::unique_ptr<CommCore> core_;
};

}  // namespace hoop
