#include "collectives/core/plan.h"

#include <algorithm>

namespace hoop {

Schedule BuildSchedule(const PlanKey& k, int rank, int size, const std::vector<int>* host_of) {
  const AlgoRow* row = FindAlgo(k.kind, k.algo);
  if (!row) return {};  // ChooseAlgo never resolves to an algorithm without a row
  ScheduleArgs a{rank, size, k.root, k.count};
  a.host_of = host_of;
  return row->build(a);
}

namespace {
// Plan::in_order: each unit's transitive waits as a bit mask over the units before it.
bool InOrder(const Plan& p) {
  const size_t n = p.units.size();
  if (n > Plan::kInOrderUnits) return false;
  uint64_t before[Plan::kInOrderUnits] = {};
  uint64_t receivers = 0;  // units with a receive, so far
  uint64_t others = 0;     // the same but for a fold's held messages (kHold)
  for (size_t u = 0; u < n; ++u) {
    const Unit& un = p.units[u];
    if (p.schedule.steps[static_cast<size_t>(un.step)].send_peers.size() > Plan::kInOrderSendPeers) return false;
    const auto wait = [&](int d) {
      if (d >= 0) before[u] |= (uint64_t(1) << d) | before[d];
    };
    wait(un.dep);
    wait(un.sent_dep);
    for (int w : un.waits) wait(w);
    // A held message need not wait for the one held before it: both only land, and their fold
    // waits for every one.
    const RecvKind kind = p.schedule.steps[static_cast<size_t>(un.step)].recv;
    const uint64_t need = kind == RecvKind::kHold ? others : receivers;
    if ((before[u] & need) != need) return false;
    if (kind != RecvKind::kNone) receivers |= uint64_t(1) << u;
    if (kind != RecvKind::kNone && kind != RecvKind::kHold) others |= uint64_t(1) << u;
  }
  return true;
}
}  // namespace

Plan MakePlan(Schedule schedule, size_t chunk_elems) {
  Plan p;
  p.schedule = std::move(schedule);
  p.units = ExpandUnits(p.schedule, chunk_elems);
  const size_t n = p.units.size();
  p.send_waiter.assign(n, -1);
  p.dep_count.assign(n, 0);
  p.dependents_at.assign(n + 1, 0);
  auto each_dep = [&](size_t u, auto&& f) {
    const Unit& un = p.units[u];
    if (un.dep >= 0) f(static_cast<size_t>(un.dep));
    for (int w : un.waits)
      if (w != un.dep) f(static_cast<size_t>(w));
  };
  for (size_t u = 0; u < n; ++u)
    each_dep(u, [&](size_t d) {
      ++p.dep_count[u];
      ++p.dependents_at[d + 1];
    });
  for (size_t u = 0; u < n; ++u) p.dependents_at[u + 1] += p.dependents_at[u];
  p.dependents.resize(p.dependents_at[n]);
  std::vector<uint32_t> fill(p.dependents_at.begin(), p.dependents_at.end() - 1);
  for (size_t u = 0; u < n; ++u) each_dep(u, [&](size_t d) { p.dependents[fill[d]++] = static_cast<int>(u); });
  for (size_t u = 0; u < n; ++u) {
    const Unit& un = p.units[u];
    if (un.sent_dep >= 0) p.send_waiter[static_cast<size_t>(un.sent_dep)] = static_cast<int>(u);
    for (int peer : p.schedule.steps[static_cast<size_t>(un.step)].send_peers) {
      auto it = std::find_if(p.sends.begin(), p.sends.end(), [&](const auto& e) { return e.first == peer; });
      if (it == p.sends.end()) it = p.sends.insert(p.sends.end(), {peer, {}});
      it->second.push_back(static_cast<int>(u));
    }
    p.max_unit_count = std::max(p.max_unit_count, un.count);
    p.one_chunk = p.one_chunk && un.chunk == 0;
  }
  p.in_order = InOrder(p);
  return p;
}

size_t PlanCache::Hash::operator()(const PlanKey& k) const {
  size_t h = std::hash<size_t>()(k.count);
  auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<size_t>(k.kind));
  mix(static_cast<size_t>(k.algo));
  mix(static_cast<size_t>(k.root + 1));
  mix(k.chunk_elems);
  return h;
}

const Plan& PlanCache::Get(const PlanKey& key) {
  if (last_ && key == last_key_) return *last_;
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    if (plans_.size() >= kMaxPlans) {
      plans_.clear();
      ++epoch_;
    }
    auto plan = std::make_unique<Plan>(
        MakePlan(BuildSchedule(key, rank_, size_, host_of_.empty() ? nullptr : &host_of_), key.chunk_elems));
    it = plans_.emplace(key, std::move(plan)).first;
  }
  last_key_ = key;
  last_ = it->second.get();
  return *last_;
}

}  // namespace hoop
