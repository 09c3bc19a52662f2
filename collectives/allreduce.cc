// Allreduce: every rank ends with the elementwise reduction of every rank's input.
//
// Ring (large messages): reduce-scatter then allgather around the ring, pipelined in chunks;
// each rank sends and receives 2(n-1)/n of the data, the bandwidth optimum (schedules/ring.cc).
// Tree (small messages, more than two ranks): a double binary tree, 2 log2(n) hops instead of
// the ring's 2(n-1) (schedules/tree.cc). Doubling (small messages, two ranks): recursive
// doubling, one exchange per round, log2(n) rounds (schedules/doubling.cc). One rank: a copy
// (and the average divides by 1). Small calls of recursive doubling run as blocking exchanges
// on the caller's thread, walking the plan's own units (blocking.cc, chosen beneath
// CallContext::RunSchedule). Any of them may be asked to send f32/f64 data compressed to 16 bits
// (kernels/wire.h); that runs the ring, whose hops decode, add and encode.
#include "collectives/core/coll_table.h"

namespace hoop {

Status RunAllreduce(CallContext& ctx, const CollCall& c) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  if (ctx.size() == 1) return ctx.Place(c.out.data, c.in.data, c.in.count * DTypeSize(c.in.dtype));
  HOOP_ASSIGN_OR_RETURN(Compression wire, ctx.Wire());
  if (wire != Compression::kNone) algo = Algo::kRing;  // the codec's hop-by-hop rounding assumes it
  return ctx.RunSchedule(algo, c.in.count, c.in, c.out, wire);
}

std::string CheckAllreduce(const CollCall& c, int, int) {
  if (c.in.count != c.out.count)
    return "input count " + std::to_string(c.in.count) + " differs from output count " + std::to_string(c.out.count);
  const Compression z = c.compression.value_or(Compression::kNone);
  if (z == Compression::kFp16 || z == Compression::kBf16) {
    if (!Compressible(c.out.dtype, c.op))
      return std::string("compression ") + CompressionName(z) + " applies to f32 and f64 sum and avg, not " +
             DTypeName(c.out.dtype) + " " + ReduceOpName(c.op);
    if (c.algo != Algo::kAuto && c.algo != Algo::kRing)
      return std::string("compression runs the ring algorithm, not ") + AlgoName(c.algo);
  }
  if (c.residual && c.compression == Compression::kNone)
    return "a residual (error feedback) was given with compression none";
  if (c.residual && !Compressible(c.out.dtype, c.op))
    return std::string("a residual (error feedback) applies to compressed f32/f64 sum and avg, not ") +
           DTypeName(c.out.dtype) + " " + ReduceOpName(c.op);
  return "";
}

}  // namespace hoop
