// Broadcast schedules. Positions are relative to the root (q = rank - root mod n).
//
// Chain (large messages): 0 -> 1 -> ... -> n-1, every rank forwarding each chunk as soon as it
// has it (recvCopySend), so after the pipeline fills every link carries data at once and the
// time approaches size / link rate, independent of n.
//
// Binomial tree (small messages): in round k every rank that has the data sends it 2^k places
// on, so all n ranks have it after ceil(log2 n) rounds. Position q receives from q minus its
// highest set bit and sends to q + 2^k for every 2^k above q's highest bit.
//
// Both start with a roll call (AppendRollCall, schedules/split.cc): every rank sends an empty message to the next
// rank and takes one from the previous. A rank's own view of the root decides whom it sends to
// and hears from, so without it ranks that pass different roots could each send as the root and
// receive nothing, all "succeed" with different data, and leave their messages to stall the next
// call. Every message carries the operation's description, root included (op_desc.h), so with
// the roll call every rank whose ring neighbour passed another root fails naming both roots, and
// poisons the others: when not every rank passed the same root, some neighbouring pair differs.
// It costs one empty message per rank, sent before any data and waited for by nobody's data.
#include "collectives/schedules/host_rings.h"

namespace hoop {

namespace {

// A chain's one step at position q of n, between ranks prev and next: the root (q = 0) sends
// from `in`, every other rank receives and the last sends nothing on.
Step ChainStep(int q, int n, int prev, int next, size_t count) {
  Step st;
  st.count = count;
  if (q == 0) {
    st.send_from_in = true;
  } else {
    st.recv = RecvKind::kCopy;
    st.recv_peer = prev;
  }
  if (q < n - 1) st.send_peers = {next};
  return st;
}

}  // namespace

Schedule ChainBroadcast(int rank, int n, int root, size_t count) {
  Schedule s;
  s.algo = "chain";
  if (n == 1) return s;
  AppendRollCall(s, rank, n);
  s.steps.push_back(ChainStep(Mod(rank - root, n), n, Mod(rank - 1, n), Mod(rank + 1, n), count));
  return s;
}

// Hierarchical (host-ordered) chain: the same chain, its ranks taken host by host - the root,
// then the rest of its host, then every other host's ranks in host order - so the data crosses
// from one host to the next exactly once (H-1 cross-host hops in all) however the ranks are
// placed. The chain in rank order crosses at every hop where ranks are interleaved over hosts
// (--map-by node), a host's link then carrying the buffer once per rank it holds.
Schedule HierarchicalBroadcast(int rank, const std::vector<int>& host_of, int root, size_t count) {
  const int n = static_cast<int>(host_of.size());
  Schedule s;
  s.algo = "hierarchical";
  if (n <= 1) return s;
  AppendRollCall(s, rank, n);
  const HostRings g = GroupByHost(root, host_of);  // the root's host and place
  std::vector<int> order;
  const auto& home = g.members[static_cast<size_t>(g.my_host)];
  for (size_t i = 0; i < home.size(); ++i) order.push_back(home[(static_cast<size_t>(g.lp) + i) % home.size()]);
  for (int k = 1; k < g.hosts; ++k)
    for (int r : g.members[static_cast<size_t>((g.my_host + k) % g.hosts)]) order.push_back(r);
  int q = 0;
  while (order[static_cast<size_t>(q)] != rank) ++q;
  s.steps.push_back(ChainStep(q, n, q > 0 ? order[static_cast<size_t>(q - 1)] : -1,
                              q < n - 1 ? order[static_cast<size_t>(q + 1)] : -1, count));
  return s;
}

Schedule BinomialBroadcast(int rank, int n, int root, size_t count) {
  Schedule s;
  s.algo = "binomial";
  if (n == 1) return s;
  AppendRollCall(s, rank, n);
  int q = Mod(rank - root, n);
  Step st;
  st.count = count;
  int high = 0;  // smallest power of two above q's highest set bit (1 for q = 0)
  if (q == 0) {
    st.send_from_in = true;
    high = 1;
  } else {
    int hb = 1;
    while (hb * 2 <= q) hb *= 2;
    st.recv = RecvKind::kCopy;
    st.recv_peer = Mod(q - hb + root, n);
    high = hb * 2;
  }
  for (int b = high; q + b < n; b *= 2) st.send_peers.push_back(Mod(q + b + root, n));
  s.steps.push_back(st);
  return s;
}

// Dissemination barrier: in round k every rank signals rank + 2^k and waits for rank - 2^k;
// after ceil(log2 n) rounds every rank has heard, directly or not, from every other. Messages
// are empty. Step k carries round k-1's wait and round k's signal, in that order.
Schedule DisseminationBarrier(int rank, int n) {
  Schedule s;
  s.algo = "dissemination";
  if (n == 1) return s;
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  for (int k = 0; k <= rounds; ++k) {
    Step st;
    st.after_previous = k > 0;
    if (k > 0) {
      st.recv = RecvKind::kCopy;
      st.recv_peer = Mod(rank - (1 << (k - 1)), n);
      st.recv_msg = static_cast<uint16_t>(k - 1);
    }
    if (k < rounds) {
      st.send_peers = {Mod(rank + (1 << k), n)};
      st.send_msg = static_cast<uint16_t>(k);
    }
    s.steps.push_back(st);
  }
  return s;
}

}  // namespace hoop
