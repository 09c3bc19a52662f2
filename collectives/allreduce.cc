// Allreduce: every rank ends with the elementwise reduction of every rank's input.
//
// Ring (large messages): reduce-scatter then allgather around the ring, pipelined in chunks;
// each rank sends and receives 2(n-1)/n of the data, the bandwidth optimum (schedules/ring.cc).
// Tree (small messages, more than two ranks): a double binary tree, 2 log2(n) hops instead of
// the ring's 2(n-1) (schedules/tree.cc). Doubling (small messages, two ranks): recursive
// doubling, one exchange per round, log2(n) rounds (schedules/doubling.cc). One rank: a copy
// (and the average divides by 1). Small calls of recursive doubling run as blocking exchanges
// on the caller's thread, sending the plan's own messages (small_allreduce.cc). Any of them may be asked to send
// f32/f64 data compressed to 16
// bits (kernels/wire.h); that runs the ring, whose hops decode, add and encode.
#include <cstring>

#include "collectives/communicator.h"

namespace hoop {

Work Communicator::Allreduce(const Buffer& in, const Buffer& out, ReduceOp op, const CallOptions& o) {
  Op x;
  x.kind = CollKind::kAllreduce;
  x.in = in;
  x.out = out;
  x.op = op;
  x.algo = o.algo;
  x.compression = o.compression;
  x.residual = o.residual;
  x.stream = o.stream;
  return Submit(x, o.blocking);
}

Status Communicator::RunAllreduce(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  if (opts_.size == 1) {
    return Place(op.out.data, op.in.data, op.in.count * DTypeSize(op.in.dtype));
  }
  HOOP_ASSIGN_OR_RETURN(Compression wire, WireFor(op));
  if (wire != Compression::kNone) algo = Algo::kRing;  // the codec's hop-by-hop rounding assumes it
  if (SmallAllreduceFits(op, algo, wire)) return RunSmallAllreduce(op, seq, algo);
  return RunSchedule(op, algo, op.in.count, op.in, op.out, seq, wire);
}

}  // namespace hoop
