// Shared rank math: even splits, block layouts, the rooted collectives' roll call, and the expansion of a
// schedule into chunked units.
#include <algorithm>

#include "collectives/schedules/host_rings.h"

namespace hoop {

Range SplitEven(size_t count, int n, int i) {
  size_t base = count / static_cast<size_t>(n);
  size_t extra = count % static_cast<size_t>(n);
  size_t ui = static_cast<size_t>(i);
  Range r;
  r.begin = ui * base + std::min(ui, extra);
  r.size = base + (ui < extra ? 1 : 0);
  return r;
}

Blocks EvenBlocks(int n, size_t count) {
  Blocks b;
  for (int r = 0; r < n; ++r) {
    b.counts.push_back(count);
    b.displs.push_back(static_cast<size_t>(r) * count);
  }
  return b;
}

Blocks PackedBlocks(const std::vector<size_t>& counts) {
  Blocks b;
  b.counts = counts;
  size_t at = 0;
  for (size_t c : counts) {
    b.displs.push_back(at);
    at += c;
  }
  return b;
}

HostRings GroupByHost(int rank, const std::vector<int>& host_of) {
  HostRings g;
  std::vector<int> ids;
  for (size_t r = 0; r < host_of.size(); ++r) {
    size_t h = 0;
    while (h < ids.size() && ids[h] != host_of[r]) ++h;
    if (h == ids.size()) {
      ids.push_back(host_of[r]);
      g.members.emplace_back();
    }
    g.members[h].push_back(static_cast<int>(r));
  }
  g.hosts = static_cast<int>(g.members.size());
  g.local = g.hosts > 0 ? static_cast<int>(g.members[0].size()) : 0;
  for (const auto& m : g.members) g.even &= static_cast<int>(m.size()) == g.local;
  for (int h = 0; h < g.hosts; ++h)
    for (size_t i = 0; i < g.members[static_cast<size_t>(h)].size(); ++i)
      if (g.members[static_cast<size_t>(h)][i] == rank) g.my_host = h, g.lp = static_cast<int>(i);
  if (g.hosts == 0) return g;
  g.host_ring = g.members[static_cast<size_t>(g.my_host)];
  if (g.even)
    for (int h = 0; h < g.hosts; ++h)
      g.cross_ring.push_back(g.members[static_cast<size_t>(h)][static_cast<size_t>(g.lp)]);
  return g;
}

namespace {
constexpr uint16_t kRollCallMsg = 0xffff;  // the data's messages are numbered from 0
}  // namespace

// Steps 0 and 1 of a rooted collective: send the empty roll-call message on, take the previous
// rank's. The data's steps come after them, so a first message to the next rank follows the
// roll call's on that stream, but depends on neither step.
void AppendRollCall(Schedule& s, int rank, int n) {
  Step send;
  send.send_peers = {Mod(rank + 1, n)};
  send.send_msg = kRollCallMsg;
  send.send_from_in = true;
  s.steps.push_back(send);
  Step recv;
  recv.recv = RecvKind::kCopy;
  recv.recv_peer = Mod(rank - 1, n);
  recv.recv_msg = kRollCallMsg;
  s.steps.push_back(recv);
}

std::vector<Unit> ExpandUnits(const Schedule& s, size_t chunk_elems) {
  if (chunk_elems == 0) chunk_elems = 1;
  std::vector<uint32_t> chunks(s.steps.size());
  uint32_t max_chunks = 0;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    size_t c = (s.steps[i].count + chunk_elems - 1) / chunk_elems;
    chunks[i] = static_cast<uint32_t>(std::max<size_t>(c, 1));  // an empty step still sends its (empty) message
    max_chunks = std::max(max_chunks, chunks[i]);
  }
  std::vector<Unit> units;
  // index_of[step][chunk] -> unit index, to resolve after_previous and after.
  std::vector<std::vector<int>> index_of(s.steps.size());
  auto add = [&](int step, uint32_t c) {
    const Step& st = s.steps[static_cast<size_t>(step)];
    Unit u;
    u.step = step;
    u.chunk = c;
    u.offset = std::min(st.count, static_cast<size_t>(c) * chunk_elems);
    u.count = std::min(st.count - u.offset, chunk_elems);
    if (step > 0 && c < chunks[static_cast<size_t>(step - 1)]) {
      const int prev = index_of[static_cast<size_t>(step - 1)][c];
      if (st.after_previous) u.dep = prev;
      if (st.after_sent && st.sent_step < 0) u.sent_dep = prev;
    }
    if (st.after_sent && st.sent_step >= 0 && st.sent_step < step && c < chunks[static_cast<size_t>(st.sent_step)])
      u.sent_dep = index_of[static_cast<size_t>(st.sent_step)][c];
    // after: every unit of those steps whose out range meets this chunk's (chunks are uniform;
    // step-major schedules, where all of an earlier step's units come before this one's).
    const size_t lo = st.out_offset + u.offset, hi = lo + u.count;
    for (int a : st.after) {
      if (a < 0 || a >= step) continue;
      const Step& sa = s.steps[static_cast<size_t>(a)];
      const size_t from = std::max(lo, sa.out_offset), to = std::min(hi, sa.out_offset + sa.count);
      if (from >= to) continue;
      const auto& idx = index_of[static_cast<size_t>(a)];
      for (size_t k = (from - sa.out_offset) / chunk_elems;
           k <= (to - 1 - sa.out_offset) / chunk_elems && k < idx.size(); ++k)
        u.waits.push_back(idx[k]);
    }
    // A fold waits for its operands' messages, this chunk's of each held step (the same count,
    // so the same chunks).
    for (int e : st.fold) {
      const bool held = e >= 0 && e < step && c < index_of[static_cast<size_t>(e)].size();
      u.fold.push_back(held ? index_of[static_cast<size_t>(e)][c] : -1);
      if (held) u.waits.push_back(u.fold.back());
    }
    if (s.serial && !units.empty()) u.dep = static_cast<int>(units.size()) - 1;
    index_of[static_cast<size_t>(step)].push_back(static_cast<int>(units.size()));
    units.push_back(u);
  };
  if (s.chunk_major) {
    for (uint32_t c = 0; c < max_chunks; ++c)
      for (size_t i = 0; i < s.steps.size(); ++i)
        if (c < chunks[i]) add(static_cast<int>(i), c);
  } else {
    for (size_t i = 0; i < s.steps.size(); ++i)
      for (uint32_t c = 0; c < chunks[i]; ++c) add(static_cast<int>(i), c);
  }
  return units;
}

}  // namespace hoop
