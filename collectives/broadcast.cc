// Broadcast: root's input lands in every rank's output. A pipelined chain for large messages
// (time ~ size / link rate, whatever n), a binomial tree for small ones (log2 n rounds); see
// schedules/broadcast.cc.
#include <cstring>

#include "collectives/communicator.h"

namespace hoop {

Work Communicator::Broadcast(const Buffer& in, const Buffer& out, int root, const CallOptions& o) {
  Op x;
  x.kind = CollKind::kBroadcast;
  x.in = in;
  x.out = out;
  x.root = root;
  x.algo = o.algo;
  x.stream = o.stream;
  return Submit(x, o.blocking);
}

Status Communicator::RunBroadcast(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  const bool is_root = op.root == opts_.rank;
  if (is_root) HOOP_RETURN_IF_ERROR(Place(op.out.data, op.in.data, op.out.count * DTypeSize(op.out.dtype)));
  if (opts_.size == 1) return Status::Ok();
  // Non-roots have no input: the schedule only ever sends from the root's `in`.
  Buffer in = is_root ? op.in : op.out;
  return RunSchedule(op, algo, op.out.count, in, op.out, seq);
}

}  // namespace hoop
