// See stage_map.h. Both passes keep the bytes seen so far as disjoint intervals in a map keyed
// by their start, so a plan of n units is mapped in O(n log n).
#include "collectives/device/stage_map.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace hoop {

ByteRange UnitReadsIn(const Plan& plan, size_t u, size_t esize) {
  const Unit& un = plan.units[u];
  const Step& st = plan.schedule.steps[static_cast<size_t>(un.step)];
  const bool reads = (st.recv == RecvKind::kReduce && !st.accumulate) || (!st.send_peers.empty() && st.send_from_in);
  if (!reads || un.count == 0) return {};
  const size_t lo = (st.in_offset + un.offset) * esize;
  return {lo, lo + un.count * esize};
}

ByteRange UnitReadsOut(const Plan& plan, size_t u, size_t esize) {
  const Unit& un = plan.units[u];
  const Step& st = plan.schedule.steps[static_cast<size_t>(un.step)];
  const bool reads = (st.recv == RecvKind::kReduce && st.accumulate) || (!st.send_peers.empty() && !st.send_from_in);
  if (!reads || un.count == 0) return {};
  const size_t lo = (st.out_offset + un.offset) * esize;
  return {lo, lo + un.count * esize, true};
}

ByteRange UnitWritesOut(const Plan& plan, size_t u, size_t esize) {
  const Unit& un = plan.units[u];
  const Step& st = plan.schedule.steps[static_cast<size_t>(un.step)];
  if (st.recv == RecvKind::kNone || un.count == 0) return {};
  const size_t lo = (st.out_offset + un.offset) * esize;
  return {lo, lo + un.count * esize};
}

namespace {

// Calls gap(lo, hi) for each part of [lo, hi) that no interval of `seen` covers, and seen_part(it)
// for each interval it overlaps, in address order.
template <class Map, class Gap, class Seen>
void Walk(Map& seen, ByteRange r, Gap&& gap, Seen&& seen_part) {
  auto it = seen.upper_bound(r.lo);
  if (it != seen.begin()) {
    auto prev = std::prev(it);
    if (prev->second.hi > r.lo) it = prev;
  }
  size_t pos = r.lo;
  while (pos < r.hi) {
    if (it != seen.end() && it->first < r.hi) {
      if (it->first > pos) gap(pos, it->first);
      seen_part(it);
      pos = std::max(pos, it->second.hi);
      ++it;
    } else {
      gap(pos, r.hi);
      pos = r.hi;
    }
  }
}

struct Read {
  size_t hi;
  uint32_t index;  // which range of StageMap::in
};
struct Written {
  size_t hi;
};

// Adds r to a set of disjoint intervals, merging what it overlaps or touches, so the set stays
// small on a plan written in order. Calls fresh(lo, hi) for each part of r not in the set before.
template <class Fresh>
void Cover(std::map<size_t, Written>& set, ByteRange r, Fresh&& fresh) {
  ByteRange merged = r;
  std::vector<size_t> absorbed;
  Walk(set, r, fresh, [&](auto it) {
    merged.lo = std::min(merged.lo, it->first);
    merged.hi = std::max(merged.hi, it->second.hi);
    absorbed.push_back(it->first);
  });
  if (auto next = set.find(r.hi); next != set.end()) {
    merged.hi = std::max(merged.hi, next->second.hi);
    absorbed.push_back(next->first);
  }
  if (auto it = set.lower_bound(r.lo); it != set.begin()) {
    auto prev = std::prev(it);
    if (prev->second.hi == r.lo) {
      merged.lo = prev->first;
      absorbed.push_back(prev->first);
    }
  }
  for (size_t lo : absorbed) set.erase(lo);
  set.emplace(merged.lo, Written{merged.hi});
}

}  // namespace

StageMap BuildStageMap(const Plan& plan, size_t esize) {
  const size_t n = plan.units.size();
  StageMap m;
  m.need.assign(n, 0);
  std::map<size_t, Read> read[2];   // of `in`, and of `out` before it was written
  std::map<size_t, Written> wrote;  // of `out` by the units so far
  // Adds the parts of r (of side `out`) not listed yet; returns the ranges r needs.
  auto need_for = [&](const ByteRange& r, bool out) {
    uint32_t need = 0;
    std::vector<ByteRange> gaps;
    Walk(
        read[out], r,
        [&](size_t lo, size_t hi) {
          gaps.push_back({lo, hi, out});
        },
        [&](auto it) { need = std::max(need, it->second.index + 1); });
    for (const ByteRange& g : gaps) {
      read[out].emplace(g.lo, Read{g.hi, static_cast<uint32_t>(m.in.size())});
      m.in.push_back(g);
      need = static_cast<uint32_t>(m.in.size());
    }
    return need;
  };
  for (size_t u = 0; u < n; ++u) {
    uint32_t need = 0;
    if (const ByteRange r = UnitReadsIn(plan, u, esize); r.lo < r.hi) need = need_for(r, false);
    const ByteRange w = UnitWritesOut(plan, u, esize);
    const ByteRange ro = UnitReadsOut(plan, u, esize);
    const Step& st = plan.schedule.steps[static_cast<size_t>(plan.units[u].step)];
    // A reduction into `out` reads it before this unit writes it; a send from `out`, after.
    const bool write_first = !(st.recv == RecvKind::kReduce && st.accumulate);
    if (write_first && w.lo < w.hi) Cover(wrote, w, [](size_t, size_t) {});
    if (ro.lo < ro.hi)
      Walk(
          wrote, ro,
          [&](size_t lo, size_t hi) {
            need = std::max(need, need_for({lo, hi, true}, true));
          },
          [](auto) {});
    if (!write_first && w.lo < w.hi) Cover(wrote, w, [](size_t, size_t) {});
    m.need[u] = need;
  }
  // The last writer of each byte: walk the units backwards; what no later unit wrote is final here.
  std::vector<std::vector<ByteRange>> final(n);
  std::map<size_t, Written> written;
  for (size_t k = n; k-- > 0;) {
    const ByteRange r = UnitWritesOut(plan, k, esize);
    if (r.lo < r.hi) Cover(written, r, [&](size_t lo, size_t hi) { final[k].push_back({lo, hi}); });
  }
  m.final_at.assign(n + 1, 0);
  for (size_t u = 0; u < n; ++u) {
    for (const ByteRange& r : final[u]) m.written += r.hi - r.lo;
    m.final.insert(m.final.end(), final[u].begin(), final[u].end());
    m.final_at[u + 1] = static_cast<uint32_t>(m.final.size());
  }
  return m;
}

}  // namespace hoop
