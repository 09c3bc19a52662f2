// A small allreduce run on the calling thread as a few blocking exchanges, not through the
// executor: recursive doubling (schedules/doubling.cc), for a call of one chunk of at most
// kSmallAllreduceBytes on host memory; and a barrier's dissemination rounds the same way
// (barrier.cc). CommCore::CallRun::RunSchedule chooses them for the calls they fit.
//
// Round j: post the receive from the round's partner, send the partial (the input in round 0,
// then `out`) with the back end's immediate copy (Endpoint::SendCopy: the bytes are copied out
// at once), take the partner's message where it lies if it has come (Endpoint::TakeNow), else
// poll for it; then reduce, the lower rank's data on the left, the average divided in the last
// round. Where a back end has no such shortcuts (tcp), the same messages go by PostSend and Poll.
// Beyond a power of two p, the first 2(n - p) ranks pair up as the schedule has them: the even
// one (an extra) sends its input to the odd one and gets the result back from it; the odd one
// reduces the extra's data into its own first (the extra's on the left) and stands for both.
//
// Why: an 8-byte allreduce over shm took 0.56-0.71 us against OpenMPI vader's 0.19 while a
// point-to-point hop took vader's 0.13 (docs/PERF.md): the time went to the general path's set-up
// (the plan, the executor's state, registrations, its poll loop), not to the link.
//
// The messages are the executor's for the doubling plan of the same call, byte for byte: the
// same match words (sequence, chunk 0, message j), the same check word (OpDesc) and the same
// bytes, and the result has the same bits (the same reduction kernel, in the same order). So a
// rank whose call goes this way and one whose call of the same shape runs the executor (device
// buffers, a call on a CUDA stream, a tcp peer) meet as ever, and a rank whose call differs
// gets the executor's "ranks disagree" or timeout, worded the same.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "collectives/core/comm_core.h"
#include "collectives/core/executor.h"
#include "collectives/core/op_desc.h"
#include "collectives/kernels/reduce.h"
#include "collectives/schedules/schedule.h"
#include "common/logging.h"
#include "transport/tagged/mailbox.h"

namespace hoop {

bool CommCore::SmallAllreduceFits(const Op& op, Algo algo, Compression wire) const {
  if (algo != Algo::kDoubling || wire != Compression::kNone || direct_ != nullptr || opts_.size < 2) return false;
  if (!HostVisible(op.in.kind) || !HostVisible(op.out.kind) || op.in.count == 0) return false;
  const size_t esize = DTypeSize(op.out.dtype);
  // One chunk: the plan's only unit per step is chunk 0, as below.
  return op.in.count * esize <= kSmallAllreduceBytes && op.in.count <= ChunkElems(esize);
}

Status CommCore::SmallStep(const SmallCall& k, int recv_peer, int send_peer, uint16_t msg, const void* send) {
  // Tens of microseconds of looking before the poll loop, where the back end spins at all.
  constexpr unsigned kTakeSpins = 1u << 16;
  const Tag tag{MatchTag(k.seq, 0, msg), k.check};
  const uint64_t recv_id = (uint64_t(msg) << 2) | 2, send_id = (uint64_t(msg) << 2) | 1;
  Endpoint* from = recv_peer >= 0 ? transport_->endpoint(recv_peer) : nullptr;
  if (from) from->PostRecv(small_recv_, 0, k.bytes, tag, recv_id);
  bool sent = send_peer < 0;
  if (!sent) {
    Endpoint* to = transport_->endpoint(send_peer);
    sent = to->SendCopy(send, k.bytes, tag);
    if (!sent && k.bytes == 0) {
      to->PostSend(small_recv_, 0, 0, tag, send_id);  // an empty message (a barrier's): no memory of its own
    } else if (!sent) {
      HOOP_ASSIGN_OR_RETURN(Region r, transport_->Register(const_cast<void*>(send), k.bytes, MemKind::kHost));
      to->PostSend(r, 0, k.bytes, tag, send_id);
    }
  }
  bool got = !from || from->TakeNow(tag, recv_id, kTakeSpins, nullptr);
  const auto what = [&] { return Describe(*k.op, k.seq, k.algo); };
  std::vector<Completion>& done = exec_.done;
  while (!got || !sent) {  // the partner's message, and this rank's send if it was posted
    done.clear();
    Status s = transport_->Poll(&done, k.deadline);
    if (s.code() == Code::kDeadlineExceeded) {
      waiting_for_.assign(got ? 0 : 1, recv_peer);
      std::ostringstream os;  // the executor's words (executor.cc, TimeoutError)
      os << what() << ": timed out after " << static_cast<double>(opts_.timeout.count()) / 1000.0
         << " s (HOOP_TIMEOUT) " << (got ? "with sends still queued" : "waiting for rank " + std::to_string(recv_peer));
      return DeadlineExceeded(os.str());
    }
    if (!s.ok()) return s;
    for (const Completion& c : done) {
      if (c.op_id & kP2pBit) {  // point-to-point traffic meanwhile
        mailbox_->Handle(c);
        continue;
      }
      if (!c.status.ok()) {
        if (c.status.code() == Code::kFailedPrecondition && c.peer_check != 0 && c.peer_check != k.check)
          return FailedPrecondition(
              what() + ": ranks disagree: " + k.desc.DescribeDifference(OpDesc::Unpack(c.peer_check), c.peer));
        return Status(c.status.code(), what() + ": " + (c.is_send ? "sending to rank " : "receiving from rank ") +
                                           std::to_string(c.peer) + ": " + c.status.message());
      }
      if (c.op_id == recv_id) got = true;
      if (c.op_id == send_id) sent = true;
    }
  }
  return Status::Ok();
}

bool CommCore::SmallRecvReady() {
  if (small_recv_.base != nullptr) return true;
  small_buf_.resize(kSmallAllreduceBytes);
  auto r = transport_->RegisterStaging(small_buf_.data(), small_buf_.size(), MemKind::kHost);
  if (!r.ok()) return false;
  small_recv_ = *r;
  return true;
}

Status CommCore::RunSmallAllreduce(const Op& op, uint32_t seq, Algo algo) {
  const size_t esize = DTypeSize(op.out.dtype), bytes = op.in.count * esize;
  if (!SmallRecvReady()) return RunSchedule(op, algo, op.in.count, op.in, op.out, seq, Compression::kNone);
  const ReduceFn reduce = LookupReduce(op.out.dtype, op.op, MemKind::kHost);
  const OpDesc desc{op.kind, op.out.dtype, op.op, static_cast<uint8_t>(algo), op.root, op.in.count, 0};
  const SmallCall k{&op, algo, seq, desc.Pack(), desc, bytes, Deadline::After(opts_.timeout)};
  const auto what = [&] { return Describe(op, seq, algo); };
  if (!reduce) return Unimplemented(what() + ": no reduction kernel for this memory");
  const int n = opts_.size, rank = opts_.rank;
  int p = 1, rounds = 0;
  while (p * 2 <= n) p *= 2, ++rounds;
  if (LogEnabled(LogLevel::kDebug)) {  // as RunSchedule: what a call of this shape runs, once per shape
    const PlanKey key{op.kind, algo, op.root, op.in.count, ChunkElems(esize)};
    if (!plans_.Contains(key)) {
      (void)plans_.Get(key);  // remembered as seen; the executor's plan for the same call
      HOOP_LOG(kDebug, what() << ": new call shape: " << AlgoName(algo) << " in " << rounds
                              << " blocking exchange(s) of " << bytes << " B on this thread (small_allreduce.cc), over "
                              << transport_->Label());
    }
  }
  const int extra = n - p;
  const auto real = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };  // virtual rank -> rank
  const char* theirs = static_cast<const char*>(small_recv_.base);
  char* out = static_cast<char*>(op.out.data);
  if (rank < 2 * extra && rank % 2 == 0) {  // an extra: fold in, get the result back
    HOOP_RETURN_IF_ERROR(SmallStep(k, -1, rank + 1, kDoublingFoldMsg, op.in.data));
    HOOP_RETURN_IF_ERROR(SmallStep(k, rank + 1, -1, kDoublingResultMsg, nullptr));
    std::memcpy(out, theirs, bytes);
    return Status::Ok();
  }
  const bool folded = rank < 2 * extra;
  const char* partial = static_cast<const char*>(op.in.data);
  if (folded) {  // the extra's input first, on the left
    HOOP_RETURN_IF_ERROR(SmallStep(k, rank - 1, -1, kDoublingFoldMsg, nullptr));
    reduce(out, theirs, partial, op.in.count, 0);
    partial = out;
  }
  const int v = folded ? rank / 2 : rank - extra;
  for (int j = 0; j < rounds; ++j) {
    const int partner = real(v ^ (1 << j));
    HOOP_RETURN_IF_ERROR(SmallStep(k, partner, partner, static_cast<uint16_t>(j), partial));
    const int divisor = j == rounds - 1 && op.op == ReduceOp::kAvg ? n : 0;
    if (partner < rank)
      reduce(out, theirs, partial, op.in.count, divisor);
    else
      reduce(out, partial, theirs, op.in.count, divisor);
    partial = out;
  }
  if (folded) HOOP_RETURN_IF_ERROR(SmallStep(k, -1, rank - 1, kDoublingResultMsg, out));  // the result to the extra
  return Status::Ok();
}

Status CommCore::RunSmallBarrier(const Op& op, uint32_t seq) {
  const int n = opts_.size, rank = opts_.rank;
  constexpr Algo algo = Algo::kDissemination;
  const OpDesc desc{op.kind, DType::kU8, op.op, static_cast<uint8_t>(algo), op.root, 0, 0};
  const SmallCall k{&op, algo, seq, desc.Pack(), desc, 0, Deadline::After(opts_.timeout)};
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  if (LogEnabled(LogLevel::kDebug)) {  // as RunSchedule: what a call of this shape runs, once
    const PlanKey key{op.kind, algo, op.root, 0, ChunkElems(1)};
    if (!plans_.Contains(key)) {
      (void)plans_.Get(key);  // remembered as seen; the executor's plan for the same call
      HOOP_LOG(kDebug, Describe(op, seq, algo)
                           << ": new call shape: " << AlgoName(algo) << " in " << rounds
                           << " blocking exchange(s) of 0 B on this thread (barrier.cc), over " << transport_->Label());
    }
  }
  for (int j = 0; j < rounds; ++j) {
    const int d = 1 << j;
    HOOP_RETURN_IF_ERROR(SmallStep(k, (rank - d + n) % n, (rank + d) % n, static_cast<uint16_t>(j), small_buf_.data()));
  }
  return Status::Ok();
}

}  // namespace hoop
