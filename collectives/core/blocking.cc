// The blocking interpreter: a plan of one chunk and few units, in its dependency order
// (Plan::in_order: recursive doubling, the dissemination barrier, and some others on 2 ranks),
// walked on the calling thread one unit after another, instead of by the executor (executor.h).
// A plan out of that order (a rooted collective's roll call) stays with the executor, which lets
// later units pass a receive that has not come. It is the same plan:
// the same units in the same order, the same messages byte for byte (match words of sequence,
// chunk 0 and the step's message number; the same check word; the same bytes), and the same
// reductions in the same operand order, so the result has the same bits. A rank whose call goes
// this way and one whose call of the same shape runs the executor (device buffers, a call on a
// CUDA stream) meet as ever, and a rank whose call differs gets the executor's "ranks disagree"
// or timeout, worded the same.
//
// Why it is safe: the schedule simulator (tests/unit/schedule_sim.h, Simulate) runs every
// schedule with each rank doing its units strictly in order, and fails on a deadlock; sends here
// never wait, as there. Why it exists: an 8-byte allreduce over shm spent its time in the
// executor's set-up (its state, registrations, its poll loop), not on the link (docs/PERF.md). A
// loop of one shape skips even the plan's lookup (CommCore::BlockingMemo).
//
// Unit u: its receive (posted ahead, before the previous unit's sends) lands in one registered
// staging chunk; after_sent waits for the named unit's sends; then the copy or reduction as the
// executor's Land does it; then the next unit's receive is posted and this unit's sends go, with
// the back end's immediate copy where it has one (EndpointFastPath::SendCopies: copied out at
// once), else posted and awaited at the latest at the end. A receive is taken where it lies if
// it has come (TakeNow), else polled for. Point-to-point completions meanwhile go to the mailbox.
#include <cstring>
#include <set>
#include <sstream>

#include "collectives/core/comm_core.h"
#include "collectives/core/stall.h"
#include "collectives/kernels/reduce.h"

namespace hoop {

namespace {
// A unit's receive, and its send to its i-th peer: the peer index in bits 1-8, which in-order
// plans keep within (Plan::kInOrderSendPeers).
static_assert(Plan::kInOrderSendPeers <= 256, "SendId packs the send peer's index in 8 bits");
uint64_t RecvId(size_t u) { return uint64_t(u) << 9; }  // p2p traffic has bit 63 (mailbox.h)
uint64_t SendId(size_t u, size_t i) { return (uint64_t(u) << 9) | (uint64_t(i) << 1) | 1; }
size_t UnitOf(uint64_t id) { return static_cast<size_t>(id >> 9); }
}  // namespace

bool CommCore::BlockingFits(const Plan& plan, const Buffer& in, const Buffer& out, Compression wire,
                            const ExecMemory* memory) {
  if (!plan.in_order || !plan.one_chunk || plan.units.size() > kBlockingUnits) return false;
  if (wire != Compression::kNone || memory || direct_ || opts_.size < 2) return false;
  if (!HostVisible(in.kind) || !HostVisible(out.kind)) return false;
  return plan.max_unit_count * DTypeSize(out.dtype) <= kBlockingBytes && BlockingRecvReady();
}

bool CommCore::BlockingRecvReady() {
  if (blocking_recv_.base != nullptr) return true;
  blocking_buf_.resize(kBlockingBytes * (kBlockingUnits + 1));
  auto r = transport_->RegisterStaging(blocking_buf_.data(), blocking_buf_.size(), MemKind::kHost);
  if (!r.ok()) return false;  // then the executor runs
  blocking_recv_ = *r;
  return true;
}

// One call's walk. Holds what the units share: the plan, the buffers, the receive in flight and
// the sends not yet completed.
class CommCore::BlockingRun {
 public:
  BlockingRun(CommCore& c, const BlockingCall& k)
      : c_(c), k_(k), plan_(*k.plan), esize_(DTypeSize(k.out.dtype)), deadline_(c.RunDeadline(*k.op)) {}

  Status Walk() {
    const size_t n = plan_.units.size();
    for (size_t u = 0; u < n; ++u) sends_left_[u] = 0;  // (a few units: not the whole array)
    // A Status is made only where something is waited for or went wrong: the common unit, whose
    // message has come and whose sends were copied out, makes none.
    for (size_t u = 0; u < n; ++u) {
      const Unit& un = plan_.units[u];
      const Step& st = StepOf(u);
      Post(u);
      if (un.sent_dep >= 0 && sends_left_[un.sent_dep] != 0) {
        const size_t d = static_cast<size_t>(un.sent_dep);
        Where(un);
        HOOP_RETURN_IF_ERROR(PollUntil([&] { return sends_left_[d] == 0; }));
      }
      if (st.recv != RecvKind::kNone) {
        c_.RecordDeferred(*k_.desc);  // while the peers' messages come, not before this rank's go
        if (!got_) got_ = from_->TakeNow(RecvTag(u), RecvId(u), k_.op->gate.Open() ? kTakeSpins : 0, nullptr);
        if (!got_) {
          Where(un);
          HOOP_RETURN_IF_ERROR(PollUntil([&] { return got_; }));
        }
      }
      if ((st.recv != RecvKind::kNone || !st.fold.empty()) && !Act(u))
        return Unimplemented(c_.Describe(*k_.op, k_.seq, k_.algo) + ": no reduction kernel for this memory");
      if (u + 1 < n) Post(u + 1);  // the next receive before this unit's sends
      if (!st.send_peers.empty()) HOOP_RETURN_IF_ERROR(Send(u));
    }
    if (pending_ != 0) {
      Where(plan_.units[n - 1]);
      return PollUntil([&] { return pending_ == 0; });
    }
    return Status::Ok();
  }

 private:
  // Tens of microseconds of looking before the poll loop, where the back end spins at all and
  // the call's SpinGate is open (otherwise one look).
  static constexpr unsigned kTakeSpins = 1u << 16;

  // Only where it waits: the flight recorder's step and chunk (the one message at hand never).
  void Where(const Unit& un) { c_.TraceWaits(static_cast<uint32_t>(un.step), un.chunk, k_.algo); }
  const Step& StepOf(size_t u) const { return plan_.schedule.steps[static_cast<size_t>(plan_.units[u].step)]; }
  Tag RecvTag(size_t u) const { return {MatchTag(k_.seq, plan_.units[u].chunk, StepOf(u).recv_msg), k_.check}; }

  void Post(size_t u) {
    if (posted_ >= static_cast<long>(u) || StepOf(u).recv == RecvKind::kNone) return;
    posted_ = static_cast<long>(u);
    got_ = false;
    from_ = c_.transport_->endpoint(StepOf(u).recv_peer);
    from_->PostRecv(c_.blocking_recv_, LandAt(u), plan_.units[u].count * esize_, RecvTag(u), RecvId(u));
  }

  // Where unit u's message lands in the registered landing places (comm_core.h).
  size_t LandAt(size_t u) const { return StepOf(u).recv == RecvKind::kHold ? (u + 1) * kBlockingBytes : 0; }

  // The executor's Land on the staged message: a copy into `out`, or `out = src op message`; a
  // held message stays where it landed, and a fold folds them (the executor's FoldUnit); false
  // where no reduction kernel applies.
  bool Act(size_t u) {
    const Step& st = StepOf(u);
    const Unit& un = plan_.units[u];
    char* out = static_cast<char*>(k_.out.data) + (st.out_offset + un.offset) * esize_;
    const void* msg = c_.blocking_recv_.base;
    if (st.recv == RecvKind::kHold) return true;
    if (st.recv == RecvKind::kCopy) {
      if (un.count) std::memcpy(out, msg, un.count * esize_);
      return true;
    }
    if (!reduce_) reduce_ = LookupReduce(k_.out.dtype, k_.op->op, MemKind::kHost);  // on the first reduction
    if (!reduce_) return false;
    if (!un.fold.empty()) return Fold(u, out);
    const void* src = st.accumulate ? out : static_cast<const char*>(k_.in.data) + (st.in_offset + un.offset) * esize_;
    const int divisor = st.finalize && k_.op->op == ReduceOp::kAvg ? c_.opts_.size : 0;
    reduce_(out, st.recv_left ? msg : src, st.recv_left ? src : msg, un.count, divisor);
    return true;
  }

  bool Fold(size_t u, char* out) {
    const Step& st = StepOf(u);
    const Unit& un = plan_.units[u];
    const void* srcs[kBlockingUnits + 1];
    const size_t k = un.fold.size();
    if (k < 2 || k > kBlockingUnits + 1) return false;
    for (size_t i = 0; i < k; ++i) {
      const int h = un.fold[i];
      srcs[i] = h < 0 ? static_cast<const char*>(k_.in.data) + (st.in_offset + un.offset) * esize_
                      : static_cast<const char*>(c_.blocking_recv_.base) + LandAt(static_cast<size_t>(h));
    }
    const int divisor = st.finalize && k_.op->op == ReduceOp::kAvg ? c_.opts_.size : 0;
    hoop::Fold(reduce_, esize_, out, srcs, static_cast<int>(k), un.count, divisor, false);
    return true;
  }

  Status Send(size_t u) {
    const Step& st = StepOf(u);
    const Unit& un = plan_.units[u];
    const size_t bytes = un.count * esize_;
    const Buffer& b = st.send_from_in ? k_.in : k_.out;
    const size_t off = ((st.send_from_in ? st.in_offset : st.out_offset) + un.offset) * esize_;
    const Tag tag{MatchTag(k_.seq, un.chunk, st.send_msg), k_.check};
    for (size_t i = 0; i < st.send_peers.size(); ++i) {
      Endpoint* to = c_.transport_->endpoint(st.send_peers[i]);
      const char* data = static_cast<const char*>(b.data) + off;
      if (to->SendCopy(data, bytes, tag)) continue;
      if (bytes == 0) {
        to->PostSend(c_.blocking_recv_, 0, 0, tag, SendId(u, i));  // an empty message: no memory of its own
      } else {
        Region& r = st.send_from_in ? in_r_ : out_r_;
        if (!r.base) {
          HOOP_ASSIGN_OR_RETURN(r, c_.transport_->Register(b.data, b.count * esize_, b.kind));
        }
        to->PostSend(r, off, bytes, tag, SendId(u, i));
      }
      ++sends_left_[u];
      ++pending_;
    }
    return Status::Ok();
  }

  template <class Done>
  Status PollUntil(Done done) {
    std::vector<Completion>& got = c_.exec_.done;
    while (!done()) {
      got.clear();
      // Looks of at most kInterruptLook: a revocation (CommCore::Revoke) stops the wait there.
      Status s = c_.transport_->Poll(&got, deadline_.Earlier(Deadline::After(kInterruptLook)), k_.op->gate);
      if (s.code() == Code::kDeadlineExceeded) {
        if (c_.Interrupted()) return c_.RevokedAt(c_.Describe(*k_.op, k_.seq, k_.algo));
        if (!deadline_.Expired()) continue;
        return Timeout();
      }
      if (!s.ok()) return s;
      for (const Completion& cm : got) HOOP_RETURN_IF_ERROR(Complete(cm));
    }
    return Status::Ok();
  }

  Status Complete(const Completion& cm) {
    if (cm.op_id & kP2pBit) {  // point-to-point traffic meanwhile
      c_.mailbox_->Handle(cm);
      return Status::Ok();
    }
    const auto what = [&] { return c_.Describe(*k_.op, k_.seq, k_.algo); };
    if (!cm.status.ok()) {
      if (cm.status.code() == Code::kFailedPrecondition && cm.peer_check != 0 && cm.peer_check != k_.check)
        return FailedPrecondition(
            what() + ": ranks disagree: " + k_.desc->DescribeDifference(OpDesc::Unpack(cm.peer_check), cm.peer));
      return Status(cm.status.code(), what() + ": " + (cm.is_send ? "sending to rank " : "receiving from rank ") +
                                          std::to_string(cm.peer) + ": " + cm.status.message());
    }
    if (cm.is_send) {
      --sends_left_[UnitOf(cm.op_id)];
      --pending_;
    } else {
      got_ = true;
    }
    return Status::Ok();
  }

  // The executor's words (executor.cc, TimeoutError).
  Status Timeout() {
    std::set<int> waiting;
    if (posted_ >= 0 && !got_) waiting.insert(StepOf(static_cast<size_t>(posted_)).recv_peer);
    c_.waiting_for_.assign(waiting.begin(), waiting.end());
    std::ostringstream os;
    os << c_.Describe(*k_.op, k_.seq, k_.algo) << ": ";
    SayTimedOut(os, static_cast<double>(c_.opts_.timeout.count()) / 1000.0, c_.opts_.timeout_name);
    os << " ";
    if (waiting.empty())
      os << "with sends still queued";
    else
      os << "waiting for rank " << *waiting.begin();
    return DeadlineExceeded(os.str());
  }

  CommCore& c_;
  const BlockingCall& k_;
  const Plan& plan_;
  const size_t esize_;
  const Deadline deadline_;
  ReduceFn reduce_ = nullptr;
  long posted_ = -1;          // the last unit whose receive was posted
  Endpoint* from_ = nullptr;  // its sender
  bool got_ = false;          // whether it has completed
  Region in_r_, out_r_;
  uint16_t sends_left_[kBlockingUnits];  // per unit: its sends posted and not completed (Walk clears)
  size_t pending_ = 0;
};

Status CommCore::RunBlocking(const BlockingCall& k) {
  BlockingRun run(*this, k);
  return run.Walk();
}

}  // namespace hoop
