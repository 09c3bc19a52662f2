// Allgather: block r of every rank's output is rank r's input. Ring: each rank forwards the
// block it received last step, n-1 steps, (n-1)/n of the output through every link.
#include <cstring>

#include "collectives/communicator.h"

namespace hoop {

Work Communicator::Allgather(const Buffer& in, const Buffer& out, const CallOptions& o) {
  Op x;
  x.kind = CollKind::kAllgather;
  x.in = in;
  x.out = out;
  x.algo = o.algo;
  x.stream = o.stream;
  return Submit(x, o.blocking);
}

Status Communicator::RunAllgather(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  size_t block_bytes = op.in.count * DTypeSize(op.in.dtype);
  char* own = static_cast<char*>(op.out.data) + static_cast<size_t>(opts_.rank) * block_bytes;
  HOOP_RETURN_IF_ERROR(Place(own, op.in.data, block_bytes));
  if (opts_.size == 1) return Status::Ok();
  return RunSchedule(op, algo, op.in.count, op.in, op.out, seq);
}

}  // namespace hoop
