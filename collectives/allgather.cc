// Allgather: block r of every rank's output is rank r's input. Ring: each rank forwards the
// block it received last step, n-1 steps, (n-1)/n of the output through every link.
#include "collectives/core/coll_table.h"

namespace hoop {

Status RunAllgather(CallContext& ctx, const CollCall& c) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const size_t block_bytes = c.in.count * DTypeSize(c.in.dtype);
  char* own = static_cast<char*>(c.out.data) + static_cast<size_t>(ctx.rank()) * block_bytes;
  HOOP_RETURN_IF_ERROR(ctx.Place(own, c.in.data, block_bytes));
  if (ctx.size() == 1) return Status::Ok();
  return ctx.RunSchedule(algo, c.in.count, c.in, c.out);
}

std::string CheckAllgather(const CollCall& c, int, int size) {
  if (std::string why = BlocksWrap(c.in.count, size); !why.empty()) return why;
  const size_t want = c.in.count * static_cast<size_t>(size);  // BlocksWrap said it does not wrap
  if (c.out.count != want)
    return "output count " + std::to_string(c.out.count) + " must be size x input count = " + std::to_string(want);
  return "";
}

}  // namespace hoop
