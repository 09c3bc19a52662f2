// Barrier: returns on a rank only once every rank has entered it. Dissemination: in round k
// every rank signals rank + 2^k and waits for rank - 2^k, ceil(log2 n) rounds of empty messages
// (schedules/broadcast.cc). Beneath CallContext::RunSchedule the plan's rounds are walked on the
// calling thread (the blocking interpreter, core/blocking.cc), not by the executor: a barrier
// moves no data, so the executor's set-up would be all of its cost.
#include "collectives/core/coll_table.h"

namespace hoop {

Status RunBarrier(CallContext& ctx, const CollCall&) {
  if (ctx.size() == 1) return Status::Ok();
  const Buffer empty{nullptr, 0, DType::kU8, MemKind::kHost};
  return ctx.RunSchedule(Algo::kDissemination, 0, empty, empty);
}

}  // namespace hoop
