// Barrier: returns on a rank only once every rank has entered it. Dissemination: in round k
// every rank signals rank + 2^k and waits for rank - 2^k, ceil(log2 n) rounds of empty messages
// (schedules/broadcast.cc). The rounds run as blocking exchanges on the calling thread
// (Communicator::SmallStep, small_allreduce.cc), not through the executor: a barrier moves no
// data, so the executor's set-up (the plan, its state, registrations, its poll loop) would be
// all of its cost. The messages are the executor's for the same plan, byte for byte: the same
// match words (sequence, chunk 0, message k), the same check word and no bytes, so a rank whose
// barrier differs (another sequence, another collective) gets the executor's "ranks disagree"
// or timeout, worded the same.
#include "collectives/communicator.h"
#include "collectives/op_desc.h"
#include "common/logging.h"

namespace hoop {

Work Communicator::Barrier(const CallOptions& o) {
  Op x;
  x.kind = CollKind::kBarrier;
  x.in.dtype = x.out.dtype = DType::kU8;
  x.algo = o.algo;
  x.stream = o.stream;
  return Submit(x, o.blocking);
}

Status Communicator::RunBarrier(const Op& op, uint32_t seq) {
  const int n = opts_.size, rank = opts_.rank;
  if (n == 1) return Status::Ok();
  constexpr Algo algo = Algo::kDissemination;
  Buffer empty{nullptr, 0, DType::kU8, MemKind::kHost};
  if (!SmallRecvReady()) return RunSchedule(op, algo, 0, empty, empty, seq);
  const OpDesc desc{op.kind, DType::kU8, op.op, static_cast<uint8_t>(algo), op.root, DescCount(op), 0};
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
