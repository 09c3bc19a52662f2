// Pairwise-exchange alltoall: in round k (1..n-1) each rank sends its block for rank + k and
// receives rank - k's block for it, so every rank sends and receives exactly one block per round
// and no link carries two at once (the classic large-message alltoall of MPI libraries).
// Sends read only `in` and receives write only `out`, so a round's send waits for nothing:
// each round is a send step then a receive step, and the executor posts the sends as far ahead
// as its window of receives allows. The caller places the rank's own block (and gives distinct
// in and out: in place, a later round's send would read a block an earlier receive overwrote).
#include "collectives/schedule.h"

namespace hoop {

Schedule PairwiseAlltoall(int rank, int n, size_t count) {
  Schedule s;
  s.algo = "pairwise";
  for (int k = 1; k < n; ++k) {
    const int to = Mod(rank + k, n), from = Mod(rank - k, n);
    Step send;
    send.send_from_in = true;
    send.send_peers = {to};
    send.in_offset = static_cast<size_t>(to) * count;
    send.count = count;
    s.steps.push_back(send);
    Step recv;
    recv.recv = RecvKind::kCopy;
    recv.recv_peer = from;
    recv.out_offset = static_cast<size_t>(from) * count;
    recv.count = count;
    s.steps.push_back(recv);
  }
  return s;
}

}  // namespace hoop
