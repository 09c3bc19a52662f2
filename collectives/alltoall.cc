// Alltoall: block p of every rank's input goes to rank p, into the block of its output that
// belongs to the sender. Pairwise exchange (schedules/pairwise.cc); the rank's own block is a
// copy. In place, the input is first copied to the communicator's working buffer: the exchange
// reads blocks of in after it has written the same blocks of out.
#include <cstring>

#include "collectives/communicator.h"

namespace hoop {

Work Communicator::Alltoall(const Buffer& in, const Buffer& out, const CallOptions& o) {
  return Post(CollKind::kAlltoall, in, out, ReduceOp::kSum, -1, o);
}

Status Communicator::RunAlltoall(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  const size_t esize = DTypeSize(op.in.dtype);
  const size_t block = op.in.count / static_cast<size_t>(opts_.size);
  const size_t bytes = op.in.count * esize;
  Buffer in = op.in;
  const char* a = static_cast<const char*>(op.in.data);
  const char* b = static_cast<const char*>(op.out.data);
  if (bytes > 0 && a < b + bytes && b < a + bytes) {  // overlapping: exchange from a copy
    in = Scratch(op.in.count, op.in.dtype);
    HOOP_RETURN_IF_ERROR(Place(in.data, op.in.data, bytes));
  }
  const size_t own = static_cast<size_t>(opts_.rank) * block * esize;
  HOOP_RETURN_IF_ERROR(
      Place(static_cast<char*>(op.out.data) + own, static_cast<const char*>(in.data) + own, block * esize));
  if (opts_.size == 1) return Status::Ok();
  return RunSchedule(op, algo, block, in, op.out, seq);
}

}  // namespace hoop
