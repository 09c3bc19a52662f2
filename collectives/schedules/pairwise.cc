// Pairwise-exchange alltoall: in round k (1..n-1) each rank sends its block for rank + k and
// receives rank - k's block for it, so every rank sends and receives exactly one block per round
// and no link carries two at once (the classic large-message alltoall of MPI libraries).
// Sends read only `in` and receives write only `out`, so a round's send waits for nothing:
// each round is a send step then a receive step, and the executor posts the sends as far ahead
// as its window of receives allows. The caller places the rank's own block (and gives distinct
// in and out: in place, a later round's send would read a block an earlier receive overwrote).
// alltoallv is the same exchange with each pair's own counts and displacements: a rank's send to
// p and p's receive from it have the same length when the callers' counts agree.
#include "collectives/schedules/schedule.h"

namespace hoop {

Schedule PairwiseAlltoallv(int rank, int n, const Blocks& send, const Blocks& recv) {
  Schedule s;
  s.algo = "pairwise";
  for (int k = 1; k < n; ++k) {
    const size_t to = static_cast<size_t>(Mod(rank + k, n)), from = static_cast<size_t>(Mod(rank - k, n));
    Step out;
    out.send_from_in = true;
    out.send_peers = {static_cast<int>(to)};
    out.in_offset = send.displs[to];
    out.count = send.counts[to];
    s.steps.push_back(out);
    Step in;
    in.recv = RecvKind::kCopy;
    in.recv_peer = static_cast<int>(from);
    in.out_offset = recv.displs[from];
    in.count = recv.counts[from];
    s.steps.push_back(in);
  }
  return s;
}

Schedule PairwiseAlltoall(int rank, int n, size_t count) {
  const Blocks even = EvenBlocks(n, count);
  return PairwiseAlltoallv(rank, n, even, even);
}

}  // namespace hoop
