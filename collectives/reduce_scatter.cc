// Reduce-scatter: rank r ends with block r of the reduction of every rank's input. The ring's
// first half: partial sums travel n-1 steps. The partial sums need a full-size working buffer
// (the caller's output holds one block), kept by the communicator between calls.
#include <cstring>

#include "collectives/communicator.h"

namespace hoop {

Work Communicator::ReduceScatter(const Buffer& in, const Buffer& out, ReduceOp op, const CallOptions& o) {
  Op x;
  x.kind = CollKind::kReduceScatter;
  x.in = in;
  x.out = out;
  x.op = op;
  x.algo = o.algo;
  x.stream = o.stream;
  return Submit(x, o.blocking);
}

Status Communicator::RunReduceScatter(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  const size_t esize = DTypeSize(op.in.dtype);
  const size_t block_bytes = op.out.count * esize;
  const char* in_block = static_cast<const char*>(op.in.data) + static_cast<size_t>(opts_.rank) * block_bytes;
  if (opts_.size == 1) return Place(op.out.data, in_block, block_bytes);
  Buffer work = Scratch(op.in.count, op.in.dtype);
  HOOP_RETURN_IF_ERROR(RunSchedule(op, algo, op.out.count, op.in, work, seq));
  return Place(op.out.data, static_cast<const char*>(work.data) + static_cast<size_t>(opts_.rank) * block_bytes,
               block_bytes);
}

}  // namespace hoop
