// CommCore: the Communicator's implementation, behind its front (communicator.h, which says
// what each call means): the operation queue and its worker, the turn on the transport, the
// checks and runs of the collective table's rows (coll_table.h), point-to-point through the
// mailbox, device buffers (staged, pipelined or by CUDA IPC), calls on CUDA streams, splits.
// Only collectives/ sees it; tensorfusion/, trainer/, perf/ and tools/ see the front.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "collectives/api/communicator.h"
#include "collectives/core/algo.h"
#include "collectives/core/coll_call.h"
#include "collectives/core/coll_table.h"
#include "collectives/core/executor.h"
#include "collectives/core/flight_recorder.h"
#include "collectives/core/op_desc.h"
#include "collectives/device/device_staging.h"
#include "collectives/device/pipelined_staging.h"
#include "collectives/device/ready_events.h"
#include "collectives/device/stream_order.h"
#include "collectives/device/stream_staging.h"
#include "collectives/kernels/wire.h"
#include "common/config.h"
#include "common/dtype.h"
#include "common/host_memory.h"
#include "common/status.h"
#include "transport/shared_transport.h"
#include "transport/store/store.h"
#include "transport/tagged/mailbox.h"
#include "transport/transport.h"

namespace hoop {

class CommCore {
 public:
  // How a communicator's ranks meet, where not plainly (a shrink's: shrink.cc): by when; through
  // another way to the same store (one that stops waiting once a member is gone), the
  // communicator keeping the plain one; and what the back ends ask between their waits.
  struct Meeting {
    std::optional<Deadline> by;  // unset: HOOP_TIMEOUT from now
    Store* store = nullptr;
    std::function<Status()> give_up;
    std::string deadline_name = {};  // what set `by`, as the errors say; empty: the options' timeout_name
  };
  // Meets the other ranks through the store and connects them.
  static StatusOr<std::unique_ptr<CommCore>> Create(Store& store, const CommOptions& options, const Meeting& meeting);
  // The same as a job starts (meet.cc): gives up at once where the launcher saw a rank end.
  static StatusOr<std::unique_ptr<CommCore>> Create(Store& store, const CommOptions& options);
  ~CommCore();
  CommCore(const CommCore&) = delete;
  CommCore& operator=(const CommCore&) = delete;
  Status Close();

  int rank() const { return opts_.rank; }
  int size() const { return opts_.size; }
  int local_rank() const { return opts_.local_rank; }
  int local_size() const { return opts_.local_size; }
  std::string transport_name() const;
  std::string DeviceRoute(int device);
  const CommOptions& options() const { return opts_; }
  Store& store() const { return *store_; }
  Algo ChosenAlgo(CollKind kind, size_t bytes, Algo per_call) const {
    return ChooseAlgo(kind, bytes, opts_.size, per_call, opts_.algo, even_hosts_, deterministic()).algo;
  }

  // Queues a collective call of `kind` (the front's calls: communicator.cc); `v`: the
  // v-collectives' layouts.
  Work Post(CollKind kind, const Buffer& in, const Buffer& out, ReduceOp op, int root, const CallOptions& o,
            std::shared_ptr<const VBlocks> v = nullptr);

  Work Send(const Buffer& in, int peer, int tag, const CallOptions& o = {});
  Work Recv(const Buffer& out, int peer, int tag, std::shared_ptr<RecvInfo> info = nullptr, const CallOptions& o = {});
  Status SendNow(const Buffer& in, int peer, int tag, bool* refused = nullptr);
  Status RecvNow(const Buffer& out, int peer, int tag, RecvInfo* info = nullptr, bool* refused = nullptr);
  StatusOr<std::unique_ptr<CommCore>> Split(int color, int key);
  StatusOr<std::unique_ptr<CommCore>> Dup();
  // The survivors' new communicator (shrink.cc): every live rank not `excluded` calls it; ranks
  // renumbered in their order here.
  StatusOr<std::unique_ptr<CommCore>> Shrink(const std::vector<int>& excluded = {});
  // This communicator's ranks this rank knows to have failed, ascending (shrink.cc).
  std::vector<int> FailedRanks();
  // This communicator and `count` newcomers (grow.cc): every rank calls Grow; each newcomer
  // calls Join over the job's store (options: its settings; name, rank and size come from the
  // grow that admits it).
  StatusOr<std::unique_ptr<CommCore>> Grow(int count);
  // How many new processes wait at the job to be admitted (grow.cc): a collective (rank 0 reads
  // the store, every rank gets its answer), so that every rank can pass it to Grow.
  StatusOr<int> Newcomers();
  static StatusOr<std::unique_ptr<CommCore>> Join(Store& store, const CommOptions& options);
  void Abort(const std::string& cause);
  // Revokes the communicator (revoke.cc): this rank's running and later calls fail with
  // Code::kRevoked naming this rank and `why`, and so do every other rank's, told at once.
  Status Revoke(const std::string& why);
  // The deterministic mode (CommOptions::deterministic): calls made after a change take it; a
  // split, dup, shrink or grow inherits it as it is then.
  void SetDeterministic(bool on) { deterministic_.store(on, std::memory_order_relaxed); }
  bool deterministic() const { return deterministic_.load(std::memory_order_relaxed); }
  // The flight recorder (flight_recorder.h): its operations, and a dump of them into `dir` as
  // this rank's JSON (WriteTrace; dir empty: HOOP_TRACE_DIR's); `reason` says why it was taken.
  // Never waits on a running call.
  const FlightRecorder& recorder() const { return *recorder_; }
  StatusOr<std::string> DumpTrace(const std::string& dir, const std::string& reason) const;
  std::string TraceJson(const std::string& reason) const;
  void SetTraceLabel(const std::string& label) {
    std::lock_guard<std::mutex> lock(label_mu_);
    trace_label_ = label;
  }
  // The recorder's name for the next call made on this communicator, from any thread (PyTorch's
  // op name, through the C API); a call's CallOptions::trace_name wins over it.
  void NameNextCall(std::string name);
  bool healthy();
  size_t MaxCallBytes() const;

 private:
  // The pipeline chunk every run cuts its buffers into: HOOP_CHUNK_BYTES, else the back end's.
  size_t ChunkBytes() const { return opts_.chunk_bytes ? opts_.chunk_bytes : transport_->PreferredChunkBytes(); }
  // Elements of `esize` bytes in a chunk (at least one): the plans' unit, part of their key.
  // (Element sizes are powers of two: a shift, not a division, on every call's path.)
  size_t ChunkElems(size_t esize) const { return std::max<size_t>(1, ChunkBytes() >> std::countr_zero(esize)); }
  // Rank 0 says once when HOOP_ALGO=hierarchical cannot apply to this communicator's host map.
  void WarnUnevenHierarchical() const;
  // A queued operation: a collective call (coll_call.h) and how it is to run.
  struct Op : CollCall {
    bool abort = false;            // Abort(): poisons and tells peers, runs nothing
    std::shared_ptr<P2pCall> p2p;  // a send or receive (kind is then meaningless)
    std::shared_ptr<Work::State> state;
    std::optional<void*> stream;                // CallOptions::stream
    StreamTicket ticket;                        // its place on that stream (seq 0: none), taken when queued
    Status stage_error;                         // staging it on the stream failed after its hold was queued
    ReadyEvents::Ready ready;                   // a plain call on device memory: the caller's work before it
    const std::atomic<int>* waiters = nullptr;  // CallOptions::waiters
    SpinGate gate;                              // whether its waits may spin, set by Submit
    // Run on its caller's thread with the recorder on: its record made late (RecordDeferred),
    // its start's time read at the call (`begun`, which its deadline starts from too).
    bool trace_deferred = false;
    Deadline::Clock::time_point begun{};
    std::shared_ptr<const std::string> name;  // the caller's name for it in the recorder (null: none)
  };
  // A call's deadline for its own waits (the rest of HOOP_TIMEOUT is ExplainTimeout's): from the
  // clock read the recorder took where it has one.
  Deadline RunDeadline(const Op& op) const;
  // The running collective waits at `step` and `chunk` of its schedule (by `algo`).
  void TraceWaits(uint32_t step, uint32_t chunk, Algo algo);
  // A blocking call run on its caller's thread is recorded at the first of: its first receive
  // or wait (after the sends before it went: the record's stores then overlap the peers' replies
  // instead of delaying its first message), a run by the executor or on a device, and its end.
  // Recorded with the time of its call. (docs/PERF.md: 8 B allreduce over shm.)
  void RecordDeferred() {
    if (running_.deferred) RecordNow(TraceOf(*running_.deferred));
  }
  // The blocking interpreter's: its count read from the call's OpDesc, inline (the row's
  // desc_count, already taken; an out-of-line call here showed in the 8 B figure).
  void RecordDeferred(const OpDesc& d) {
    if (running_.deferred) RecordNow(TraceOfCollective(*running_.deferred, d.count));
  }
  void RecordNow(const TraceCall& call) {
    const Op& op = *running_.deferred;
    running_.deferred = nullptr;
    running_.id = recorder_->Begun(call, running_.seq, chosen_, op.begun);
    NameRecord(running_.id, op);
  }
  // Where a communicator sits among those sharing its connections.
  // A member's process, as it published itself: what tells whether it is gone (shrink.cc).
  struct Proc {
    int job_rank = -1;
    int pid = 0;
    unsigned long long start = 0;  // its start time (/proc): 0 where not known
  };
  struct Membership {
    std::shared_ptr<TransportHub> hub;
    int id = 0;                      // its view's id (0: the communicator that made the connections)
    std::vector<int> members;        // its rank r is the connections' rank members[r]
    std::vector<std::string> hosts;  // by rank
    std::vector<Proc> procs;         // by rank
  };
  CommCore(CommOptions opts, Store* store, Membership m, std::unique_ptr<Transport> transport);
  // A shrink's round `at` (shrink.cc): the members the store keeps; whether to keep what was made.
  StatusOr<std::vector<int>> AgreeMembers(const std::string& at, Deadline deadline, const std::vector<int>& excluded);
  StatusOr<bool> AgreeMade(const std::string& at, const std::vector<int>& members, bool made, Deadline deadline);
  void NoteNamedGone(const std::string& at, const std::vector<int>& members);
  // A grow's offers to the newcomers it admits (grow.cc); one place in line of a newcomer.
  Status OfferPlaces(const std::string& base, const CommOptions& o, int count, Deadline deadline,
                     const std::function<Status()>& give_up);
  static StatusOr<std::unique_ptr<CommCore>> JoinOnce(Store& store, const CommOptions& options);
  Work Submit(Op op, bool blocking);
  // Work::Wait's: where the operation whose Work has `state` is still queued, and it and every
  // operation ahead of it is a plain collective (no send or receive, no CUDA stream, no abort:
  // what a blocking call may run on its caller's thread), runs them here in queue order on a
  // free turn, as the worker would. Otherwise does nothing (the worker has it, or will).
  void RunQueuedThrough(const void* state);
  // The communicator as its Works see it (QueuedRunner): detached when it closes.
  class Runner : public QueuedRunner {
   public:
    explicit Runner(CommCore* core) : core_(core) {}
    void RunThrough(const void* state) override;
    void Detach();

   private:
    std::mutex mu_;  // held while a waiter runs operations (others do not wait for it; Detach does)
    CommCore* core_;
  };
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
  // SendNow/RecvNow's shared body (p2p.cc), in three steps: on a free turn, a first look that
  // may finish the call at once (a small send sent, a receive from one peer taken where it
  // lies); the call object (the last one reused, or a new one); its post and drive.
  Status RunNow(bool is_send, const Buffer& b, int peer, int tag, RecvInfo* info, bool* refused);
  struct NowLook {
    bool looked = false;  // the peer's stream was looked at, and nothing was there
    bool taken = false;   // a frame of another call was taken, to be handled after the post
    Deadline due = Deadline::Never();
  };
  // Tens of microseconds of looking at one peer's stream (a look is a load from L1).
  static constexpr unsigned kNowTakeSpins = 1u << 16;
  std::optional<Status> RunNowAtOnce(bool is_send, const Buffer& b, int peer, int tag, RecvInfo* info, bool* refused,
                                     NowLook& look);
  std::shared_ptr<P2pCall> NowCall(bool here, bool is_send, const Buffer& b, int peer, int tag,
                                   std::shared_ptr<RecvInfo> at);
  Status DriveNow(std::shared_ptr<P2pCall> call, bool is_send, int peer, const NowLook& look);
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
  // Tells the peers, once, why this rank gives up (a revocation as such: RevokeNotice). The
  // turn's holder only.
  void TellPeers(const Status& why);
  // Revoke's mark for the waits of the call running now (read between their looks): set, they
  // stop within kInterruptLook and the call fails with RevokedAt(its description).
  bool Interrupted() const { return interrupted_.load(std::memory_order_acquire); }
  CommOptions Inherited() const {
    CommOptions o = opts_;
    o.deterministic = deterministic();
    return o;
  }
  static constexpr auto kInterruptLook = std::chrono::milliseconds(20);
  Status RevokedAt(const std::string& what);
  Status RunOp(const Op& op, uint32_t seq);
  // Device buffers: whether op has any this rank uses, and the one route of such a call
  // (device_route.cc: direct, pipelined or whole); the run staged whole (device_staging.h).
  bool OnDevice(const Op& op) const;
  // Whether op moves fewer bytes than CommOptions::cuda_ipc_min_bytes (it then stages).
  bool BelowIpcMin(const Op& op) const;
  Status RunOnDevice(const Op& op, uint32_t seq);
  Status RunStaged(const Op& op, uint32_t seq);
  // An allreduce on device buffers: staged piece by piece beside the wire (pipelined_staging.h).
  Status RunPipelined(const Op& op, uint32_t seq, int device);
  // Device buffers the transport moves itself (CUDA IPC, device_direct.cc): the queue to run op
  // on, or null (it is staged), and the run: the collective's own code with direct_ set.
  DeviceQueue* DirectQueue(const Op& op);
  Status RunDirect(const Op& op, uint32_t seq, DeviceQueue& q);
  // The collective's own code (its row's run: allreduce.cc, ...), on host buffers or inside a
  // device run, over a CallRun: the call's view of this communicator (dispatch.cc).
  Status RunCollective(const Op& op, uint32_t seq);
  class CallRun;
  friend class CallRun;
  // The collectives' own copies (placements of a rank's block, working copies): memmove on the
  // host, or queued on the device run's queue (through a bounce where the ranges overlap).
  Status Place(void* dst, const void* src, size_t bytes);
  int DeviceOf(const void* p) const;  // -1: not device memory
  // `b` with its device ordinal found, where the caller left it unset (the calls' entries: once).
  Buffer Located(Buffer b) const;
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
  // The blocking interpreter (blocking.cc): a plan of one chunk of at most kBlockingBytes per
  // message and at most kBlockingUnits units, on host memory, walked on the caller's thread.
  static constexpr size_t kBlockingBytes = 4096;
  static constexpr size_t kBlockingUnits = Plan::kInOrderUnits;
  bool BlockingFits(const Plan& plan, const Buffer& in, const Buffer& out, Compression wire, const ExecMemory* memory);
  struct BlockingCall {
    const Plan* plan;
    const Op* op;
    Algo algo;
    uint32_t seq;
    uint64_t check;
    const OpDesc* desc;
    Buffer in, out;
  };
  Status RunBlocking(const BlockingCall& k);
  class BlockingRun;
  // The last call the blocking interpreter ran: the next of the same shape (a training or
  // benchmark loop repeats one) goes straight to it, its plan not looked up or checked again.
  struct BlockingMemo {
    const Plan* plan = nullptr;
    uint64_t epoch = 0;  // plans_'s, when `plan` was taken
    CollKind kind = CollKind::kAllreduce;
    Algo algo = Algo::kAuto;
    int root = -1;
    size_t count = 0, in_count = 0, out_count = 0;  // the schedule's, and the call's (DescCount)
    DType dtype = DType::kF32;
    ReduceOp op = ReduceOp::kSum;
    MemKind in_kind = MemKind::kHost, out_kind = MemKind::kHost;
    OpDesc desc;
    uint64_t check = 0;
    bool Matches(const Op& o, Algo a, size_t n, const Buffer& in, const Buffer& out, uint64_t plans_epoch) const {
      return plan && epoch == plans_epoch && o.kind == kind && a == algo && o.root == root && n == count &&
             o.in.count == in_count && o.out.count == out_count && out.dtype == dtype && o.op == op &&
             in.kind == in_kind && out.kind == out_kind;
    }
  };
  BlockingMemo blocking_memo_;
  // blocking_recv_ registered (once); false where the back end refuses it (then the executor runs).
  bool BlockingRecvReady();
  // Runs the plan for (op's collective, algo, count) from in to out; plans are cached (plan.h).
  // `memory`: the executor's memory seam (executor.h), for staged device buffers. Inside a device
  // run (direct_) the executor runs on its queue.
  Status RunSchedule(const Op& op, Algo algo, size_t count, const Buffer& in, const Buffer& out, uint32_t seq,
                     Compression wire = Compression::kNone, ExecMemory* memory = nullptr);
  // The executor's part of RunSchedule: the plan run over the transport (executor.h).
  Status ExecutePlan(const Op& op, const Plan& plan, const OpDesc& desc, Algo algo, const Buffer& in, const Buffer& out,
                     uint32_t seq, ExecMemory* memory);
  // How an allreduce travels: none, fp16 or bf16, with auto decided (compression_policy.cc).
  StatusOr<Compression> WireFor(const Op& op);
  StatusOr<double> ProbeLinkGBps();
  // Checks that a call is well-formed before it is queued; the error names rank and operation:
  // what every call is checked for, then its row's shape check.
  Status CheckCall(const Op& op) const;
  // The buffers' part: devices and streams there, sizes within bounds, memory readable.
  Status CheckBuffers(const Op& op) const;
  StatusOr<Algo> Resolve(const Op& op) const;
  std::string Describe(const Op& op, uint32_t seq, Algo algo, Compression wire = Compression::kNone) const;
  // Whether this rank reads op's in / writes op's out (its row's uses).
  bool UsesIn(const Op& op) const { return hoop::UsesIn(op, opts_.rank); }
  bool UsesOut(const Op& op) const { return hoop::UsesOut(op, opts_.rank); }
  // A scratch_ buffer of `count` elements of `dtype` (grown, never shrunk); device memory of the
  // queue's inside a device run.
  Buffer Scratch(size_t count, DType dtype);

  // A timeout's message, completed with who stopped making progress (stall.h).
  TraceCall TraceOf(const Op& op) const;
  // A collective's record, given its count (DescCount, or the OpDesc's): inline, no call.
  TraceCall TraceOfCollective(const Op& op, uint64_t count) const {
    TraceCall t;
    t.stream = op.stream.has_value();
    t.kind = op.kind;
    const Buffer& b = UsesOut(op) ? op.out : op.in;
    t.dtype = b.dtype;
    t.mem = b.kind;
    t.count = op.kind == CollKind::kBarrier ? 0 : count;
    t.root = Row(op.kind).rooted ? op.root : -1;
    return t;
  }
  TraceOwner Owner(const std::string& reason) const;
  uint64_t TraceNow(bool is_send, const Buffer& b, int peer, int tag);  // a point-to-point call run here
  void DumpAtFailure(const Status& why);
  void DumpIfFailed(const Status& why);  // a failed send or receive's (comm_trace.cc)
  void DumpAtEnd();
  // At a timeout: what each link has resent so far (Endpoint::Retransmits), for the dump; the
  // words naming those of `waited` that did (", TCP to rank 2 resent 57 segments").
  std::string NoteLinks(const std::vector<int>& waited);
  void RegisterTrace();  // comm_trace.cc
  // The name NameNextCall left for the call being made now (taking it), or null.
  std::shared_ptr<const std::string> TakeName();
  void NameRecord(uint64_t id, const Op& op) {
    if (op.name) recorder_->Name(id, *op.name);
  }
  Status ExplainTimeout(const Status& timeout);

  CommOptions opts_;
  std::atomic<bool> deterministic_{opts_.deterministic};
  Store* store_;                  // the job's store, for stall reports; outlives the communicator
  uint32_t splits_ = 0;           // splits made from this communicator, which name the new ones
  uint32_t shrinks_ = 0;          // shrinks of this communicator, which name the new ones
  uint32_t grows_ = 0;            // grows of this communicator, which name the new ones
  std::vector<int> waiting_for_;  // the last operation's peers still awaited when it timed out
  std::mutex gone_mu_;            // guards shrink_gone_ (held for a copy only)
  std::vector<int> shrink_gone_;  // ranks a shrink's members named gone at check-in
  // Shared with point-to-point completions, which may run after the communicator is gone.
  std::shared_ptr<FlightRecorder> recorder_ = std::make_shared<FlightRecorder>(opts_.trace_ops);
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
  std::vector<char> scratch_;      // working copies: reduce-scatter's, non-root reduce's, in-place alltoall's
  DeviceQueue* direct_ = nullptr;  // inside a device run (RunDirect): its queue
  // The blocking interpreter's landing places, kBlockingBytes each: a message at 0, a fold's
  // held one (kHold) of unit u at u + 1.
  std::vector<char> blocking_buf_;
  Region blocking_recv_;             // registered with the transport on first use
  Status direct_error_;              // the first Scratch failure inside one
  std::optional<double> link_gbps_;  // HOOP_COMPRESSION=auto's measured ring bandwidth

  mutable std::mutex mu_;  // (mutable: a dump lists the queue, const)
  std::condition_variable cv_;
  std::deque<Op> queue_;
  std::shared_ptr<Runner> runner_ = std::make_shared<Runner>(this);  // queued Works point at it (weakly)
  bool stopping_ = false;
  bool closed_ = false;  // Close ran (the owner's thread only)
  // kHeld: an operation is running (on the worker or a blocking caller); kBlocked: something is
  // queued, the communicator is stopping or failed, so the turn is not to be taken without mu_.
  static constexpr uint32_t kHeld = 1, kBlocked = 2;
  std::atomic<uint32_t> turn_{0};
  bool p2p_busy_ = false;  // the mailbox has calls in flight: the idle worker drives progress
  Status poisoned_;        // first failure; guarded by mu_
  // The running collective's, for the flight recorder (whoever holds the turn): its record, and
  // its resolved algorithm.
  struct RunningTrace {
    uint64_t id = 0;
    const Op* deferred = nullptr;  // a call on its caller's thread not recorded yet
    uint32_t seq = 0;
  };
  RunningTrace running_;
  int trace_signal_ = 0;                     // its registration for dumps on a signal (trace_signal.h)
  int trace_status_ = 0;                     // and for the live view's asks (trace_status.h)
  std::vector<int64_t> link_retrans_;        // NoteLinks's, under label_mu_
  std::atomic<bool> failure_dumped_{false};  // DumpAtFailure wrote this communicator's
  std::atomic<bool> name_pending_{false};    // NameNextCall's, not yet taken (next_name_, under label_mu_)
  std::string next_name_;
  mutable std::mutex label_mu_;  // (held for a copy only)
  std::string trace_label_;
  Algo chosen_ = Algo::kAuto;
  uint32_t seq_ = 0;                      // operation sequence number; used by whoever holds the turn
  bool told_peers_ = false;               // likewise
  std::atomic<bool> interrupted_{false};  // Revoke ran: running waits stop (Interrupted)
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
