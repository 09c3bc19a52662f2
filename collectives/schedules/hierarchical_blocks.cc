// Hierarchical allgather and reduce-scatter: the block collectives over hosts (schedule.h).
//
// With H hosts of L ranks each, block (h, l) is the block of host h's local rank l. Row h is
// host h's L blocks. Each local rank l joins two rings: its host's, and the cross-host ring of
// the local ranks l of every host (which carries only the blocks (*, l): 1/L of the data each,
// so a host's link carries (H-1)/H of the buffer, not the flat ring's (N-1)/N).
//   Allgather, for k = 0 .. H-1, row h = my_host - k:
//     X_k: the cross ring's allgather step k: block (h, l) arrives from the left (k = 0: this
//          rank's own, sent from `in`) and goes on to the right;
//     Y_k: the host's ring allgathers row h, starting with block (h, l) (it waits for X_k:
//          after), so row h reaches every rank of the host while X_{k+1} brings the next.
//   Reduce-scatter, the mirror, for k = 0 .. H-1, row h = my_host - k - 1 (the last, k = H-1,
//   is this rank's own host):
//     Y_k: the host's ring reduce-scatters row h, leaving block (h, l) reduced over the host;
//     X_k: the cross ring's reduce-scatter step k on block (h, l): k = 0 sends it; later steps
//          add the left's partial to it (accumulate; after Y_k) and send it on; the last
//          finishes block (my_host, l), this rank's.
// Rows are issued one after another, so the host's ring works on row k while the cross ring
// carries row k+1, and only what a step starts on is waited for, chunk by chunk. Like the
// hierarchical allreduce, a window per link (window_scale 2). Uneven hosts: the flat ring.
#include "collectives/schedules/host_rings.h"

namespace hoop {
namespace {

constexpr uint16_t kSecondRing = 0x8000;  // the second ring's messages (the first's from 0)

bool Fits(const HostRings& g) {
  return g.even && static_cast<size_t>(g.hosts) * static_cast<size_t>(g.local) < kSecondRing;
}

// Block (h, l) of `count` elements: where host h's local rank l keeps its block (mod H and L).
Range Block(const HostRings& g, size_t count, int h, int l) {
  const int r = g.members[static_cast<size_t>(Mod(h, g.hosts))][static_cast<size_t>(Mod(l, g.local))];
  return Range{static_cast<size_t>(r) * count, count};
}

Schedule Start(const HostRings& g) {
  Schedule s;
  s.algo = "hierarchical";
  if (g.hosts > 1 && g.local > 1) s.window_scale = 2;
  return s;
}

}  // namespace

Schedule HierarchicalAllgather(int rank, const std::vector<int>& host_of, size_t count) {
  const int n = static_cast<int>(host_of.size());
  const HostRings g = GroupByHost(rank, host_of);
  if (!Fits(g)) return RingAllgather(rank, n, count);
  Schedule s = Start(g);
  if (n <= 1) return s;
  const int H = g.hosts, L = g.local;
  auto block = [&](int h, int l) { return Block(g, count, h, l); };
  const Ring cross{g.cross_ring, g.my_host, 0};
  for (int k = 0; k < H; ++k) {
    const int h = g.my_host - k;
    int arrived = -1;  // X_k's step, when row h's block came across
    if (H > 1) {
      Step st = cross.Make(block(h, g.lp), k > 0 ? RecvKind::kCopy : RecvKind::kNone, k - 1, k < H - 1 ? k : -1);
      if (k == 0) {
        st.send_from_in = true;
        st.in_offset = 0;
      } else {
        arrived = static_cast<int>(s.steps.size());
      }
      s.steps.push_back(st);
    }
    if (L > 1) {
      const Ring host{g.host_ring, g.lp, static_cast<uint16_t>(kSecondRing + k * L)};
      for (int j = 0; j < L; ++j) {
        Step st = host.Make(block(h, g.lp - j), j > 0 ? RecvKind::kCopy : RecvKind::kNone, j - 1, j < L - 1 ? j : -1);
        if (j == 0 && arrived >= 0) st.after = {arrived};  // k = 0: the caller's copy of its own block
        s.steps.push_back(st);
      }
    }
  }
  return s;
}

Schedule HierarchicalReduceScatter(int rank, const std::vector<int>& host_of, size_t count) {
  const int n = static_cast<int>(host_of.size());
  const HostRings g = GroupByHost(rank, host_of);
  if (!Fits(g)) return RingReduceScatter(rank, n, count);
  Schedule s = Start(g);
  if (n <= 1) return s;
  const int H = g.hosts, L = g.local;
  auto block = [&](int h, int l) { return Block(g, count, h, l); };
  const Ring cross{g.cross_ring, g.my_host, kSecondRing};
  for (int k = 0; k < H; ++k) {
    const int h = g.my_host - k - 1;
    int reduced = -1;  // Y_k's last step, which leaves block (h, l) reduced over the host
    if (L > 1) {
      const Ring host{g.host_ring, g.lp, static_cast<uint16_t>(k * L)};
      for (int j = 0; j < L; ++j) {
        Step st =
            host.Make(block(h, g.lp - j - 1), j > 0 ? RecvKind::kReduce : RecvKind::kNone, j - 1, j < L - 1 ? j : -1);
        st.send_from_in = j == 0;
        st.finalize = j == L - 1 && H == 1;
        reduced = static_cast<int>(s.steps.size());
        s.steps.push_back(st);
      }
    }
    if (H > 1) {
      Step st = cross.Make(block(h, g.lp), k > 0 ? RecvKind::kReduce : RecvKind::kNone, k - 1, k < H - 1 ? k : -1);
      if (L > 1) {
        st.after = {reduced};
        st.accumulate = k > 0;  // the host's partial is in `out`
      } else {
        st.send_from_in = k == 0;
      }
      st.finalize = k == H - 1;
      s.steps.push_back(st);
    }
  }
  return s;
}

}  // namespace hoop
