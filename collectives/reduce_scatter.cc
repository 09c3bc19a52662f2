// Reduce-scatter: rank r ends with block r of the reduction of every rank's input. The ring's
// first half: partial sums travel n-1 steps. The partial sums need a full-size working buffer
// (the caller's output holds one block), kept by the communicator between calls.
#include "collectives/core/coll_table.h"

namespace hoop {

Status RunReduceScatter(CallContext& ctx, const CollCall& c) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const size_t block_bytes = c.out.count * DTypeSize(c.in.dtype);
  const size_t own = static_cast<size_t>(ctx.rank()) * block_bytes;
  if (ctx.size() == 1) return ctx.Place(c.out.data, static_cast<const char*>(c.in.data) + own, block_bytes);
  Buffer work = ctx.Scratch(c.in.count, c.in.dtype);
  HOOP_RETURN_IF_ERROR(ctx.RunSchedule(algo, c.out.count, c.in, work));
  return ctx.Place(c.out.data, static_cast<const char*>(work.data) + own, block_bytes);
}

std::string CheckReduceScatter(const CollCall& c, int, int size) {
  if (std::string why = BlocksWrap(c.out.count, size); !why.empty()) return why;
  const size_t want = c.out.count * static_cast<size_t>(size);  // BlocksWrap said it does not wrap
  if (c.in.count != want)
    return "input count " + std::to_string(c.in.count) + " must be size x output count = " + std::to_string(want);
  return "";
}

}  // namespace hoop
