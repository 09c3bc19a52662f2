// A collective's run on the worker (or on its caller's thread, blocking): the flight recorder's
// record of it, the plan for its shape (cached by PlanKey, built per call for the v-collectives),
// the blocking interpreter where the plan fits one (blocking.cc) or the executor over the
// transport, and a timeout explained by asking the store who is stalled (stall.h). Split from
// comm_core.cc, which keeps the queue, the worker, the turn and poisoning.
#include <algorithm>
#include <sstream>

#include "collectives/core/comm_core.h"
#include "collectives/core/stall.h"
#include "common/logging.h"

namespace hoop {

Status CommCore::RunCollectiveOp(const Op& op) {
  waiting_for_.clear();
  // One rank's calls never poll: where the connections it shares failed, it fails with them.
  if (opts_.size == 1)
    if (Status f = transport_->Failure(); !f.ok()) {
      Poison(f);
      return Status(f.code(), "rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) + ": " + f.message());
    }
  const RunningTrace outer = running_;  // (a collective run inside another's turn: restored below)
  // One the worker runs is recorded as it starts (a caller's at its first wait: RecordDeferred).
  const uint32_t seq = seq_++;
  const uint64_t id = op.trace_deferred || !recorder_->on() ? 0 : recorder_->Begun(TraceOf(op), seq, op.algo);
  if (id) NameRecord(id, op);
  running_ = RunningTrace{id, op.trace_deferred ? &op : nullptr, seq};
  chosen_ = op.algo;
  Status result = RunOp(op, seq);
  RecordDeferred();  // (where it never waited)
  // Before telling the peers: they must time out on their own to say whom they wait for.
  if (result.code() == Code::kDeadlineExceeded) result = ExplainTimeout(result);
  if (result.ok()) {
    recorder_->Done(running_.id, chosen_);
  } else {
    recorder_->Chose(running_.id, chosen_);
    recorder_->Ended(running_.id, result, waiting_for_);
  }
  running_ = outer;
  if (!result.ok() && result.code() != Code::kInvalidArgument) Poison(result);
  return result;
}

Deadline CommCore::RunDeadline(const Op& op) const {
  const auto wait = opts_.timeout - StallGrace(opts_.timeout);
  return op.trace_deferred ? Deadline::At(op.begun + wait) : Deadline::After(wait);
}

Status CommCore::ExplainTimeout(const Status& timeout) {
  const std::string links = NoteLinks(waiting_for_);
  if (waiting_for_.empty()) return timeout;
  // The others time out within moments of this rank when they entered the operation with it;
  // one that has said nothing within the grace (a quarter of the timeout, 1 to 10 s, the part of
  // it the operation did not wait) is not waiting in hoop.
  const auto grace = StallGrace(opts_.timeout);
  StallVerdict v =
      FindStalledRanks(*store_, "hoop/" + opts_.name + "/", opts_.rank, waiting_for_, Deadline::After(grace));
  if (v.explanation.empty())
    return DeadlineExceeded(timeout.message() + links +
                            "; did every rank call the same collectives in the same order?");
  return DeadlineExceeded(timeout.message() + links + "; " + v.explanation);
}

std::string CommCore::Describe(const Op& op, uint32_t seq, Algo algo, Compression wire) const {
  std::ostringstream os;
  os << "rank " << opts_.rank;
  if (membership_.id != 0) {  // a split's ranks are not the job's: say which they are
    os << " of '" << opts_.name << "' (its ranks are ranks ";
    for (size_t r = 0; r < membership_.members.size() && r < 8; ++r) os << (r ? "," : "") << membership_.members[r];
    if (membership_.members.size() > 8) os << ",...";
    os << " of the job)";
  }
  const bool split = op.kind == CollKind::kAllgather && op.root == kSplitRoot;  // split.cc's allgather
  os << ": " << (split ? "split (an allgather)" : CollKindName(op.kind)) << " #" << seq << " (" << AlgoName(algo);
  if (op.kind != CollKind::kBarrier)
    os << ", " << DescCount(op) << " x " << DTypeName(UsesOut(op) ? op.out.dtype : op.in.dtype);
  if (Reduces(op.kind)) os << ", " << ReduceOpName(op.op);
  if (Rooted(op.kind)) os << ", root " << op.root;
  if (wire != Compression::kNone) os << ", " << CompressionName(wire) << " on the wire";
  os << ")";
  return os.str();
}

Status CommCore::RunSchedule(const Op& op, Algo algo, size_t count, const Buffer& in, const Buffer& out, uint32_t seq,
                             Compression wire, ExecMemory* memory) {
  chosen_ = algo;                    // for the flight recorder (Done, or Step where it waits)
  BlockingMemo& m = blocking_memo_;  // the same shape as the last blocking call: its plan again
  if (wire == Compression::kNone && !memory && !direct_ && !op.v && m.Matches(op, algo, count, in, out, plans_.epoch()))
    return RunBlocking(BlockingCall{m.plan, &op, algo, seq, m.check, &m.desc, in, out});
  const size_t esize = DTypeSize(out.dtype);
  const PlanKey key{op.kind, algo, op.root, count, ChunkElems(esize)};
  // The v-collectives' plans depend on their counts: built for the call, never cached.
  // (On the heap: a Plan on this frame would be cleared on every call.)
  std::unique_ptr<Plan> own;
  if (op.v)
    own = std::make_unique<Plan>(
        MakePlan(FindAlgo(op.kind, algo)->build(ScheduleArgs{opts_.rank, opts_.size, op.root, count, op.v.get()}),
                 key.chunk_elems));
  const bool new_shape = LogEnabled(LogLevel::kDebug) && (op.v || !plans_.Contains(key));
  const Plan& plan = op.v ? *own : plans_.Get(key);
  const OpDesc desc{
      op.kind, out.dtype, op.op, static_cast<uint8_t>(algo), op.root, DescCount(op), static_cast<uint8_t>(wire)};
  const bool blocking = BlockingFits(plan, in, out, wire, memory);
  if (new_shape)  // as NCCL_DEBUG=INFO: what a call of this shape runs, once per shape
    HOOP_LOG(kDebug, Describe(op, seq, algo, wire)
                         << ": new call shape: " << AlgoName(algo) << " in " << plan.units.size()
                         << (blocking ? " blocking steps on this thread (blocking.cc)"
                                      : " steps of up to " + std::to_string(ChunkBytes()) + " B chunks, window " +
                                            std::to_string(opts_.window))
                         << ", over " << transport_->Label());
  if (blocking && !op.v)
    m = {&plan,        plans_.epoch(), op.kind, algo,    op.root,  count, op.in.count,
         op.out.count, out.dtype,      op.op,   in.kind, out.kind, desc,  desc.Pack()};
  if (blocking) return RunBlocking(BlockingCall{&plan, &op, algo, seq, desc.Pack(), &desc, in, out});
  RecordDeferred();
  return ExecutePlan(op, plan, desc, algo, in, out, seq, memory);
}

Status CommCore::ExecutePlan(const Op& op, const Plan& plan, const OpDesc& desc, Algo algo, const Buffer& in,
                             const Buffer& out, uint32_t seq, ExecMemory* memory) {
  const size_t esize = DTypeSize(out.dtype);
  const Compression wire = static_cast<Compression>(desc.compression);
  ExecArgs a;
  a.plan = &plan;
  a.chunk_bytes = ChunkBytes();
  HOOP_ASSIGN_OR_RETURN(a.in, transport_->Register(in.data, in.count * esize, in.kind));
  HOOP_ASSIGN_OR_RETURN(a.out, transport_->Register(out.data, out.count * esize, out.kind));
  a.in.large = a.out.large = std::max(in.count, out.count) * esize >= kStreamingBytes;
  a.dtype = out.dtype;
  a.op = op.op;
  a.nranks = opts_.size;
  a.seq = seq;
  a.check = desc.Pack();
  a.window = opts_.window;
  a.compression = wire;
  a.residual = wire != Compression::kNone ? op.residual : nullptr;
  a.deadline = RunDeadline(op);
  a.gate = op.gate;
  a.interrupt = &interrupted_;
  a.look = kInterruptLook;
  a.timeout_s = static_cast<double>(opts_.timeout.count()) / 1000.0;
  a.timeout_name = opts_.timeout_name;
  a.waiting_for = &waiting_for_;
  if (recorder_->on()) a.waits = [this, algo](uint32_t step, uint32_t chunk) { TraceWaits(step, chunk, algo); };
  a.memory = memory;
  a.queue = direct_;
  // A working copy a device run could not get (Scratch) ends the call here, as it would have.
  if (direct_ && !direct_error_.ok()) return direct_error_;
  Mailbox* mailbox = mailbox_.get();
  a.foreign = [mailbox](const Completion& c) { mailbox->Handle(c); };
  struct Context {
    const CommCore* self;
    const Op* op;
    uint32_t seq;
    Algo algo;
    OpDesc desc;
  } ctx{this, &op, seq, algo, desc};
  const Context* c = &ctx;
  a.what = [c] { return c->self->Describe(*c->op, c->seq, c->algo, static_cast<Compression>(c->desc.compression)); };
  CommCore* self = this;
  a.revoked = [self, c] {
    return self->RevokedAt(c->self->Describe(*c->op, c->seq, c->algo, static_cast<Compression>(c->desc.compression)));
  };
  a.explain_mismatch = [c](uint64_t theirs, int peer) {
    return c->desc.DescribeDifference(OpDesc::Unpack(theirs), peer);
  };
  return Execute(*transport_, staging_, exec_, a);
}

}  // namespace hoop
