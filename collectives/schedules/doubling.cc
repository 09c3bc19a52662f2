// Recursive-doubling allreduce: the latency-optimal schedule for small messages.
//
// With n = 2^m ranks there are m rounds. In round j rank r swaps its whole partial result with
// rank r ^ 2^j and reduces what it gets into its own: after round j every rank holds the
// reduction over its aligned group of 2^(j+1) ranks, so after m rounds over all of them. Each
// round is one hand-off in each direction at once, so two ranks need exactly one (the ring needs
// two in a row: reduce-scatter, then allgather). It moves the whole buffer every round, m times
// the ring's bytes, which is why it is for small messages.
//
// Every rank reduces for itself, so to end with the same bits everywhere both partners of a
// round put the lower group's data on the left (recv_left); by induction both hold identical
// partials in every round.
//
// Other rank counts: with p the largest power of two <= n and e = n - p, the first 2e ranks
// pair up; each even one (an "extra") sends its input to the odd one above it, which reduces
// (extra's data on the left) and stands for both in the p-rank rounds under the virtual rank
// r / 2; ranks from 2e on take virtual rank r - e. At the end each odd rank hands the result to
// its extra. Virtual order follows rank order, so "lower group" is "lower ranks" throughout.
//
// Per rank, as a sequence of primitives:
//   extra:   send(in -> r+1), recv(out <- r+1)
//   others:  [folded: recvReduce(r-1 op in)], then per round: send(partial), recvReduce
//            [folded: send(out -> r-1)]
// A round writes `out` after sending the partial it held (from `out`, or from `in`, which may be
// the same memory), and the partner's data does not depend on that send: so each reduction waits
// for its round's send to complete (after_sent).
#include "collectives/schedules/schedule.h"

namespace hoop {

namespace {
// Message numbers: one per round between round partners; the fold and the hand-back each travel
// once between an extra and its odd partner, a pair that never meets in a round.
constexpr uint16_t kFoldMsg = kDoublingFoldMsg;
constexpr uint16_t kResultMsg = kDoublingResultMsg;
}  // namespace

Schedule DoublingAllreduce(int rank, int n, size_t count) {
  Schedule s;
  s.algo = "doubling";
  s.chunk_major = true;  // chunk c runs through every round while chunk c+1 follows
  if (n == 1) return s;
  int p = 1, rounds = 0;
  while (p * 2 <= n) p *= 2, ++rounds;
  const int extra = n - p;
  auto real = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };  // virtual rank -> rank

  auto add = [&](Step st) {
    st.in_offset = st.out_offset = 0;
    st.count = count;
    s.steps.push_back(st);
  };
  if (rank < 2 * extra && rank % 2 == 0) {  // an extra: fold in, get the result back
    Step send;
    send.send_peers = {rank + 1};
    send.send_msg = kFoldMsg;
    send.send_from_in = true;
    add(send);
    Step result;
    result.recv = RecvKind::kCopy;
    result.recv_peer = rank + 1;
    result.recv_msg = kResultMsg;  // the answer to our send: written after it was read
    add(result);
    return s;
  }
  const bool folded = rank < 2 * extra;
  const int v = folded ? rank / 2 : rank - extra;
  if (folded) {
    Step fold;
    fold.recv = RecvKind::kReduce;
    fold.recv_peer = rank - 1;
    fold.recv_msg = kFoldMsg;
    fold.recv_left = true;
    add(fold);
  }
  for (int j = 0; j < rounds; ++j) {
    const int partner = real(v ^ (1 << j));
    const bool from_in = j == 0 && !folded;  // the first partial is the input itself
    Step send;
    send.send_peers = {partner};
    send.send_msg = static_cast<uint16_t>(j);
    send.send_from_in = from_in;
    send.after_previous = !from_in;  // the partial is the previous reduction's result
    add(send);
    Step reduce;
    reduce.recv = RecvKind::kReduce;
    reduce.recv_peer = partner;
    reduce.recv_msg = static_cast<uint16_t>(j);
    reduce.accumulate = !from_in;
    reduce.recv_left = partner < rank;
    reduce.after_sent = true;
    reduce.finalize = j == rounds - 1;
    add(reduce);
  }
  if (folded) {
    Step back;
    back.send_peers = {rank - 1};
    back.send_msg = kResultMsg;
    back.after_previous = true;
    add(back);
  }
  return s;
}

}  // namespace hoop
