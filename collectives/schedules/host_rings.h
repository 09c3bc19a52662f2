// What the hierarchical schedules share: a job's ranks grouped by host, and a ring's steps over
// any group of ranks. Hosts are numbered in order of their first rank and each host's ranks kept
// in rank order, so every rank computes the same grouping from the same host map.
#pragma once

#include <vector>

#include "collectives/schedules/schedule.h"

namespace hoop {

struct HostRings {
  std::vector<std::vector<int>> members;  // per host: its ranks
  int hosts = 0, local = 0;               // host count; ranks per host (when even)
  bool even = true;                       // every host holds `local` ranks
  int my_host = 0, lp = 0;                // this rank's host and its place there
  std::vector<int> host_ring;             // this rank's host's ranks
  std::vector<int> cross_ring;            // the ranks at place lp of every host, in host order
};
HostRings GroupByHost(int rank, const std::vector<int>& host_of);

// A ring's steps over `group` (job ranks in ring order, `me` this rank's position).
struct Ring {
  const std::vector<int>& group;
  int me;
  uint16_t msg0;
  int Size() const { return static_cast<int>(group.size()); }
  // A step on range r: receive (kind) message `recv_k` from the left, send message `send_k` (-1:
  // none) to the right.
  Step Make(Range r, RecvKind recv, int recv_k, int send_k) const {
    Step st;
    st.in_offset = st.out_offset = r.begin;
    st.count = r.size;
    if (recv != RecvKind::kNone) {
      st.recv = recv;
      st.recv_peer = group[static_cast<size_t>(Mod(me - 1, Size()))];
      st.recv_msg = static_cast<uint16_t>(msg0 + recv_k);
    }
    if (send_k >= 0) {
      st.send_peers = {group[static_cast<size_t>(Mod(me + 1, Size()))]};
      st.send_msg = static_cast<uint16_t>(msg0 + send_k);
    }
    return st;
  }
};

}  // namespace hoop
