// Communicator: a group of ranks that run collectives together. Create() meets the other ranks
// through a Store, picks a transport, and connects to every peer (full mesh; every rank watches
// every connection, so the loss of any rank is seen by all at once).
//
// Calls return a Work at once; one worker thread per communicator runs the operations in call
// order (every rank must issue the same collectives in the same order). A blocking call
// (CallOptions::blocking) with nothing queued ahead of it runs on the caller's thread instead. Work::Wait blocks
// without spinning. The first failure poisons the communicator: that operation fails with the
// cause, peers are told (abort frames), and every later operation fails with Aborted carrying
// the first cause.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "collectives/algo.h"
#include "collectives/device_staging.h"
#include "collectives/executor.h"
#include "collectives/kernels/wire.h"
#include "collectives/mailbox.h"
#include "collectives/op_desc.h"
#include "collectives/pipelined_staging.h"
#include "collectives/ready_events.h"
#include "collectives/stream_order.h"
#include "collectives/stream_staging.h"
#include "common/host_memory.h"
#include "common/config.h"
#include "common/dtype.h"
#include "common/status.h"
#include "transport/shared_transport.h"
#include "transport/store.h"
#include "transport/transport.h"

namespace hoop {

// A typed view of caller memory.
struct Buffer {
  void* data = nullptr;
  size_t count = 0;
  DType dtype = DType::kF32;
  MemKind kind = MemKind::kHost;
};

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
};

struct CommOptions {
  std::string name = "world";  // store namespace; distinct communicators need distinct names
  int rank = 0;
  int size = 1;
  int local_rank = -1;  // -1: derive from host names
  int local_size = -1;
  std::string host = "127.0.0.1";
  std::string token;
  std::string transport;  // empty: first registered back end that can reach every peer
  std::chrono::milliseconds timeout{300000};
  Algo algo = Algo::kAuto;  // default when a call says auto
  size_t chunk_bytes = 0;   // 0: the transport's preferred chunk
  size_t window = 8;
  Compression compression = Compression::kNone;  // default for allreduce calls (HOOP_COMPRESSION)
  size_t unexpected_bytes = 64u << 20;           // point-to-point messages held unreceived (HOOP_UNEXPECTED_BYTES)
  // Tests only: what is done to a "stream" (StreamOrder's seam). Set, calls on a stream need no
  // CUDA device, so their ordering is tested on a fake stream with host buffers.
  const StreamOps* stream_ops = nullptr;
  // Device buffers of ranks on one host move by CUDA IPC over the shm back end (HOOP_CUDA_IPC);
  // off, they are staged through pinned host memory like those of ranks on other hosts.
  bool cuda_ipc = true;
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

class Work {
 public:
  Work() = default;
  // Completes when the operation finishes (each operation has its own deadline, HOOP_TIMEOUT).
  Status Wait();
  // Gives up waiting at `deadline` (the operation itself goes on).
  Status Wait(Deadline deadline);
  bool Done() const;
  // The call was refused before it was queued (a bad argument): it never ran, on any rank.
  bool Refused() const;

 private:
  friend class Communicator;
  struct State {
    mutable std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    bool refused = false;
    Status status;
  };
  static Work MakeRefused(Status s);
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

  int rank() const { return opts_.rank; }
  int size() const { return opts_.size; }
  int local_rank() const { return opts_.local_rank; }
  int local_size() const { return opts_.local_size; }
  std::string transport_name() const;
  // How this rank's calls move memory of CUDA device `device`: "by CUDA IPC" where the transport
  // moves it to every peer itself (ranks on one host over shm, HOOP_CUDA_IPC=1), else "staged
  // through pinned host memory". For reports (hoop-perf).
  std::string DeviceRoute(int device);
  // What it was created with, and the job's store: to create another communicator over some of
  // its ranks with connections of its own (trainer/ps_links.h), where Split's would be shared.
  const CommOptions& options() const { return opts_; }
  Store& store() const { return *store_; }
  // The algorithm a call of `kind` over `bytes` with `per_call` would run.
  Algo ChosenAlgo(CollKind kind, size_t bytes, Algo per_call) const {
    return ChooseAlgo(kind, bytes, opts_.size, per_call, opts_.algo).algo;
  }

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
  // No operation has failed (the communicator is not poisoned).
  bool healthy();
  // The largest buffer, in bytes, one call can take (message tags number at most 2^24 chunks).
  size_t MaxCallBytes() const;

 private:
  // The pipeline chunk every run cuts its buffers into: HOOP_CHUNK_BYTES, else the back end's.
  size_t ChunkBytes() const { return opts_.chunk_bytes ? opts_.chunk_bytes : transport_->PreferredChunkBytes(); }
  // Elements of `esize` bytes in a chunk (at least one): the plans' unit, part of their key.
  size_t ChunkElems(size_t esize) const { return std::max<size_t>(1, ChunkBytes() / esize); }
  // Rank 0 says once when HOOP_ALGO=hierarchical cannot apply to this communicator's host map.
  void WarnUnevenHierarchical() const;
  struct Op {
    CollKind kind;
    Buffer in, out;
    ReduceOp op = ReduceOp::kSum;
    int root = -1;
    Algo algo = Algo::kAuto;
    std::optional<Compression> compression;
    void* residual = nullptr;
    std::shared_ptr<const VBlocks> v;  // the v-collectives' layouts
    bool abort = false;                // Abort(): poisons and tells peers, runs nothing
    std::shared_ptr<P2pCall> p2p;      // a send or receive (kind is then meaningless)
    std::shared_ptr<Work::State> state;
    std::optional<void*> stream;  // CallOptions::stream
    StreamTicket ticket;          // its place on that stream (seq 0: none), taken when queued
    Status stage_error;           // staging it on the stream failed after its hold was queued
    ReadyEvents::Ready ready;     // a plain call on device memory: the caller's work before it
  };
  // Where a communicator sits among those sharing its connections.
  struct Membership {
    std::shared_ptr<TransportHub> hub;
    int id = 0;                      // its view's id (0: the communicator that made the connections)
    std::vector<int> members;        // its rank r is the connections' rank members[r]
    std::vector<std::string> hosts;  // by rank
  };
  Communicator(CommOptions opts, Store* store, Membership m, std::unique_ptr<Transport> transport);
  Work Submit(Op op, bool blocking);
  void WorkerLoop();
  void RunOne(const Op& op, bool caller_waits);  // runs (or refuses) one operation and completes its Work
  // RunOne's run of a collective on the turn's holder, with a communicator not failed: the next
  // sequence number, a timeout explained, a failure poisoning the communicator.
  Status RunCollectiveOp(const Op& op);
  // Hands a send or receive to the mailbox; with `caller_waits`, drives progress until it is done.
  void RunP2p(const Op& op, bool caller_waits);
  // After a blocking send or receive: polls until the transport has taken the mailbox's frames
  // (a small send completes inside one), for the call's HOOP_TIMEOUT at most.
  void FlushFrames(Deadline flush);
  // SendNow/RecvNow's shared body.
  Status RunNow(bool is_send, const Buffer& b, int peer, int tag, RecvInfo* info, bool* refused);
  // on_stream: a call on a CUDA stream, whose device buffer is staged at the call (EnterStreamP2p).
  Status CheckP2p(bool is_send, const Buffer& b, int peer, int tag, bool on_stream = false, bool direct = false) const;
  // A send or receive of device memory (p2p_device.cc): its host copy (a send's filled), and the
  // host buffer to run the call on; an error naming rank and call where it cannot be staged.
  StatusOr<std::shared_ptr<std::vector<char>>> StageP2p(bool is_send, const Buffer& b) const;
  // Copies a staged receive's `bytes` back to the device buffer.
  Status UnstageP2p(const Buffer& b, const std::vector<char>& host, size_t bytes) const;
  // A send or receive of at most one piece of host memory that CheckP2p would pass, told at a
  // glance (no Status, no string): false means only "ask CheckP2p". On a ping-pong's path.
  bool PlainP2p(bool is_send, const Buffer& b, int peer, int tag) const {
    const size_t bytes = b.count * DTypeSize(b.dtype);  // count is bounded below first
    return peer >= (is_send ? 0 : kAnySource) && peer < opts_.size && tag >= 0 && HostVisible(b.kind) &&
           DTypeSize(b.dtype) != 0 && b.count < (size_t{1} << 40) && (b.data != nullptr || b.count == 0) &&
           reinterpret_cast<uintptr_t>(b.data) < (uintptr_t{1} << 62) && bytes <= mailbox_->piece_bytes() &&
           HostReadable(b);
  }
  // Whether a host buffer is memory this process can read: the C API takes for host memory
  // whatever cudaPointerGetAttributes does not know, which includes a device pointer from another
  // process (where CUDA merely reserves the addresses, or nothing is mapped). Asked only where
  // CUDA devices are; each answer kept for the range (ReadableCache). Unreadable: the refusal's words.
  bool HostReadable(const Buffer& b) const;
  static std::string Unreadable(const Buffer& b);
  Status CheckP2p(const P2pCall& c, bool on_stream = false) const {
    return CheckP2p(c.is_send, Buffer{c.data, c.count, c.dtype, c.kind}, c.peer, c.tag, on_stream, c.queue != nullptr);
  }
  // After every turn on the transport: a mailbox failure poisons the communicator; a poisoned
  // one fails the mailbox's calls. Then publishes whether the mailbox has calls in flight.
  void AfterTurn();
  // AfterTurn, then gives the transport back (the turn) and wakes the worker if it has work:
  // the end of a call run on the caller's thread; one compare-and-swap when nothing is queued,
  // failed or in flight, else one hold of mu_ when nothing failed.
  void EndTurn();
  // The turn on the transport (turn_): taken without mu_ when it is free and nothing is queued,
  // stopping or failed (a blocking send or receive); under mu_ otherwise. Blocked() recomputes
  // kBlocked after any change of queue_, stopping_ or poisoned_ (under mu_).
  bool TryTurn() {
    uint32_t free = 0;
    return turn_.compare_exchange_strong(free, kHeld, std::memory_order_acquire, std::memory_order_relaxed);
  }
  bool ClaimLocked();
  bool Held() const { return turn_.load(std::memory_order_relaxed) & kHeld; }
  void ReleaseLocked() { turn_.fetch_and(~kHeld, std::memory_order_release); }
  void Blocked();
  // Poisons the communicator with `why` (first failure wins) and tells the peers.
  void Poison(const Status& why);
  Status RunOp(const Op& op, uint32_t seq);
  // Device buffers: whether op has any this rank uses, and the run through pinned host staging
  // (device_staging.h).
  bool OnDevice(const Op& op) const;
  Status RunStaged(const Op& op, uint32_t seq);
  // An allreduce on device buffers: staged piece by piece beside the wire (pipelined_staging.h).
  Status RunPipelined(const Op& op, uint32_t seq, int device);
  // Device buffers the transport moves itself (CUDA IPC, device_direct.cc): the queue to run op
  // on, or null (it is staged), and the run: the collective's own code with direct_ set.
  DeviceQueue* DirectQueue(const Op& op);
  Status RunDirect(const Op& op, uint32_t seq, DeviceQueue& q);
  // The collective's own code (allreduce.cc, ...), on host buffers or inside a device run.
  Status RunCollective(const Op& op, uint32_t seq);
  // The collectives' own copies (placements of a rank's block, working copies): memmove on the
  // host, or queued on the device run's queue (through a bounce where the ranges overlap).
  Status Place(void* dst, const void* src, size_t bytes);
  int DeviceOf(const void* p) const;  // -1: not device memory
  // Sends and receives of device memory the transport moves itself (CUDA IPC, p2p.cc): its queue
  // for `b`, or null (staged); and the call to submit, or none (stage it).
  DeviceQueue* DirectP2pQueue(const Buffer& b);
  std::optional<Op> DirectP2p(bool is_send, const Buffer& b, int peer, int tag, std::shared_ptr<RecvInfo> info);
  // A call on a CUDA stream, at the call (under mu_): its device buffers staged by copies queued
  // on the stream around its hold, `op` rewritten to the pinned copies (stream_staging.h).
  StatusOr<StreamTicket> EnterStream(Op& op);
  // The same for a send or receive: a device buffer's pinned copy filled before the hold (a
  // receive's too, so that a message shorter than the buffer leaves the rest as it was) and a
  // receive's copied back after it (p2p_device.cc).
  StatusOr<StreamTicket> EnterStreamP2p(Op& op);
  // On the worker: until the stream's work before the call is done, driving the sends and
  // receives in flight meanwhile (the stream may be waiting for one of them to end).
  Status WaitStreamInput(const StreamTicket& t);
  // One per collective, each in its own file (allreduce.cc, broadcast.cc, ...).
  Status RunAllreduce(const Op& op, uint32_t seq);
  // A small allreduce as blocking exchanges on the caller's thread (small_allreduce.cc): where
  // it fits, and the run.
  static constexpr size_t kSmallAllreduceBytes = 4096;
  bool SmallAllreduceFits(const Op& op, Algo algo, Compression wire) const;
  Status RunSmallAllreduce(const Op& op, uint32_t seq, Algo algo);
  // One of its steps: the receive from recv_peer (-1: none) lands in small_recv_, `send` goes to
  // send_peer (-1: none), both as message `msg` of the call; returns once both are done.
  struct SmallCall {
    const Op* op;
    Algo algo;
    uint32_t seq;
    uint64_t check;
    OpDesc desc;
    size_t bytes;
    Deadline deadline;
  };
  Status SmallStep(const SmallCall& k, int recv_peer, int send_peer, uint16_t msg, const void* send);
  // small_recv_ registered (once); false where the back end refuses it (then the executor runs).
  bool SmallRecvReady();
  Status RunBroadcast(const Op& op, uint32_t seq);
  Status RunAllgather(const Op& op, uint32_t seq);
  Status RunReduceScatter(const Op& op, uint32_t seq);
  Status RunBarrier(const Op& op, uint32_t seq);
  Status RunReduce(const Op& op, uint32_t seq);
  Status RunGather(const Op& op, uint32_t seq);
  Status RunScatter(const Op& op, uint32_t seq);
  Status RunAlltoall(const Op& op, uint32_t seq);
  Status RunAllgatherv(const Op& op, uint32_t seq);
  Status RunReduceScatterv(const Op& op, uint32_t seq);
  Status RunAlltoallv(const Op& op, uint32_t seq);
  // The v-collectives' layout checks (vectored.cc); "" when the call is well-formed.
  std::string CheckBlocks(const Op& op) const;
  // Queues a collective of `kind` (the shared body of the calls above).
  Work Post(CollKind kind, const Buffer& in, const Buffer& out, ReduceOp op, int root, const CallOptions& o);
  // Runs the plan for (op's collective, algo, count) from in to out; plans are cached (plan.h).
  // `memory`: the executor's memory seam (executor.h), for staged device buffers. Inside a device
  // run (direct_) the executor runs on its queue.
  Status RunSchedule(const Op& op, Algo algo, size_t count, const Buffer& in, const Buffer& out, uint32_t seq,
                     Compression wire = Compression::kNone, ExecMemory* memory = nullptr);
  // How an allreduce travels: none, fp16 or bf16, with auto decided (compression_policy.cc).
  StatusOr<Compression> WireFor(const Op& op);
  StatusOr<double> ProbeLinkGBps();
  // Checks that a call is well-formed before it is queued; the error names rank and operation.
  Status CheckCall(const Op& op) const;
  StatusOr<Algo> Resolve(const Op& op) const;
  std::string Describe(const Op& op, uint32_t seq, Algo algo, Compression wire = Compression::kNone) const;
  static size_t DescCount(const Op& op);
  // Whether this rank reads op's in / writes op's out (a rooted collective's other ranks may not).
  bool UsesIn(const Op& op) const;
  bool UsesOut(const Op& op) const;
  // A scratch_ buffer of `count` elements of `dtype` (grown, never shrunk); device memory of the
  // queue's inside a device run.
  Buffer Scratch(size_t count, DType dtype);

  // A timeout's message, completed with who stopped making progress (stall.h).
  Status ExplainTimeout(const Status& timeout);

  CommOptions opts_;
  Store* store_;                          // the job's store, for stall reports; outlives the communicator
  uint32_t splits_ = 0;                   // splits made from this communicator, which name the new ones
  std::vector<int> waiting_for_;          // the last operation's peers still awaited when it timed out
  std::unique_ptr<Mailbox> mailbox_;      // destroyed after the transport that holds its memory
  Membership membership_;                 // the hub: the back end goes with its last communicator
  std::unique_ptr<Transport> transport_;  // used only by whoever holds the turn
  StagingPool staging_;
  PinnedStaging device_staging_;                   // host copies of device buffers (RunStaged, RunPipelined)
  std::unique_ptr<CudaStageCopies> stage_copies_;  // the staging's streams and events, on one device
  ReadyEvents ready_events_;                       // where plain calls on device memory start (Submit)
  StreamStaging stream_staging_;                   // the same for calls on a CUDA stream (under mu_)
  mutable ReadableCache readable_;                 // host buffers found readable (CheckCall, where CUDA devices are)
  StreamOrder stream_order_;                       // calls on CUDA streams (after the worker, which releases them)
  PlanCache plans_;
  bool even_hosts_ = false;  // 2+ hosts, the same 2+ ranks on each: auto may pick hierarchical
  ExecState exec_;
  std::vector<char> scratch_;        // working copies: reduce-scatter's, non-root reduce's, in-place alltoall's
  DeviceQueue* direct_ = nullptr;    // inside a device run (RunDirect): its queue
  std::vector<char> small_buf_;      // the small calls' landing place for a partner's message (SmallStep),
  Region small_recv_;                // registered with the transport on first use
  Status direct_error_;              // the first Scratch failure inside one
  std::optional<double> link_gbps_;  // HOOP_COMPRESSION=auto's measured ring bandwidth

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  bool stopping_ = false;
  bool closed_ = false;  // Close ran (the owner's thread only)
  // kHeld: an operation is running (on the worker or a blocking caller); kBlocked: something is
  // queued, the communicator is stopping or failed, so the turn is not to be taken without mu_.
  static constexpr uint32_t kHeld = 1, kBlocked = 2;
  std::atomic<uint32_t> turn_{0};
  bool p2p_busy_ = false;    // the mailbox has calls in flight: the idle worker drives progress
  Status poisoned_;          // first failure; guarded by mu_
  uint32_t seq_ = 0;         // operation sequence number; used by whoever holds the turn
  bool told_peers_ = false;  // likewise
  std::thread worker_;
  std::shared_ptr<P2pCall> now_call_;  // reused by SendNow/RecvNow; touched only by the turn's holder
  // The state of every blocking call that ran on its caller's thread and succeeded: done, OK,
  // never written again, so shared by their Works (no allocation per call).
  const std::shared_ptr<Work::State> done_ok_ = [] {
    auto s = std::make_shared<Work::State>();
    s->done = true;
    return s;
  }();
};

}  // namespace hoop
