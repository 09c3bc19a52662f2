// The Communicator's front (communicator.h): each collective call is queued on the
// implementation, CommCore (comm_core.h), as a CollCall of its kind, whose row of the collective
// table (coll_table.h) says what it is and does; the other calls are handed over as they are.
// And the Work a call returns.
#include "collectives/api/communicator.h"

#include <csignal>

#include "collectives/core/comm_core.h"

namespace hoop {

CommOptions CommOptions::FromConfig(const Config& c) {
  CommOptions o;
  o.rank = c.rank;
  o.size = c.size;
  o.local_rank = c.local_rank;
  o.local_size = c.local_size;
  if (!c.host.empty()) o.host = c.host;  // empty: JoinJob picks the route to the store
  o.token = c.token;
  o.transport = c.transport;
  o.timeout = c.timeout;
  o.timeout_name = c.timeout_name;
  o.shrink_wait = std::chrono::milliseconds(static_cast<long long>(c.shrink_wait_s * 1000));
  o.algo = ParseAlgo(c.algo).value_or(Algo::kAuto);
  o.chunk_bytes = c.chunk_bytes;
  o.window = c.window;
  o.compression = ParseCompression(c.compression).value_or(Compression::kNone);
  o.unexpected_bytes = c.unexpected_bytes;
  o.cuda_ipc = c.cuda_ipc;
  o.cuda_ipc_min_bytes = c.cuda_ipc_min_bytes;
  o.deterministic = c.deterministic;
  o.trace_ops = c.trace_ops;
  o.trace_dir = c.trace_dir;
  o.trace_signal = c.trace_signal == "USR1" ? SIGUSR1 : c.trace_signal == "USR2" ? SIGUSR2 : 0;
  o.tmp_dir = c.tmp_dir;
  if (c.launcher != Launcher::kNone && c.store.rfind("tcp://", 0) == 0) o.status_store = c.store;
  o.stage_bytes = c.stage_bytes;
  o.stage_ahead_bytes = c.stage_ahead_bytes;
  return o;
}

// ---- Work ----

Work Work::MakeRefused(Status s) {
  Work w;
  w.state_ = std::make_shared<State>();
  w.state_->done = true;
  w.state_->refused = true;
  w.state_->status = std::move(s);
  return w;
}

Status Work::Wait() { return Wait(Deadline::Never()); }

Status Work::Wait(Deadline deadline) { return WaitAs(deadline, true); }

Status Work::WaitInBackground() { return WaitAs(Deadline::Never(), false); }

Status Work::WaitAs(Deadline deadline, bool counted) {
  if (!state_) return InvalidArgument("Wait on an empty Work");
  std::shared_ptr<QueuedRunner> runner = state_->runner.lock();
  // Counted: the operation's waits may spin while this thread waits (SpinGate).
  struct Count {
    QueuedRunner* r;
    explicit Count(QueuedRunner* runner) : r(runner) {
      if (r) r->waiters.fetch_add(1, std::memory_order_relaxed);
    }
    ~Count() {
      if (r) r->waiters.fetch_sub(1, std::memory_order_relaxed);
    }
  } count(counted ? runner.get() : nullptr);
  // A wait with a deadline leaves the operation to the worker: running it here could outlast it.
  if (deadline.IsNever() && runner) runner->RunThrough(state_.get());
  std::unique_lock<std::mutex> lock(state_->mu);
  if (!state_->cv.wait_until(lock, deadline.at(), [&] { return state_->done; }))
    return DeadlineExceeded("operation still running at the Wait deadline");
  return state_->status;
}

bool Work::Refused() const { return state_ && state_->refused; }  // set once, before the Work is shared

bool Work::Done() const {
  if (!state_) return true;
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->done;
}

// ---- Communicator: the front ----

Communicator::Communicator(std::unique_ptr<CommCore> core) : core_(std::move(core)) {}
Communicator::~Communicator() = default;  // the core's destructor closes (Close)

StatusOr<std::unique_ptr<Communicator>> Communicator::Create(Store& store, const CommOptions& options) {
  HOOP_ASSIGN_OR_RETURN(std::unique_ptr<CommCore> core, CommCore::Create(store, options));
  return std::unique_ptr<Communicator>(new Communicator(std::move(core)));
}

Status Communicator::Close() { return core_->Close(); }
int Communicator::rank() const { return core_->rank(); }
int Communicator::size() const { return core_->size(); }
int Communicator::local_rank() const { return core_->local_rank(); }
int Communicator::local_size() const { return core_->local_size(); }
std::string Communicator::transport_name() const { return core_->transport_name(); }
std::string Communicator::DeviceRoute(int device) { return core_->DeviceRoute(device); }
const CommOptions& Communicator::options() const { return core_->options(); }
Store& Communicator::store() const { return core_->store(); }
Algo Communicator::ChosenAlgo(CollKind kind, size_t bytes, Algo per_call) const {
  return core_->ChosenAlgo(kind, bytes, per_call);
}

Work Communicator::Allreduce(const Buffer& in, const Buffer& out, ReduceOp op, const CallOptions& o) {
  return core_->Post(CollKind::kAllreduce, in, out, op, -1, o);
}
Work Communicator::Broadcast(const Buffer& in, const Buffer& out, int root, const CallOptions& o) {
  return core_->Post(CollKind::kBroadcast, in, out, ReduceOp::kSum, root, o);
}
Work Communicator::Allgather(const Buffer& in, const Buffer& out, const CallOptions& o) {
  return core_->Post(CollKind::kAllgather, in, out, ReduceOp::kSum, -1, o);
}
Work Communicator::ReduceScatter(const Buffer& in, const Buffer& out, ReduceOp op, const CallOptions& o) {
  return core_->Post(CollKind::kReduceScatter, in, out, op, -1, o);
}
Work Communicator::Barrier(const CallOptions& o) {
  const Buffer none{nullptr, 0, DType::kU8, MemKind::kHost};
  return core_->Post(CollKind::kBarrier, none, none, ReduceOp::kSum, -1, o);
}
Work Communicator::Reduce(const Buffer& in, const Buffer& out, ReduceOp op, int root, const CallOptions& o) {
  return core_->Post(CollKind::kReduce, in, out, op, root, o);
}
Work Communicator::Gather(const Buffer& in, const Buffer& out, int root, const CallOptions& o) {
  return core_->Post(CollKind::kGather, in, out, ReduceOp::kSum, root, o);
}
Work Communicator::Scatter(const Buffer& in, const Buffer& out, int root, const CallOptions& o) {
  return core_->Post(CollKind::kScatter, in, out, ReduceOp::kSum, root, o);
}
Work Communicator::Alltoall(const Buffer& in, const Buffer& out, const CallOptions& o) {
  return core_->Post(CollKind::kAlltoall, in, out, ReduceOp::kSum, -1, o);
}
Work Communicator::Allgatherv(const Buffer& in, const Buffer& out, Blocks out_blocks, const CallOptions& o) {
  auto v = std::make_shared<const VBlocks>(VBlocks{{}, std::move(out_blocks)});
  return core_->Post(CollKind::kAllgatherv, in, out, ReduceOp::kSum, -1, o, std::move(v));
}
Work Communicator::ReduceScatterv(const Buffer& in, const Buffer& out, std::vector<size_t> counts, ReduceOp op,
                                  const CallOptions& o) {
  // Displacements as prefix sums; a total that wraps is refused by CheckReduceScatterv.
  auto v = std::make_shared<const VBlocks>(VBlocks{{}, PackedBlocks(counts)});
  return core_->Post(CollKind::kReduceScatterv, in, out, op, -1, o, std::move(v));
}
Work Communicator::Alltoallv(const Buffer& in, Blocks send, const Buffer& out, Blocks recv, const CallOptions& o) {
  auto v = std::make_shared<const VBlocks>(VBlocks{std::move(send), std::move(recv)});
  return core_->Post(CollKind::kAlltoallv, in, out, ReduceOp::kSum, -1, o, std::move(v));
}

Work Communicator::Send(const Buffer& in, int peer, int tag, const CallOptions& o) {
  return core_->Send(in, peer, tag, o);
}
Work Communicator::Recv(const Buffer& out, int peer, int tag, std::shared_ptr<RecvInfo> info, const CallOptions& o) {
  return core_->Recv(out, peer, tag, std::move(info), o);
}
Status Communicator::SendNow(const Buffer& in, int peer, int tag, bool* refused) {
  return core_->SendNow(in, peer, tag, refused);
}
Status Communicator::RecvNow(const Buffer& out, int peer, int tag, RecvInfo* info, bool* refused) {
  return core_->RecvNow(out, peer, tag, info, refused);
}

StatusOr<std::unique_ptr<Communicator>> Communicator::Split(int color, int key) {
  HOOP_ASSIGN_OR_RETURN(std::unique_ptr<CommCore> core, core_->Split(color, key));
  if (!core) return std::unique_ptr<Communicator>();  // kUndefined: none
  return std::unique_ptr<Communicator>(new Communicator(std::move(core)));
}
StatusOr<std::unique_ptr<Communicator>> Communicator::Dup() { return Split(0, rank()); }
void Communicator::Abort(const std::string& cause) { core_->Abort(cause); }
Status Communicator::Revoke(const std::string& why) { return core_->Revoke(why); }
void Communicator::SetDeterministic(bool on) { core_->SetDeterministic(on); }
bool Communicator::deterministic() const { return core_->deterministic(); }

std::string Communicator::TraceJson(const std::string& reason) const { return core_->TraceJson(reason); }

void Communicator::SetTraceLabel(const std::string& label) { core_->SetTraceLabel(label); }
void Communicator::NameNextCall(std::string name) { core_->NameNextCall(std::move(name)); }

StatusOr<std::string> Communicator::DumpTrace(const std::string& dir, const std::string& reason) const {
  return core_->DumpTrace(dir, reason);
}
StatusOr<std::unique_ptr<Communicator>> Communicator::Shrink(const std::vector<int>& excluded) {
  HOOP_ASSIGN_OR_RETURN(std::unique_ptr<CommCore> core, core_->Shrink(excluded));
  return std::unique_ptr<Communicator>(new Communicator(std::move(core)));
}
std::vector<int> Communicator::FailedRanks() { return core_->FailedRanks(); }
StatusOr<std::unique_ptr<Communicator>> Communicator::Grow(int count) {
  HOOP_ASSIGN_OR_RETURN(std::unique_ptr<CommCore> core, core_->Grow(count));
  return std::unique_ptr<Communicator>(new Communicator(std::move(core)));
}
StatusOr<int> Communicator::Newcomers() { return core_->Newcomers(); }
StatusOr<std::unique_ptr<Communicator>> Communicator::Join(Store& store, const CommOptions& options) {
  HOOP_ASSIGN_OR_RETURN(std::unique_ptr<CommCore> core, CommCore::Join(store, options));
  return std::unique_ptr<Communicator>(new Communicator(std::move(core)));
}
bool Communicator::healthy() { return core_->healthy(); }
size_t Communicator::MaxCallBytes() const { return core_->MaxCallBytes(); }

}  // namespace hoop
