// The v-collectives: allgatherv, reduce_scatterv and alltoallv, MPI's meanings, with one count
// and displacement per rank. They run the ring and the pairwise exchange of their even cousins,
// one whole block per step (schedules/ring.cc, schedules/pairwise.cc), with plans built for each
// call since they depend on the counts. Every rank must pass the same layouts for the blocks it
// shares with others; where they disagree, the first message of a different length stops the
// call on both ends with an error naming both lengths.
#include <algorithm>
#include <cstring>

#include "collectives/core/coll_table.h"
#include "common/extent.h"

namespace hoop {
namespace {

// Where a layout does not fit `buffer_count` elements, has the wrong number of entries, or has
// two blocks overlapping (which `overlap_ok` allows: blocks that are only read).
std::string CheckLayout(const Blocks& b, size_t n, size_t buffer_count, const char* what, bool overlap_ok) {
  if (b.counts.size() != n || b.displs.size() != n)
    return std::string(what) + " has " + std::to_string(b.counts.size()) + " counts and " +
           std::to_string(b.displs.size()) + " displacements for " + std::to_string(n) + " ranks";
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of the non-empty blocks
  for (size_t r = 0; r < n; ++r) {
    const size_t c = b.counts[r], d = b.displs[r];
    if (c == 0) continue;
    if (d > buffer_count || c > buffer_count - d)
      return std::string(what) + " block " + std::to_string(r) + " (" + std::to_string(c) + " elements at " +
             std::to_string(d) + ") runs past the buffer's " + std::to_string(buffer_count) + " elements";
    spans.push_back({d, d + c});
  }
  if (overlap_ok) return "";
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second)
      return std::string(what) + " blocks overlap at element " + std::to_string(spans[i].first);
  return "";
}

size_t Extent(const Blocks& b) {
  size_t end = 0;
  for (size_t r = 0; r < b.counts.size(); ++r)
    if (b.counts[r]) end = std::max(end, b.displs[r] + b.counts[r]);
  return end;
}

}  // namespace

std::string CheckAllgatherv(const CollCall& c, int rank, int size) {
  if (!c.v) return "no counts given";
  const Blocks& recv = c.v->recv;
  if (std::string why = CheckLayout(recv, static_cast<size_t>(size), c.out.count, "output", false); !why.empty())
    return why;
  const size_t me = static_cast<size_t>(rank);
  if (c.in.count != recv.counts[me])
    return "input count " + std::to_string(c.in.count) + " differs from this rank's count " +
           std::to_string(recv.counts[me]);
  return "";
}

std::string CheckReduceScatterv(const CollCall& c, int rank, int size) {
  if (!c.v) return "no counts given";
  const Blocks& recv = c.v->recv;
  const size_t n = static_cast<size_t>(size), me = static_cast<size_t>(rank);
  if (recv.counts.size() != n)
    return std::to_string(recv.counts.size()) + " counts for " + std::to_string(n) + " ranks";
  size_t total = 0;
  for (size_t x : recv.counts) {
    if (x > SIZE_MAX - total) return "the counts add up to 2^64 elements or more";
    total += x;
  }
  if (c.in.count != total)
    return "input count " + std::to_string(c.in.count) + " differs from the counts' sum " + std::to_string(total);
  if (c.out.count != recv.counts[me])
    return "output count " + std::to_string(c.out.count) + " differs from this rank's count " +
           std::to_string(recv.counts[me]);
  return "";
}

std::string CheckAlltoallv(const CollCall& c, int rank, int size) {
  if (!c.v) return "no counts given";
  const size_t n = static_cast<size_t>(size), me = static_cast<size_t>(rank);
  const Blocks &send = c.v->send, &recv = c.v->recv;
  if (std::string why = CheckLayout(send, n, c.in.count, "input", true); !why.empty()) return why;
  if (std::string why = CheckLayout(recv, n, c.out.count, "output", false); !why.empty()) return why;
  if (send.counts[me] != recv.counts[me])
    return "sends itself " + std::to_string(send.counts[me]) + " elements but receives " +
           std::to_string(recv.counts[me]) + " from itself";
  return "";
}

Status RunAllgatherv(CallContext& ctx, const CollCall& op) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const size_t es = DTypeSize(op.out.dtype), me = static_cast<size_t>(ctx.rank());
  const Blocks& b = op.v->recv;
  char* own = static_cast<char*>(op.out.data) + b.displs[me] * es;
  HOOP_RETURN_IF_ERROR(ctx.Place(own, op.in.data, b.counts[me] * es));
  if (ctx.size() == 1) return Status::Ok();
  return ctx.RunSchedule(algo, DescCount(op), op.in, op.out);
}

Status RunReduceScatterv(CallContext& ctx, const CollCall& op) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const size_t es = DTypeSize(op.in.dtype), me = static_cast<size_t>(ctx.rank());
  const Blocks& b = op.v->recv;
  const size_t mine = b.counts[me] * es;
  if (ctx.size() == 1) return ctx.Place(op.out.data, op.in.data, mine);
  Buffer work = ctx.Scratch(op.in.count, op.in.dtype);
  HOOP_RETURN_IF_ERROR(ctx.RunSchedule(algo, op.in.count, op.in, work));
  return ctx.Place(op.out.data, static_cast<const char*>(work.data) + b.displs[me] * es, mine);
}

Status RunAlltoallv(CallContext& ctx, const CollCall& op) {
  HOOP_ASSIGN_OR_RETURN(Algo algo, ctx.Resolve());
  const size_t es = DTypeSize(op.in.dtype), me = static_cast<size_t>(ctx.rank());
  const Blocks &send = op.v->send, &recv = op.v->recv;
  Buffer in = op.in;
  const size_t in_bytes = Extent(send) * es, out_bytes = Extent(recv) * es;
  const char* a = static_cast<const char*>(op.in.data);
  const char* o = static_cast<const char*>(op.out.data);
  if (in_bytes > 0 && out_bytes > 0 && a < o + out_bytes && o < a + in_bytes) {  // overlapping: from a copy
    in = ctx.Scratch(op.in.count, op.in.dtype);
    HOOP_RETURN_IF_ERROR(ctx.Place(in.data, op.in.data, in_bytes));
  }
  HOOP_RETURN_IF_ERROR(ctx.Place(static_cast<char*>(op.out.data) + recv.displs[me] * es,
                                 static_cast<const char*>(in.data) + send.displs[me] * es, recv.counts[me] * es));
  if (ctx.size() == 1) return Status::Ok();
  return ctx.RunSchedule(algo, 0, in, op.out);
}

}  // namespace hoop
