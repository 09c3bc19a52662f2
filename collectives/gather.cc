// Gather: block r of the root's output is rank r's input; scatter is its mirror image. Small
// blocks go up (down) a binomial tree (schedules/binomial_gather.cc), larger ones straight
// between their rank and the root (schedules/flat.cc); the root places its own block with a copy.
//
// The trees work in buffers laid out relative to the root (block j: rank + j's); here they are
// filled and emptied: a rank's own block goes in at block 0 (gather) or comes out from there
// (scatter), in a working buffer on ranks other than the root, and the root's buffer is its own
// output (input) when it is rank 0, else a working copy rotated into rank order after (before).
#include <cstring>

#include "collectives/communicator.h"

namespace hoop {
namespace {
// Block j of `rel` (relative to `root`) is block root + j mod n of `abs`; `to_abs` says which way.
// `place` copies (Communicator::Place: on the host, or on a device run's queue).
template <class Place>
Status Rotate(char* abs, char* rel, size_t block_bytes, int root, int n, bool to_abs, Place place) {
  const size_t head = static_cast<size_t>(n - root) * block_bytes, tail = static_cast<size_t>(root) * block_bytes;
  char* a_head = abs + tail;  // blocks root..n-1 of abs are blocks 0..n-root-1 of rel
  if (to_abs) {
    HOOP_RETURN_IF_ERROR(place(a_head, rel, head));
    return place(abs, rel + head, tail);
  }
  HOOP_RETURN_IF_ERROR(place(rel, a_head, head));
  return place(rel + head, abs, tail);
}
}  // namespace

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
  const auto place = [this](void* dst, const void* src, size_t bytes) { return Place(dst, src, bytes); };
  if (is_root)
    HOOP_RETURN_IF_ERROR(Place(static_cast<char*>(op.out.data) + static_cast<size_t>(opts_.rank) * block_bytes,
                               op.in.data, block_bytes));
  if (opts_.size == 1) return Status::Ok();
  if (algo == Algo::kBinomial) {
    const int n = opts_.size, q = ((opts_.rank - op.root) % n + n) % n;
    if (is_root && op.root == 0) return RunSchedule(op, algo, op.in.count, op.in, op.out, seq);
    Buffer rel = Scratch(static_cast<size_t>(BinomialSpan(q, n)) * op.in.count, op.in.dtype);
    HOOP_RETURN_IF_ERROR(Place(rel.data, op.in.data, block_bytes));
    HOOP_RETURN_IF_ERROR(RunSchedule(op, algo, op.in.count, op.in, rel, seq));
    if (is_root && block_bytes > 0)
      return Rotate(static_cast<char*>(op.out.data), static_cast<char*>(rel.data), block_bytes, op.root, n, true,
                    place);
    return Status::Ok();
  }
  // Non-roots write nothing: their schedule only sends from in.
  return RunSchedule(op, algo, op.in.count, op.in, is_root ? op.out : op.in, seq);
}

Status Communicator::RunScatter(const Op& op, uint32_t seq) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  const bool is_root = op.root == opts_.rank;
  const size_t block_bytes = op.out.count * DTypeSize(op.out.dtype);
  const auto place = [this](void* dst, const void* src, size_t bytes) { return Place(dst, src, bytes); };
  if (is_root)
    HOOP_RETURN_IF_ERROR(Place(op.out.data,
                               static_cast<const char*>(op.in.data) + static_cast<size_t>(opts_.rank) * block_bytes,
                               block_bytes));
  if (opts_.size == 1) return Status::Ok();
  if (algo == Algo::kBinomial) {
    const int n = opts_.size, q = ((opts_.rank - op.root) % n + n) % n;
    if (is_root && op.root == 0) return RunSchedule(op, algo, op.out.count, op.in, op.out, seq);
    Buffer rel = Scratch(static_cast<size_t>(BinomialSpan(q, n)) * op.out.count, op.out.dtype);
    if (is_root && block_bytes > 0)
      HOOP_RETURN_IF_ERROR(
          Rotate(static_cast<char*>(op.in.data), static_cast<char*>(rel.data), block_bytes, op.root, n, false, place));
    // The root sends from its (rotated) input; the others receive into `rel` and send from it.
    HOOP_RETURN_IF_ERROR(RunSchedule(op, algo, op.out.count, rel, is_root ? op.out : rel, seq));
    if (!is_root) return Place(op.out.data, rel.data, block_bytes);
    return Status::Ok();
  }
  // Non-roots read nothing: their schedule only receives into out.
  return RunSchedule(op, algo, op.out.count, is_root ? op.in : op.out, op.out, seq);
}

}  // namespace hoop
