// Barrier: returns on a rank only once every rank has entered it. Dissemination: ceil(log2 n)
// rounds of empty messages (schedules/broadcast.cc).
#include "collectives/communicator.h"

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
  if (opts_.size == 1) return Status::Ok();
  Buffer empty{nullptr, 0, DType::kU8, MemKind::kHost};
  return RunSchedule(op, Algo::kDissemination, 0, empty, empty, seq);
}

}  // namespace hoop
