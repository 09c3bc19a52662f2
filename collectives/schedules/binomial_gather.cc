// Binomial gather and scatter (small blocks): a block travels up to ceil(log2 n) hops, but the
// root takes ceil(log2 n) messages instead of n - 1, and every rank's messages go out at once
// instead of queueing at the root's one link. MPICH and Open MPI pick these for short blocks.
//
// Positions are relative to the root (q = rank - root mod n), as in schedules/reduce.cc: q's
// subtree is positions [q, q + span) with span = BinomialSpan(q, n) (q's lowest set bit, the
// root's being the power of two at or above n, cut at n), and q's children are q + b for every
// power of two b below that bit (b < n - q). Each rank works in a buffer laid out in relative
// order: block j is position q + j's, so a subtree is always one contiguous range and travels as
// one message. The communicator (gather.cc) fills and empties that buffer: the rank's own block
// goes to block 0, and the root's result is rotated into rank order (block root + j mod n).
//
// Gather: q receives each child's subtree into its blocks [b, b + span(child)), smallest child
// first, and then sends all span blocks to its parent (q minus its lowest set bit). Scatter is
// the mirror image: q receives its span blocks from its parent, then sends each child its range,
// the largest first (it has the deepest subtree below it).
//
// The steps run in issue order (Schedule::serial): the send of a whole subtree waits for every
// receive into it, chunk by chunk and step by step, which after_previous cannot say when the
// messages differ in length. Both open with the roll call (schedule.h), so ranks that pass
// different roots fail naming them.
#include <algorithm>

#include "collectives/schedules/schedule.h"

namespace hoop {
namespace {
// q's lowest set bit, or the power of two at or above n for the root.
int LowestBit(int q, int n) {
  int lowest = 1;
  while (lowest < n && !(q & lowest)) lowest *= 2;
  return lowest;
}

// What both trees open with (the roll call), and q's place: its position and lowest set bit.
Schedule Open(int rank, int n, int root, int* q, int* lowest) {
  Schedule s;
  s.algo = "binomial";
  s.serial = true;
  *q = Mod(rank - root, n);
  *lowest = LowestBit(*q, n);
  if (n > 1) AppendRollCall(s, rank, n);
  return s;
}
}  // namespace

int BinomialSpan(int q, int n) { return std::min(LowestBit(q, n), n - q); }

Schedule BinomialGather(int rank, int n, int root, size_t count) {
  int q = 0, lowest = 0;
  Schedule s = Open(rank, n, root, &q, &lowest);
  if (n == 1) return s;
  for (int b = 1; b < lowest && q + b < n; b *= 2) {
    Step st;
    st.recv = RecvKind::kCopy;
    st.recv_peer = Mod(q + b + root, n);
    st.out_offset = static_cast<size_t>(b) * count;
    st.count = static_cast<size_t>(BinomialSpan(q + b, n)) * count;
    s.steps.push_back(st);
  }
  if (q != 0) {
    Step st;
    st.send_peers = {Mod(q - lowest + root, n)};
    st.count = static_cast<size_t>(BinomialSpan(q, n)) * count;
    s.steps.push_back(st);
  }
  return s;
}

Schedule BinomialScatter(int rank, int n, int root, size_t count) {
  int q = 0, lowest = 0;
  Schedule s = Open(rank, n, root, &q, &lowest);
  if (n == 1) return s;
  if (q != 0) {
    Step st;
    st.recv = RecvKind::kCopy;
    st.recv_peer = Mod(q - lowest + root, n);
    st.count = static_cast<size_t>(BinomialSpan(q, n)) * count;
    s.steps.push_back(st);
  }
  int top = 1;
  while (top * 2 < lowest && q + top * 2 < n) top *= 2;
  for (int b = top; b >= 1; b /= 2) {
    if (b >= lowest || q + b >= n) continue;
    Step st;
    st.send_peers = {Mod(q + b + root, n)};
    st.send_from_in = q == 0;  // the root sends from its input, the others from what they received
    st.in_offset = st.out_offset = static_cast<size_t>(b) * count;
    st.count = static_cast<size_t>(BinomialSpan(q + b, n)) * count;
    s.steps.push_back(st);
  }
  return s;
}

}  // namespace hoop
