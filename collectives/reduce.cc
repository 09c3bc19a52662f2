// Reduce: the reduction of every rank's input lands in the root's output. A binomial tree for
// small messages, a pipelined chain for large ones (schedules/reduce.cc). Ranks other than the
// root reduce their subtree's (or the chain's) partial results in a working buffer the
// communicator keeps, since their own output is not theirs to write.
#include <cstring>

#include "collectives/communicator.h"

namespace hoop {

Work Communicator::Reduce(const Buffer& in, const Buffer& out, ReduceOp op, int root, const CallOptions& o) {
  return Post(CollKind::kReduce, in, out, op, root, o);
}

Status Communicator::RunReduce(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  const bool is_root = op.root == opts_.rank;
  if (opts_.size == 1) return Place(op.out.data, op.in.data, op.in.count * DTypeSize(op.in.dtype));
  Buffer out = is_root ? op.out : Scratch(op.in.count, op.in.dtype);
  return RunSchedule(op, algo, op.in.count, op.in, out, seq);
}

}  // namespace hoop
