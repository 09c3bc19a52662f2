// Alltoall: block p of every rank's input goes to rank p, into the block of its output that
// belongs to the sender. Pairwise exchange (schedules/pairwise.cc); the rank's own block is a
// copy. In place, the input is first copied to the communicator's working buffer: the exchange
// reads blocks of in after it has written the same blocks of out.
#include "collectives/core/coll_table.h"

namespace hoop {

Status RunAlltoall(CallContext& ctx, const CollCall& c) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const size_t esize = DTypeSize(c.in.dtype);
  const size_t block = c.in.count / static_cast<size_t>(ctx.size());
  const size_t bytes = c.in.count * esize;
  Buffer in = c.in;
  const char* a = static_cast<const char*>(c.in.data);
  const char* b = static_cast<const char*>(c.out.data);
  if (bytes > 0 && a < b + bytes && b < a + bytes) {  // overlapping: exchange from a copy
    in = ctx.Scratch(c.in.count, c.in.dtype);
    HOOP_RETURN_IF_ERROR(ctx.Place(in.data, c.in.data, bytes));
  }
  const size_t own = static_cast<size_t>(ctx.rank()) * block * esize;
  HOOP_RETURN_IF_ERROR(
      ctx.Place(static_cast<char*>(c.out.data) + own, static_cast<const char*>(in.data) + own, block * esize));
  if (ctx.size() == 1) return Status::Ok();
  return ctx.RunSchedule(algo, block, in, c.out);
}

std::string CheckAlltoall(const CollCall& c, int, int size) {
  const size_t n = static_cast<size_t>(size);
  if (c.in.count != c.out.count)
    return "input count " + std::to_string(c.in.count) + " differs from output count " + std::to_string(c.out.count);
  if (c.in.count % n != 0)
    return "count " + std::to_string(c.in.count) + " is not a multiple of the " + std::to_string(n) + " ranks";
  return "";
}

}  // namespace hoop
