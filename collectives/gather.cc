// Gather: block r of the root's output is rank r's input; scatter is its mirror image. Small
// blocks go up (down) a binomial tree (schedules/binomial_gather.cc), larger ones straight
// between their rank and the root (schedules/flat.cc); the root places its own block with a copy.
//
// The trees work in buffers laid out relative to the root (block j: rank + j's); here they are
// filled and emptied: a rank's own block goes in at block 0 (gather) or comes out from there
// (scatter), in a working buffer on ranks other than the root, and the root's buffer is its own
// output (input) when it is rank 0, else a working copy rotated into rank order after (before).
#include "collectives/core/coll_table.h"

namespace hoop {
namespace {
// Block j of `rel` (relative to `root`) is block root + j mod n of `abs`; `to_abs` says which way.
// `ctx.Place` copies (on the host, or on a device run's queue).
Status Rotate(CallContext& ctx, char* abs, char* rel, size_t block_bytes, int root, int n, bool to_abs) {
  const size_t head = static_cast<size_t>(n - root) * block_bytes, tail = static_cast<size_t>(root) * block_bytes;
  char* a_head = abs + tail;  // blocks root..n-1 of abs are blocks 0..n-root-1 of rel
  if (to_abs) {
    HOOP_RETURN_IF_ERROR(ctx.Place(a_head, rel, head));
    return ctx.Place(abs, rel + head, tail);
  }
  HOOP_RETURN_IF_ERROR(ctx.Place(rel, a_head, head));
  return ctx.Place(rel + head, abs, tail);
}
}  // namespace

Status RunGather(CallContext& ctx, const CollCall& op) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const bool is_root = op.root == ctx.rank();
  const size_t block_bytes = op.in.count * DTypeSize(op.in.dtype);
  if (is_root)
    HOOP_RETURN_IF_ERROR(ctx.Place(static_cast<char*>(op.out.data) + static_cast<size_t>(ctx.rank()) * block_bytes,
                                   op.in.data, block_bytes));
  if (ctx.size() == 1) return Status::Ok();
  if (algo == Algo::kBinomial) {
    const int n = ctx.size(), q = ((ctx.rank() - op.root) % n + n) % n;
    if (is_root && op.root == 0) return ctx.RunSchedule(algo, op.in.count, op.in, op.out);
    Buffer rel = ctx.Scratch(static_cast<size_t>(BinomialSpan(q, n)) * op.in.count, op.in.dtype);
    HOOP_RETURN_IF_ERROR(ctx.Place(rel.data, op.in.data, block_bytes));
    HOOP_RETURN_IF_ERROR(ctx.RunSchedule(algo, op.in.count, op.in, rel));
    if (is_root && block_bytes > 0)
      return Rotate(ctx, static_cast<char*>(op.out.data), static_cast<char*>(rel.data), block_bytes, op.root, n, true);
    return Status::Ok();
  }
  // Non-roots write nothing: their schedule only sends from in.
  return ctx.RunSchedule(algo, op.in.count, op.in, is_root ? op.out : op.in);
}

Status RunScatter(CallContext& ctx, const CollCall& op) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const bool is_root = op.root == ctx.rank();
  const size_t block_bytes = op.out.count * DTypeSize(op.out.dtype);
  if (is_root)
    HOOP_RETURN_IF_ERROR(ctx.Place(op.out.data,
                                   static_cast<const char*>(op.in.data) + static_cast<size_t>(ctx.rank()) * block_bytes,
                                   block_bytes));
  if (ctx.size() == 1) return Status::Ok();
  if (algo == Algo::kBinomial) {
    const int n = ctx.size(), q = ((ctx.rank() - op.root) % n + n) % n;
    if (is_root && op.root == 0) return ctx.RunSchedule(algo, op.out.count, op.in, op.out);
    Buffer rel = ctx.Scratch(static_cast<size_t>(BinomialSpan(q, n)) * op.out.count, op.out.dtype);
    if (is_root && block_bytes > 0)
      HOOP_RETURN_IF_ERROR(
          Rotate(ctx, static_cast<char*>(op.in.data), static_cast<char*>(rel.data), block_bytes, op.root, n, false));
    // The root sends from its (rotated) input; the others receive into `rel` and send from it.
    HOOP_RETURN_IF_ERROR(ctx.RunSchedule(algo, op.out.count, rel, is_root ? op.out : rel));
    if (!is_root) return ctx.Place(op.out.data, rel.data, block_bytes);
    return Status::Ok();
  }
  // Non-roots read nothing: their schedule only receives into out.
  return ctx.RunSchedule(algo, op.out.count, is_root ? op.in : op.out, op.out);
}

std::string CheckGather(const CollCall& c, int rank, int size) {
  if (std::string why = BlocksWrap(c.in.count, size); !why.empty()) return why;
  const size_t want = c.in.count * static_cast<size_t>(size);  // BlocksWrap said it does not wrap
  if (c.root == rank && c.out.count != want)
    return "root's output count " + std::to_string(c.out.count) +
           " must be size x input count = " + std::to_string(want);
  return "";
}

std::string CheckScatter(const CollCall& c, int rank, int size) {
  if (std::string why = BlocksWrap(c.out.count, size); !why.empty()) return why;
  const size_t want = c.out.count * static_cast<size_t>(size);  // BlocksWrap said it does not wrap
  if (c.root == rank && c.in.count != want)
    return "root's input count " + std::to_string(c.in.count) +
           " must be size x output count = " + std::to_string(want);
  return "";
}

}  // namespace hoop
