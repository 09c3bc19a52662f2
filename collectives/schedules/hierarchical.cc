// Hierarchical allreduce: rings inside each host, rings across hosts on a share each (schedule.h).
//
// With H hosts of L ranks each (local rank l of host h), each part of the buffer is cut into L
// segments S_l and goes through three phases:
//   A. reduce-scatter inside the host: the ring of the host's ranks leaves local rank l with S_l
//      reduced over its host (RingReduceScatterv's steps);
//   B. allreduce across hosts: the local ranks l of all hosts run a ring allreduce on S_l, cut
//      into H pieces (RingAllreduce's steps on that range, reading and writing `out`), so each of
//      the L cross-host rings moves 1/L of the data and a host's link carries 2(H-1)/H of it each
//      way, not the flat ring's 2(N-1)/N over all N ranks;
//   C. allgather inside the host: local rank l passes its finished S_l around the host's ring.
// Parts are pipelined: the steps are issued A0, A1 B0, A2 B1 C0, A3 B2 C1, ... so that while
// part p crosses the hosts' links (B), part p+1 is reduced inside the hosts (A) and part p-1
// gathered (C): every byte stream carries its messages in issue order, and this order puts no
// part's local phase behind an earlier part's slow cross-host one for longer than one part.
// Within a part, each of B's steps starts on A's last step's result (after), chunk by chunk: a
// cross-host message can arrive before this rank's own part of A is done, and no message orders
// those; C's first step sends what B left, so it waits for B's units that wrote its range. The
// rest orders itself as in a flat ring: a message is the answer to what its sender got before.
// Nothing waits for a whole step, so chunks stream through a phase as through the flat ring.
// The average divides once, in B (in A when there is one host).
#include <algorithm>

#include "collectives/schedules/host_rings.h"

namespace hoop {
namespace {

constexpr uint16_t kCrossMsg = 0x4000;  // B's messages; A's from 0, C's from kGatherMsg
constexpr uint16_t kGatherMsg = 0x8000;
constexpr int kMaxParts = 16;
constexpr uint16_t kMsgsPerPart = 0x4000 / kMaxParts;

// One phase of one part: its steps, and which of the part's previous phase's steps they start on.
struct Phase {
  std::vector<Step> steps;
  enum Waits { kNone, kAllOnLast, kFirstOnAll } waits = kNone;
};

// The three phases of part q (elements `whole`).
std::vector<Phase> PartPhases(const std::vector<int>& host_ring, int lp, const std::vector<int>& cross_ring,
                              int my_host, Range whole, int q) {
  const int local = static_cast<int>(host_ring.size()), hosts = static_cast<int>(cross_ring.size());
  auto seg = [&](int i) {
    Range r = SplitEven(whole.size, local, Mod(i, local));
    r.begin += whole.begin;
    return r;
  };
  std::vector<Phase> out(3);
  const uint16_t qoff = static_cast<uint16_t>(q * kMsgsPerPart);
  // A. Reduce-scatter inside the host: step k reduces segment lp-k-1 and sends it on; the last
  //    receives segment lp, whole.
  if (local > 1) {
    Ring ring{host_ring, lp, qoff};
    for (int k = 0; k <= local - 1; ++k) {
      Step st = ring.Make(seg(lp - k - 1), k > 0 ? RecvKind::kReduce : RecvKind::kNone, k - 1, k < local - 1 ? k : -1);
      st.send_from_in = k == 0;
      st.finalize = k == local - 1 && hosts == 1;
      out[0].steps.push_back(st);
    }
  }
  // B. Allreduce of segment lp across the hosts: RingAllreduce's steps on its pieces. With one
  //    rank per host this is the flat ring on `in`; else it reads and writes `out`.
  if (hosts > 1) {
    const Range mine = seg(lp);
    const bool from_in = local == 1;
    auto piece = [&](int i) {
      Range r = SplitEven(mine.size, hosts, Mod(i, hosts));
      r.begin += mine.begin;
      return r;
    };
    Ring ring{cross_ring, my_host, static_cast<uint16_t>(kCrossMsg + qoff)};
    int k = 0;  // messages sent so far
    auto add = [&](Range r, RecvKind recv, bool send) -> Step& {
      Step st = ring.Make(r, recv, k - 1, send ? k : -1);
      if (send) ++k;
      st.accumulate = recv == RecvKind::kReduce && !from_in;
      out[1].steps.push_back(st);
      return out[1].steps.back();
    };
    add(piece(my_host), RecvKind::kNone, true).send_from_in = from_in;
    for (int j = 1; j <= hosts - 2; ++j) add(piece(my_host - j), RecvKind::kReduce, true);
    add(piece(my_host + 1), RecvKind::kReduce, true).finalize = true;
    for (int j = 1; j <= hosts - 2; ++j) add(piece(my_host + 1 - j), RecvKind::kCopy, true);
    add(piece(my_host + 2), RecvKind::kCopy, false);
    if (local > 1) out[1].waits = Phase::kAllOnLast;
  }
  // C. Allgather inside the host: segment lp goes round from `out`, every other one comes in.
  if (local > 1) {
    Ring ring{host_ring, lp, static_cast<uint16_t>(kGatherMsg + qoff)};
    for (int k = 0; k <= local - 1; ++k)
      out[2].steps.push_back(
          ring.Make(seg(lp - k), k > 0 ? RecvKind::kCopy : RecvKind::kNone, k - 1, k < local - 1 ? k : -1));
    out[2].waits = Phase::kFirstOnAll;
  }
  return out;
}

}  // namespace

Schedule HierarchicalAllreduce(int rank, const std::vector<int>& host_of, size_t count, size_t part_elems) {
  const int n = static_cast<int>(host_of.size());
  const HostRings g = GroupByHost(rank, host_of);
  const int hosts = g.hosts, local = g.local;
  // Uneven hosts, or rings too long for the message numbers: the flat ring.
  if (!g.even || local >= kMsgsPerPart || 2 * hosts >= kMsgsPerPart) return RingAllreduce(rank, n, count);
  Schedule s;
  s.algo = "hierarchical";
  // Two links busy at once, the host's and the one across hosts: a window for each.
  if (hosts > 1 && local > 1) s.window_scale = 2;
  if (n <= 1) return s;
  const int parts =
      static_cast<int>(std::min<size_t>(kMaxParts, std::max<size_t>(1, count / std::max<size_t>(1, part_elems))));
  std::vector<std::vector<Phase>> phases;
  for (int q = 0; q < parts; ++q)
    phases.push_back(PartPhases(g.host_ring, g.lp, g.cross_ring, g.my_host, SplitEven(count, parts, q), q));
  // Issue order A0, A1 B0, A2 B1 C0, ...; where each phase's steps landed, for `after`: each of
  // B's steps on A's last, C's first on every step of the phase before it (B, or A on one host).
  std::vector<std::vector<int>> prev_phase(static_cast<size_t>(parts));
  for (int t = 0; t < parts + 2; ++t)
    for (int phase = 0; phase < 3; ++phase) {
      const int q = t - phase;
      if (q < 0 || q >= parts) continue;
      Phase& ph = phases[static_cast<size_t>(q)][static_cast<size_t>(phase)];
      if (ph.steps.empty()) continue;
      std::vector<int>& before = prev_phase[static_cast<size_t>(q)];
      std::vector<int> mine;
      for (size_t i = 0; i < ph.steps.size(); ++i) {
        Step& st = ph.steps[i];
        if (ph.waits == Phase::kAllOnLast && !before.empty()) st.after = {before.back()};
        if (ph.waits == Phase::kFirstOnAll && i == 0) st.after = before;
        mine.push_back(static_cast<int>(s.steps.size()));
        s.steps.push_back(st);
      }
      before = std::move(mine);
    }
  return s;
}

}  // namespace hoop
