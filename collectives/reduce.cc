// Reduce: the reduction of every rank's input lands in the root's output. A binomial tree for
// small messages, a pipelined chain for large ones (schedules/reduce.cc). Ranks other than the
// root reduce their subtree's (or the chain's) partial results in a working buffer the
// communicator keeps, since their own output is not theirs to write.
#include "collectives/core/coll_table.h"

namespace hoop {

Status RunReduce(CallContext& ctx, const CollCall& c) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  if (ctx.size() == 1) return ctx.Place(c.out.data, c.in.data, c.in.count * DTypeSize(c.in.dtype));
  const Buffer out = c.root == ctx.rank() ? c.out : ctx.Scratch(c.in.count, c.in.dtype);
  return ctx.RunSchedule(algo, c.in.count, c.in, out);
}

}  // namespace hoop
