// Gather: block r of the root's output is rank r's input; scatter is its mirror image. Both send
// every block straight between its rank and the root (schedules/flat.cc); the root places its
// own block with a copy.
#include <cstring>

#include "collectives/communicator.h"

namespace hoop {

Work Communicator::Gather(const Buffer& in, const Buffer& out, int root, const CallOptions& o) {
  return Post(CollKind::kGather, in, out, ReduceOp::kSum, root, o);
}

Work Communicator::Scatter(const Buffer& in, const Buffer& out, int root, const CallOptions& o) {
  return Post(CollKind::kScatter, in, out, ReduceOp::kSum, root, o);
}

Status Communicator::RunGather(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  const bool is_root = op.root == opts_.rank;
  const size_t block_bytes = op.in.count * DTypeSize(op.in.dtype);
  if (is_root && block_bytes > 0) {
    char* own = static_cast<char*>(op.out.data) + static_cast<size_t>(opts_.rank) * block_bytes;
    if (own != op.in.data) std::memmove(own, op.in.data, block_bytes);
  }
  if (opts_.size == 1) return Status::Ok();
  // Non-roots write nothing: their schedule only sends from in.
  return RunSchedule(op, algo, op.in.count, op.in, is_root ? op.out : op.in, seq);
}

Status Communicator::RunScatter(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  const bool is_root = op.root == opts_.rank;
  const size_t block_bytes = op.out.count * DTypeSize(op.out.dtype);
  if (is_root && block_bytes > 0) {
    const char* own = static_cast<const char*>(op.in.data) + static_cast<size_t>(opts_.rank) * block_bytes;
    if (own != op.out.data) std::memmove(op.out.data, own, block_bytes);
  }
  if (opts_.size == 1) return Status::Ok();
  // Non-roots read nothing: their schedule only receives into out.
  return RunSchedule(op, algo, op.out.count, is_root ? op.in : op.out, op.out, seq);
}

}  // namespace hoop
