// Broadcast: root's input lands in every rank's output. A pipelined chain for large messages
// (time ~ size / link rate, whatever n), a binomial tree for small ones (log2 n rounds); see
// schedules/broadcast.cc.
#include "collectives/core/coll_table.h"

namespace hoop {

Status RunBroadcast(CallContext& ctx, const CollCall& c) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const bool is_root = c.root == ctx.rank();
  if (is_root) HOOP_RETURN_IF_ERROR(ctx.Place(c.out.data, c.in.data, c.out.count * DTypeSize(c.out.dtype)));
  if (ctx.size() == 1) return Status::Ok();
  // Non-roots have no input: the schedule only ever sends from the root's `in`.
  return ctx.RunSchedule(algo, c.out.count, is_root ? c.in : c.out, c.out);
}

// Broadcast's and reduce's: the root's input and output are alike.
std::string CheckRootedSame(const CollCall& c, int rank, int) {
  if (c.root == rank && c.in.count != c.out.count)
    return "root's input count " + std::to_string(c.in.count) + " differs from its output count " +
           std::to_string(c.out.count);
  return "";
}

}  // namespace hoop
