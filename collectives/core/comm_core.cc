// CommCore (comm_core.h): creation (meet through the store, connect a full mesh), the operation
// queue and its worker, the turn on the transport, and poisoning. A collective's own run (its
// record, plan, executor and explained timeout) is run_collective.cc.
#include "collectives/core/comm_core.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "collectives/core/trace_signal.h"
#include "collectives/core/trace_status.h"
#include "collectives/device/cuda_queue.h"
#include "collectives/kernels/reduce.h"
#include "common/logging.h"
#include "transport/peer_watch.h"
#include "transport/select.h"

namespace hoop {

// ---- creation: meet through the store, connect a full mesh ----

namespace {
std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}
}  // namespace

StatusOr<std::unique_ptr<CommCore>> CommCore::Create(Store& kept, const CommOptions& in, const Meeting& meeting) {
  Store& store = meeting.store ? *meeting.store : kept;
  CommOptions o = in;
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
    return InvalidArgument("communicator: rank " + std::to_string(o.rank) + " is not in [0, " + std::to_string(o.size) +
                           ")");
  if (o.job_rank == -1) o.job_rank = o.rank;  // -2: none (a newcomer no launcher numbered)
  SetLogRank(o.job_rank >= 0 ? o.job_rank : o.rank);
  const std::string ctx = "rank " + std::to_string(o.rank) + ": creating communicator '" + o.name + "'";
  Deadline deadline = meeting.by.value_or(Deadline::After(o.timeout));
  const std::string prefix = "hoop/" + o.name + "/";

  // Host names give the local rank and size, and "same host" for transport selection. With
  // each, the process: host, pid, start time and job rank, apart by tabs (what tells later that
  // it is gone: shrink.cc).
  std::string me = HostName();
  const int pid = static_cast<int>(::getpid());
  const std::string proc = me + "\t" + std::to_string(pid) + "\t" + std::to_string(ProcessStartTime(pid)) + "\t" +
                           std::to_string(o.job_rank);
  HOOP_RETURN_IF_ERROR(store.Set(prefix + "host/" + std::to_string(o.rank), proc).WithContext(ctx));
  std::vector<PeerInfo> peers(static_cast<size_t>(o.size));
  std::vector<Proc> procs(static_cast<size_t>(o.size));
  int local_rank = 0, local_size = 0;
  for (int r = 0; r < o.size; ++r) {
    auto h = store.Get(prefix + "host/" + std::to_string(r), deadline);
    if (!h.ok()) return h.status().WithContext(ctx + ": waiting for rank " + std::to_string(r) + " to join");
    Proc& p = procs[static_cast<size_t>(r)];
    const std::string host = h->substr(0, h->find('\t'));
    if (host.size() < h->size()) std::sscanf(h->c_str() + host.size(), "\t%d\t%llu\t%d", &p.pid, &p.start, &p.job_rank);
    peers[static_cast<size_t>(r)] = {r, host};
    if (host == me) {
      ++local_size;
      if (r < o.rank) ++local_rank;
    }
  }
  if (o.local_rank < 0) o.local_rank = local_rank;
  if (o.local_size < 0) o.local_size = local_size;

  // Back ends, per peer: shm on this host, then ucx/ofi/tcp (transport/select.h).
  DeviceAccess device;
  if (o.device_access)
    device = *o.device_access;
  else if (o.cuda_ipc)
    device = CudaDeviceAccess();
  TransportOptions topts{o.rank, o.size, o.host, o.token, o.name, peers, device, meeting.give_up};
  topts.timeout_name = meeting.deadline_name.empty() ? o.timeout_name : meeting.deadline_name;
  auto transport = ConnectPeers(store, prefix, topts, o.transport, deadline);
  if (!transport.ok()) return transport.status().WithContext(ctx);
  HOOP_LOG(kInfo, "communicator '" << o.name << "' up: " << o.size << " ranks over " << (*transport)->Label()
                                   << " (the back ends in use), this rank at " << (*transport)->Address() << "; rank "
                                   << o.rank << ", " << local_size << " on this host name"
                                   << " (HOOP_LOG_LEVEL=debug: the back end per peer and the plan per call shape)");
  Membership m;
  m.hub = TransportHub::Make(std::move(transport).value(), o.unexpected_bytes);
  for (const PeerInfo& p : peers) {
    m.members.push_back(p.rank);
    m.hosts.push_back(p.host);
  }
  m.procs = std::move(procs);
  auto view = m.hub->View(0, m.members, o.rank);
  if (!view.ok()) return view.status().WithContext(ctx);
  std::unique_ptr<CommCore> comm(new CommCore(o, &kept, std::move(m), std::move(view).value()));
  // Nothing is queued yet, so this thread may use the transport.
  HOOP_RETURN_IF_ERROR(comm->mailbox_->Start().WithContext(ctx));
  return comm;
}

namespace {
// Each rank's host as a small id (its host name's order of first appearance), the same on every
// rank: what the hierarchical schedules group ranks by.
std::vector<int> HostIds(const std::vector<std::string>& hosts) {
  std::vector<int> ids;
  std::vector<std::string> seen;
  for (const auto& h : hosts) {
    auto it = std::find(seen.begin(), seen.end(), h);
    ids.push_back(static_cast<int>(it - seen.begin()));
    if (it == seen.end()) seen.push_back(h);
  }
  return ids;
}
}  // namespace

CommCore::CommCore(CommOptions opts, Store* store, Membership m, std::unique_ptr<Transport> transport)
    : opts_(std::move(opts)),
      store_(store),
      membership_(std::move(m)),
      transport_(std::move(transport)),
      stream_order_(opts_.stream_ops),
      plans_(opts_.rank, opts_.size, HostIds(membership_.hosts)),
      even_hosts_(EvenHosts(HostIds(membership_.hosts))) {
  Mailbox::Options mo;
  mo.rank = opts_.rank;
  mo.size = opts_.size;
  mo.unexpected_bytes = opts_.unexpected_bytes;
  mo.piece_bytes = ChunkBytes();
  mo.timeout = opts_.timeout;
  mo.timeout_name = opts_.timeout_name;
  mailbox_ = std::make_unique<Mailbox>(*transport_, mo);
  WarnUnevenHierarchical();
  worker_ = std::thread([this] { WorkerLoop(); });
  RegisterTrace();
}

void CommCore::WarnUnevenHierarchical() const {
  // HOOP_ALGO=hierarchical on hosts that hold different numbers of ranks (or one host, or a
  // host with one rank): the schedules then run the flat ring, which the user should hear of
  // once, from the communicator's rank 0, rather than find in a profile.
  if (opts_.algo != Algo::kHierarchical || even_hosts_ || opts_.size < 2 || opts_.rank != 0) return;
  std::string counts;
  for (int k : RanksPerHost(HostIds(membership_.hosts))) counts += (counts.empty() ? "" : ", ") + std::to_string(k);
  HOOP_LOG(kWarn, "communicator '" << opts_.name << "': HOOP_ALGO=hierarchical needs 2 or more hosts with the same "
                                   << "number (2 or more) of ranks on each; ranks per host here: " << counts
                                   << ". Allreduce, allgather and reduce_scatter run the flat ring instead "
                                   << "(broadcast still goes host by host)");
}

Status CommCore::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  runner_->Detach();  // from here on only the worker runs what is queued
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    Blocked();
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (!healthy()) return Status::Ok();  // failed already: nothing more can be promised
  const Deadline deadline = Deadline::After(opts_.timeout);
  // A small send completes once copied into its frame: those frames go out now.
  while (mailbox_->FramesOut() && mailbox_->fatal().ok() && !deadline.Expired()) {
    mailbox_->Progress(Deadline::After(std::chrono::milliseconds(10)));
    AfterTurn();
  }
  const std::string me = "rank " + std::to_string(opts_.rank) + ": finalizing communicator '" + opts_.name + "'";
  if (!mailbox_->fatal().ok()) return mailbox_->fatal().WithContext(me);
  if (!healthy()) return Status::Ok();  // a peer's abort came in meanwhile: nothing to deliver to
  if (mailbox_->FramesOut())
    return DeadlineExceeded(me + ": messages already sent were not taken by their peers within " + opts_.timeout_name);
  Status s = transport_->Close(deadline);
  return s.ok() ? s : s.WithContext(me);
}

CommCore::~CommCore() {
  TraceStatus::Unregister(trace_status_);  // first: a dump or answer in progress finishes before anything goes
  TraceSignal::Unregister(trace_signal_);
  if (Status s = Close(); !s.ok()) HOOP_LOG(kError, s.message());
  DumpAtEnd();  // a send or receive that failed, where nothing else wrote the recorder
  // Sends and receives nobody waited for: their Works complete, the transport goes.
  const Status pending = Aborted("the communicator was destroyed with the call pending");
  TransportHub& hub = *membership_.hub;
  if (hub.open_views() == 1 || !healthy()) {
    mailbox_->FailAll(pending);
    return;
  }
  // Other communicators go on over these connections: payloads already moving finish (the
  // transport holds their memory), calls that never matched fail, and the mailbox stays with the
  // hub, answering its peers, until each has said goodbye; only then is the id used again.
  const Deadline deadline = Deadline::After(opts_.timeout);
  while (mailbox_->Moving() && !deadline.Expired()) {
    mailbox_->Progress(Deadline::After(std::chrono::milliseconds(10)));
    AfterTurn();
  }
  if (mailbox_->Moving()) {  // a peer stopped halfway: the connections cannot be trusted
    Poison(Aborted("rank " + std::to_string(opts_.rank) + ": freeing communicator '" + opts_.name +
                   "': point-to-point payloads stopped moving (" + opts_.timeout_name + ")"));
    mailbox_->FailAll(pending);
    return;
  }
  mailbox_->FailAll(pending);
  mailbox_->Retire();
  hub.Retire(std::move(transport_), std::move(mailbox_));
}

std::string CommCore::transport_name() const { return transport_->Label(); }

bool CommCore::healthy() {
  std::lock_guard<std::mutex> lock(mu_);
  return poisoned_.ok();
}

void CommCore::Abort(const std::string& cause) {
  Op op;
  op.kind = CollKind::kBarrier;
  op.abort = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (poisoned_.ok()) poisoned_ = Aborted("rank " + std::to_string(opts_.rank) + " aborted: " + cause);
    Blocked();
  }
  // The abort's own status is the poison set above (every later call returns it): nothing to
  // report from here, only to wait until the worker has torn the calls down.
  static_cast<void>(Submit(op, true).Wait());
}

// ---- the worker ----

Work CommCore::Post(CollKind kind, const Buffer& in, const Buffer& out, ReduceOp op, int root, const CallOptions& o,
                    std::shared_ptr<const VBlocks> v) {
  Op x;
  x.kind = kind;
  x.in = Located(in);
  x.out = Located(out);
  x.op = op;
  x.root = root;
  x.algo = o.algo;
  if (kind == CollKind::kAllreduce) {  // the only collective that compresses; the others ignore them
    x.compression = o.compression;
    x.residual = o.residual;
  }
  x.v = std::move(v);
  x.stream = o.stream;
  x.waiters = o.waiters;
  if (!o.trace_name.empty()) x.name = std::make_shared<const std::string>(o.trace_name);
  return Submit(std::move(x), o.blocking);
}

Work CommCore::Submit(Op op, bool blocking) {
  op.deterministic = deterministic();
  if (name_pending_.load(std::memory_order_relaxed) && !op.abort) [[unlikely]] {
    auto taken = TakeName();  // taken by this call, even where it is named by its options
    if (!op.name) op.name = std::move(taken);
  }
  if (!op.abort) {
    Status s = op.p2p ? CheckP2p(*op.p2p, op.stream.has_value()) : CheckCall(op);
    if (!s.ok()) return Work::MakeRefused(s);
  }
  // Who waits for it: a blocking call's caller, so its waits spin before they sleep; a
  // nonblocking one's caller computes, so they spin only while someone waits on a Work here.
  // A call on a CUDA stream keeps the spin: its caller queues device work, not CPU work.
  op.gate = op.waiters ? SpinGate{op.waiters} : (blocking || op.stream) ? SpinGate{} : SpinGate{&runner_->waiters};
  // A plain call on device memory starts after the caller's work queued before it: marked now,
  // not when the worker gets to it (ready_events.h).
  if (!op.abort && !op.p2p && !op.stream && OnDevice(op) && !opts_.device_access) {
    auto ready = ready_events_.Record();
    if (!ready.ok())
      return Work::MakeRefused(ready.status().WithContext("rank " + std::to_string(opts_.rank) + ": " +
                                                          CollKindName(op.kind) + ": marking the caller's CUDA work"));
    op.ready = *ready;
  }
  // A blocking call with nothing queued, stopping or failed runs here, the turn taken by one
  // compare-and-swap (as a blocking send takes it): no lock, and where it succeeds no state of
  // its own. A small allreduce's every microsecond is the caller's.
  if (blocking && !op.stream && !op.p2p && !op.abort && TryTurn()) {
    if (recorder_->on()) {  // recorded late (RecordDeferred), as starting at the clock read its deadline takes too
      op.begun = Deadline::Clock::now();
      op.trace_deferred = true;
    }
    Status result = RunCollectiveOp(op);
    ready_events_.Give(op.ready);
    EndTurn();
    Work w;
    if (result.ok()) {
      w.state_ = done_ok_;
    } else {
      w.state_ = std::make_shared<Work::State>();
      w.state_->done = true;
      w.state_->status = std::move(result);
    }
    return w;
  }
  Work w;
  w.state_ = std::make_shared<Work::State>();
  w.state_->runner = runner_;
  op.state = w.state_;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Nothing ahead of it: run it here, sparing the hand-off to the worker and back. A send or
    // receive is only posted to the mailbox, which never waits, unless the caller will.
    // A call on a CUDA stream takes its place on the stream here, in queue order, and never
    // runs on the caller's thread (the caller does not wait for it).
    if (op.stream) {
      blocking = false;
      auto t = EnterStream(op);
      if (!t.ok())
        return Work::MakeRefused(t.status().WithContext("rank " + std::to_string(opts_.rank) + ": " +
                                                        CollKindName(op.kind) + ": ordering on the CUDA stream"));
      op.ticket = *t;
    }
    if ((blocking || (op.p2p && !op.stream)) && queue_.empty() && !stopping_ && ClaimLocked()) {
      lock.unlock();
      RunOne(op, blocking);
      EndTurn();
      return w;
    }
    queue_.push_back(std::move(op));
    Blocked();
  }
  cv_.notify_all();
  return w;
}

void CommCore::RunQueuedThrough(const void* state) {
  std::vector<Op> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    auto end = std::find_if(queue_.begin(), queue_.end(), [&](const Op& op) { return op.state.get() == state; });
    if (end == queue_.end()) return;
    ++end;
    if (std::any_of(queue_.begin(), end, [](const Op& op) { return op.p2p || op.stream || op.abort; })) return;
    if (!ClaimLocked()) return;
    run.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(end));
    queue_.erase(queue_.begin(), end);
    Blocked();
  }
  for (const Op& op : run) RunOne(op, false);
  EndTurn();
}

void CommCore::Runner::RunThrough(const void* state) {
  // Another waiter running operations here holds the turn anyway: leave this one to the cv.
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (lock.owns_lock() && core_) core_->RunQueuedThrough(state);
}

void CommCore::Runner::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  core_ = nullptr;
}

bool CommCore::ClaimLocked() {
  // A blocking send or receive may take a free turn without mu_ (TryTurn): compare and swap.
  uint32_t now = turn_.load(std::memory_order_relaxed);
  while (!(now & kHeld))
    if (turn_.compare_exchange_weak(now, now | kHeld, std::memory_order_acquire, std::memory_order_relaxed))
      return true;
  return false;
}

void CommCore::Blocked() {
  if (!queue_.empty() || stopping_ || !poisoned_.ok())
    turn_.fetch_or(kBlocked, std::memory_order_relaxed);
  else
    turn_.fetch_and(~kBlocked, std::memory_order_relaxed);
}

void CommCore::WorkerLoop() {
  // The wait between looks for sends and receives in flight when nothing is queued: a queued
  // call starts at most this late.
  constexpr auto kSlice = std::chrono::milliseconds(1);
  SetThreadLogRank(membership_.members[static_cast<size_t>(opts_.rank)]);  // the job's rank, in a split too
  while (true) {
    std::optional<Op> op;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || (!Held() && (!queue_.empty() || p2p_busy_)); });
      if (Held() && stopping_) return;
      if (queue_.empty() && (stopping_ || !p2p_busy_)) return;
      // A blocking send or receive may have taken the turn since (TryTurn): wait again.
      if (!ClaimLocked()) continue;
      if (!queue_.empty()) {
        op = std::move(queue_.front());
        queue_.pop_front();
        Blocked();
      }
    }
    if (op)
      RunOne(*op, false);
    else
      mailbox_->Progress(Deadline::After(kSlice), SpinGate{&runner_->waiters});
    AfterTurn();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ReleaseLocked();
    }
    cv_.notify_all();
  }
}

void CommCore::Poison(const Status& why) {
  Status first;
  bool now = false;  // this is the failure that poisons it
  {
    std::lock_guard<std::mutex> lock(mu_);
    now = poisoned_.ok();
    if (now) poisoned_ = why;
    first = poisoned_;
    Blocked();
  }
  HOOP_LOG(kError, why.message());
  TellPeers(first);
  if (now && why.code() != Code::kRevoked) DumpAtFailure(why);
}

void CommCore::AfterTurn() {
  if (!mailbox_->fatal().ok()) Poison(mailbox_->fatal());
  Status poisoned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    poisoned = poisoned_;
  }
  if (!poisoned.ok() && mailbox_->Busy())
    mailbox_->FailAll(Status(poisoned.code() == Code::kRevoked ? Code::kRevoked : Code::kAborted,
                             "the communicator failed: " + poisoned.message()));
  std::lock_guard<std::mutex> lock(mu_);
  p2p_busy_ = mailbox_->Busy();
}

void CommCore::EndTurn() {
  // Nothing in flight before or now, nothing failed, and (the swap checks it) nothing queued,
  // stopping or poisoned: nobody needs waking. (p2p_busy_ is written only by the turn's holder.)
  if (!p2p_busy_ && mailbox_->fatal().ok() && !mailbox_->Busy()) {
    uint32_t held = kHeld;
    if (turn_.compare_exchange_strong(held, 0, std::memory_order_release, std::memory_order_relaxed)) return;
  }
  bool wake = false, released = false;
  if (mailbox_->fatal().ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (poisoned_.ok()) {  // nothing to fail: one hold of the lock
      p2p_busy_ = mailbox_->Busy();
      ReleaseLocked();
      released = true;
      wake = !queue_.empty() || p2p_busy_;
    }
  }
  if (!released) {  // something failed: AfterTurn words it and fails what is pending
    AfterTurn();
    std::lock_guard<std::mutex> lock(mu_);
    ReleaseLocked();
    wake = !queue_.empty() || p2p_busy_;
  }
  if (wake) cv_.notify_all();
}

void CommCore::RunOne(const Op& op, bool caller_waits) {
  Status poisoned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    poisoned = poisoned_;
  }
  Status result;
  if (!poisoned.ok()) {
    TellPeers(poisoned);
    const std::string what = op.p2p ? (op.p2p->is_send ? "send" : "receive") : CollKindName(op.kind);
    const bool revoked = poisoned.code() == Code::kRevoked;
    result = op.abort
                 ? Status::Ok()
                 : Status(revoked ? Code::kRevoked : Code::kAborted,
                          "rank " + std::to_string(opts_.rank) + ": " + what +
                              " refused: " + (revoked ? "" : "the communicator failed earlier: ") + poisoned.message());
  } else if (op.p2p) {
    return RunP2p(op, caller_waits);
  } else {
    result = RunCollectiveOp(op);
  }
  if (!poisoned.ok() && !op.abort && recorder_->on())  // refused: recorded as it failed
    recorder_->Ended(recorder_->Begun(TraceOf(op), -1, Algo::kAuto), result);
  if (op.ticket.seq != 0) StreamOrder::Release(op.ticket);  // done or failed: the stream goes on
  ready_events_.Give(op.ready);
  {
    std::lock_guard<std::mutex> lock(op.state->mu);
    op.state->done = true;
    op.state->status = result;
  }
  op.state->cv.notify_all();
}

}  // namespace hoop
