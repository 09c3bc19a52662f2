// Reduce schedules: the mirror images of broadcast's (schedules/broadcast.cc), data flowing to
// the root and reduced on the way. Positions are relative to the root (q = rank - root mod n).
//
// Binomial tree (small messages): q's children are q + 2^k for every 2^k below q's lowest set
// bit (every 2^k < n for the root); q receives from them in that order, reducing each into its
// out (the first with in, the later ones with out), and sends the result to q minus its lowest
// set bit. ceil(log2 n) rounds. Units go chunk-major, so chunk c travels up while c+1 follows.
//
// Chain (large messages): n-1 -> n-2 -> ... -> 0, each rank reducing every chunk it receives
// with its own input and sending it on at once, so all links carry data together and the time
// approaches size / link rate whatever n (recvReduceSend, as NCCL's ring reduce).
//
// Both open with the roll call (schedule.h), so ranks that pass different roots fail naming
// them instead of waiting for messages nobody sends. The root's last reduction applies the
// average's division.
#include "collectives/schedules/schedule.h"

namespace hoop {

Schedule BinomialReduce(int rank, int n, int root, size_t count) {
  Schedule s;
  s.algo = "binomial";
  s.chunk_major = true;
  if (n == 1) return s;
  AppendRollCall(s, rank, n);
  const int q = Mod(rank - root, n);
  int lowest = 1;  // q's lowest set bit; above every child's distance
  while (lowest < n && !(q & lowest)) lowest *= 2;
  const int parent = q == 0 ? -1 : Mod(q - lowest + root, n);
  bool first = true;
  for (int b = 1; b < lowest && q + b < n; b *= 2) {
    Step st;
    st.recv = RecvKind::kReduce;
    st.recv_peer = Mod(q + b + root, n);
    st.accumulate = !first;
    st.after_previous = !first;
    st.count = count;
    s.steps.push_back(st);
    first = false;
  }
  if (first) {  // a leaf: its input goes up as it is
    Step st;
    st.send_from_in = true;
    st.send_peers = {parent};
    st.count = count;
    s.steps.push_back(st);
  } else if (parent >= 0) {
    s.steps.back().send_peers = {parent};
  } else {
    s.steps.back().finalize = true;
  }
  return s;
}

Schedule ChainReduce(int rank, int n, int root, size_t count) {
  Schedule s;
  s.algo = "chain";
  if (n == 1) return s;
  AppendRollCall(s, rank, n);
  const int q = Mod(rank - root, n);
  Step st;
  st.count = count;
  if (q == n - 1) {
    st.send_from_in = true;
  } else {
    st.recv = RecvKind::kReduce;
    st.recv_peer = Mod(rank + 1, n);
    st.finalize = q == 0;
  }
  if (q > 0) st.send_peers = {Mod(rank - 1, n)};
  s.steps.push_back(st);
  return s;
}

}  // namespace hoop
