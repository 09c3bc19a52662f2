// Hierarchical allreduce: rings inside each host, rings across hosts on a share each (schedule.h).
//
// With H hosts of L ranks each (local rank l of host h), the data is cut into L segments S_l:
//   1. reduce-scatter inside the host: the ring of the host's ranks leaves local rank l with S_l
//      reduced over its host (RingReduceScatterv's steps, messages 0..);
//   2. allreduce across hosts: the local ranks l of all hosts run a ring allreduce on S_l, cut
//      into H parts (RingAllreduce's steps on that range, reading and writing `out`), so each of
//      the L cross-host rings moves 1/L of the data and every host's link carries 2(H-1)/H of it
//      once, not 2(N-1)/N as the flat ring of all N ranks does (messages from kCrossMsg);
//   3. allgather inside the host: local rank l passes its finished S_l around the host's ring
//      (messages from kGatherMsg).
// Phases 2 and 3 are serial: their first step reads what the phase before it wrote, and a
// cross-host message can arrive before this rank has finished its own part of phase 1, so each
// of their units waits for the one issued before it. Phase 1 needs no such wait (its messages
// come in order on one stream). The average's division happens once, in the last reduction of
// each element: phase 2's (phase 1's with one host).
#include "collectives/schedule.h"

namespace hoop {
namespace {

constexpr uint16_t kCrossMsg = 0x4000;
constexpr uint16_t kGatherMsg = 0x8000;

// A ring's steps over `group` (job ranks in ring order, `me` this rank's position) on segment
// `seg(i)` for position i; appends to s.
struct RingPhase {
  Schedule& s;
  const std::vector<int>& group;
  int me;
  uint16_t msg0;
  bool serial;
  int Size() const { return static_cast<int>(group.size()); }
  int Left() const { return group[static_cast<size_t>(Mod(me - 1, Size()))]; }
  int Right() const { return group[static_cast<size_t>(Mod(me + 1, Size()))]; }
  // One step on range r: receive (kind) message `recv_k` from the left, send message `send_k`
  // (-1: none) to the right.
  Step& Add(Range r, RecvKind recv, int recv_k, int send_k) {
    Step st;
    st.in_offset = st.out_offset = r.begin;
    st.count = r.size;
    st.serial = serial;
    if (recv != RecvKind::kNone) {
      st.recv = recv;
      st.recv_peer = Left();
      st.recv_msg = static_cast<uint16_t>(msg0 + recv_k);
    }
    if (send_k >= 0) {
      st.send_peers = {Right()};
      st.send_msg = static_cast<uint16_t>(msg0 + send_k);
    }
    s.steps.push_back(st);
    return s.steps.back();
  }
};

}  // namespace

Schedule HierarchicalAllreduce(int rank, const std::vector<int>& host_of, size_t count) {
  const int n = static_cast<int>(host_of.size());
  // The hosts in order of their first rank, and each host's ranks in rank order.
  std::vector<int> ids;
  std::vector<std::vector<int>> members;
  for (int r = 0; r < n; ++r) {
    size_t h = 0;
    while (h < ids.size() && ids[h] != host_of[static_cast<size_t>(r)]) ++h;
    if (h == ids.size()) {
      ids.push_back(host_of[static_cast<size_t>(r)]);
      members.emplace_back();
    }
    members[h].push_back(r);
  }
  const int hosts = static_cast<int>(members.size());
  const int local = hosts > 0 ? static_cast<int>(members[0].size()) : 0;
  for (const auto& m : members)
    if (static_cast<int>(m.size()) != local) return RingAllreduce(rank, n, count);  // uneven hosts: the flat ring
  Schedule s;
  s.algo = "hierarchical";
  if (n <= 1) return s;
  int my_host = 0, lp = 0;
  for (int h = 0; h < hosts; ++h)
    for (int i = 0; i < local; ++i)
      if (members[static_cast<size_t>(h)][static_cast<size_t>(i)] == rank) my_host = h, lp = i;
  const std::vector<int>& host_ring = members[static_cast<size_t>(my_host)];
  std::vector<int> cross_ring;
  for (int h = 0; h < hosts; ++h) cross_ring.push_back(members[static_cast<size_t>(h)][static_cast<size_t>(lp)]);
  auto seg = [&](int i) { return SplitEven(count, local, Mod(i, local)); };

  // 1. Reduce-scatter inside the host: step k reduces segment lp-k-1 and sends it on; the last
  //    receives segment lp, whole.
  if (local > 1) {
    RingPhase p{s, host_ring, lp, 0, false};
    for (int k = 0; k <= local - 1; ++k) {
      Step& st = p.Add(seg(lp - k - 1), k > 0 ? RecvKind::kReduce : RecvKind::kNone, k - 1, k < local - 1 ? k : -1);
      if (k == 0) st.send_from_in = true;
      if (k == local - 1) st.finalize = hosts == 1;
    }
  }
  // 2. Allreduce of segment lp across the hosts: RingAllreduce's steps on its parts. With one
  //    rank per host this is the flat ring on `in`; else it reads and writes `out`.
  if (hosts > 1) {
    const Range mine = seg(lp);
    const bool from_in = local == 1;
    auto part = [&](int i) {
      Range r = SplitEven(mine.size, hosts, Mod(i, hosts));
      r.begin += mine.begin;
      return r;
    };
    RingPhase p{s, cross_ring, my_host, kCrossMsg, local > 1};
    int k = 0;  // messages sent so far
    auto add = [&](Range r, RecvKind recv, bool send) -> Step& {
      Step& st = p.Add(r, recv, k - 1, send ? k : -1);
      if (send) ++k;
      st.accumulate = recv == RecvKind::kReduce && !from_in;
      return st;
    };
    add(part(my_host), RecvKind::kNone, true).send_from_in = from_in;
    for (int j = 1; j <= hosts - 2; ++j) add(part(my_host - j), RecvKind::kReduce, true);
    add(part(my_host + 1), RecvKind::kReduce, true).finalize = true;
    for (int j = 1; j <= hosts - 2; ++j) add(part(my_host + 1 - j), RecvKind::kCopy, true);
    add(part(my_host + 2), RecvKind::kCopy, false);
  }
  // 3. Allgather inside the host: segment lp goes round from `out`, every other one comes in.
  if (local > 1) {
    RingPhase p{s, host_ring, lp, kGatherMsg, true};
    for (int k = 0; k <= local - 1; ++k)
      p.Add(seg(lp - k), k > 0 ? RecvKind::kCopy : RecvKind::kNone, k - 1, k < local - 1 ? k : -1);
  }
  return s;
}

}  // namespace hoop
