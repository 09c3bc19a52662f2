// Schedules as pure functions: every rank's schedule is run at once in a simulated network where
// an element is the set of ranks whose input it contains, plus a hash of the expression that
// combined them (operand order included). A reduction must join disjoint sets (nothing counted
// twice), the average's division must happen exactly once and only on a complete set, every
// message must be received exactly once, running each rank's units strictly in order must not
// deadlock (so the executor, which runs them with a window, cannot), and every rank must end
// with the same expression for every element (the same bits, whatever the op).
//
// The network is as unkind as the transports may be: a message is read from the sender's memory
// only when the receiver takes it (a rendezvous protocol may read that late), so a schedule that
// writes memory before its own send of it was read delivers wrong sets; a send counts as
// completed (after_sent) only once the receiver took it; and allreduce also runs in place.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "collectives/schedule.h"

using namespace hoop;

namespace {

constexpr uint64_t kUnset = ~0ull;
constexpr uint64_t kFinal = 1ull << 63;  // the average's division was applied

struct Elem {
  uint64_t set = kUnset;  // ranks whose input it holds (| kFinal once divided)
  uint64_t expr = 0;      // hash of how they were combined, in operand order
  bool operator==(const Elem&) const = default;
};

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
Elem Leaf(int rank) { return {1ull << rank, Mix(static_cast<uint64_t>(rank) + 1)}; }

using Mem = std::vector<Elem>;

struct SimResult {
  std::vector<Mem> out;            // per rank
  std::vector<uint64_t> heard;     // per rank: ranks it has (transitively) heard from
  bool ok = true;
  std::string error;
};

// Does unit u's work on rank k with the message `data`: copies it into `o` or reduces it with the
// step's source, checking that nothing is counted twice or divided early.
template <typename Fail>
void Apply(int k, const Step& st, const Unit& u, const Mem& data, Mem& o, const Mem& in_k, uint64_t complete, Fail&& fail) {
  for (size_t i = 0; i < data.size(); ++i) {
    size_t oi = st.out_offset + u.offset + i;
    if (st.recv == RecvKind::kCopy) {
      o[oi] = data[i];
      continue;
    }
    Elem src = st.accumulate ? o[oi] : in_k[st.in_offset + u.offset + i];
    if (src.set == kUnset || data[i].set == kUnset) return fail("rank " + std::to_string(k) + ": reduces an unset element");
    if ((src.set | data[i].set) & kFinal) return fail("rank " + std::to_string(k) + ": reduces an already divided element");
    if (src.set & data[i].set) return fail("rank " + std::to_string(k) + ": counts a rank twice");
    const Elem& left = st.recv_left ? data[i] : src;
    const Elem& right = st.recv_left ? src : data[i];
    Elem res{src.set | data[i].set, Mix(left.expr * 31 + Mix(right.expr))};
    if (st.finalize) {
      if (res.set != complete) return fail("rank " + std::to_string(k) + ": divides an incomplete sum");
      res.set |= kFinal;
    }
    o[oi] = res;
  }
}

// in_place: each rank's `in` is its `out` (allreduce only; `out` starts as `in`).
SimResult Simulate(int n, const std::vector<Schedule>& s, std::vector<Mem> in, std::vector<Mem> out, size_t chunk,
                   bool in_place = false) {
  SimResult r;
  if (in_place) out = in;
  auto in_of = [&](size_t k) -> Mem& { return in_place ? out[k] : in[k]; };
  // A message on the wire is where its data lies, not the data: it is read when taken.
  struct Msg {
    size_t unit;  // the sender's unit, for after_sent
    bool from_in;
    size_t offset, count;
    uint64_t heard;
  };
  using Key = std::tuple<int, int, int, uint32_t>;  // src, dst, msg, chunk
  std::map<Key, Msg> wire;
  std::vector<std::vector<Unit>> units(static_cast<size_t>(n));
  std::vector<std::vector<std::vector<Key>>> sent_keys(static_cast<size_t>(n));  // per rank, per unit
  std::vector<size_t> next(static_cast<size_t>(n), 0);
  std::vector<bool> received(static_cast<size_t>(n), false);  // the next unit took its message
  std::vector<Mem> staged(static_cast<size_t>(n));
  r.heard.resize(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    units[static_cast<size_t>(k)] = ExpandUnits(s[static_cast<size_t>(k)], chunk);
    sent_keys[static_cast<size_t>(k)].resize(units[static_cast<size_t>(k)].size());
    r.heard[static_cast<size_t>(k)] = 1ull << k;
  }
  auto fail = [&](const std::string& e) {
    if (r.ok) r.error = e;
    r.ok = false;
  };
  const uint64_t complete = n == 64 ? ~0ull : (1ull << n) - 1;
  bool progress = true;
  while (progress && r.ok) {
    progress = false;
    for (int k = 0; k < n && r.ok; ++k) {
      const size_t uk = static_cast<size_t>(k);
      while (next[uk] < units[uk].size() && r.ok) {
        const size_t ui = next[uk];
        const Unit& u = units[uk][ui];
        const Step& st = s[uk].steps[static_cast<size_t>(u.step)];
        auto& o = out[uk];
        if (st.recv != RecvKind::kNone && !received[uk]) {
          Key key{st.recv_peer, k, st.recv_msg, u.chunk};
          auto it = wire.find(key);
          if (it == wire.end()) break;  // not there yet
          const Msg m = it->second;
          wire.erase(it);
          progress = true;
          r.heard[uk] |= m.heard;
          if (m.count != u.count) fail("rank " + std::to_string(k) + ": message length differs from the step's");
          const size_t src = static_cast<size_t>(st.recv_peer);
          Mem& from = m.from_in ? in_of(src) : out[src];
          staged[uk].assign(from.begin() + static_cast<std::ptrdiff_t>(m.offset),
                            from.begin() + static_cast<std::ptrdiff_t>(m.offset + std::min(m.count, u.count)));
          received[uk] = true;
        }
        // after_sent: our own earlier message must have been taken by its receiver.
        if (u.sent_dep >= 0) {
          bool pending = false;
          for (const Key& key : sent_keys[uk][static_cast<size_t>(u.sent_dep)]) pending |= wire.count(key) > 0;
          if (pending) break;
        }
        if (st.recv != RecvKind::kNone) {
          Apply(k, st, u, staged[uk], o, in_of(uk), complete, fail);
          received[uk] = false;
        }
        for (int p : st.send_peers) {
          Key key{k, p, st.send_msg, u.chunk};
          if (wire.count(key)) fail("rank " + std::to_string(k) + " sends the same message twice");
          size_t off = (st.send_from_in ? st.in_offset : st.out_offset) + u.offset;
          wire[key] = {ui, st.send_from_in, off, u.count, r.heard[uk]};
          sent_keys[uk][ui].push_back(key);
        }
        ++next[uk];
        progress = true;
      }
    }
  }
  for (int k = 0; k < n; ++k)
    if (next[static_cast<size_t>(k)] < units[static_cast<size_t>(k)].size())
      fail("deadlock: rank " + std::to_string(k) + " stuck at unit " + std::to_string(next[static_cast<size_t>(k)]));
  if (!wire.empty()) fail(std::to_string(wire.size()) + " messages were never received");
  r.out = std::move(out);
  return r;
}

// The same network, with every rank doing its units in whatever order the executor may: a message
// is taken whenever it is on the wire, whatever the rank is waiting for (a back end completes
// receives, and one message's chunks, in any order); a unit acts once its message is in, the
// units it waits for (dep, waits) have acted and its after_sent message was taken; sends to each
// peer go out in unit order. Where the executor lands data on arrival (a copy, or a reduction
// that waits for nothing, not after its own send) it is written when taken, not when the unit
// acts. Units start in order within the executor's default window (8 receives, x the
// schedule's window_scale). Each step picks one of everything possible at random (seeded). A
// schedule correct here needs no ordering from its back end that the executor does not give.
SimResult SimulateAnyOrder(int n, const std::vector<Schedule>& s, std::vector<Mem> in, std::vector<Mem> out,
                           size_t chunk, bool in_place, uint32_t seed) {
  SimResult r;
  if (in_place) out = in;
  auto in_of = [&](size_t k) -> Mem& { return in_place ? out[k] : in[k]; };
  struct Msg {
    bool from_in;
    size_t offset, count;
    uint64_t heard;
  };
  using Key = std::tuple<int, int, int, uint32_t>;  // src, dst, msg, chunk
  std::map<Key, Msg> wire;
  struct UnitState {
    bool taken = false, acted = false, landed = false;
    Mem staged;
    std::vector<Key> sent;  // its messages, once posted
  };
  const size_t nn = static_cast<size_t>(n);
  std::vector<std::vector<Unit>> units(nn);
  std::vector<std::vector<UnitState>> st(nn);
  std::vector<std::map<int, size_t>> cursor(nn);  // per rank, per peer: units before it all sent
  r.heard.resize(nn);
  for (size_t k = 0; k < nn; ++k) {
    units[k] = ExpandUnits(s[k], chunk);
    st[k].resize(units[k].size());
    r.heard[k] = 1ull << k;
  }
  auto fail = [&](const std::string& e) {
    if (r.ok) r.error = e;
    r.ok = false;
  };
  const uint64_t complete = n == 64 ? ~0ull : (1ull << n) - 1;
  auto step_of = [&](size_t k, size_t u) -> const Step& { return s[k].steps[static_cast<size_t>(units[k][u].step)]; };
  auto waits_for_send = [&](size_t k, size_t u) {
    const int d = units[k][u].sent_dep;
    return d >= 0 && (in_place || !step_of(k, static_cast<size_t>(d)).send_from_in);
  };
  auto lands_early = [&](size_t k, size_t u) {
    const Step& sp = step_of(k, u);
    const Unit& un = units[k][u];
    if (waits_for_send(k, u)) return false;
    return sp.recv == RecvKind::kCopy || (sp.recv == RecvKind::kReduce && !sp.accumulate && un.dep < 0 && un.waits.empty());
  };
  auto key_of = [&](size_t k, size_t u) {
    const Step& sp = step_of(k, u);
    return Key{sp.recv_peer, static_cast<int>(k), sp.recv_msg, units[k][u].chunk};
  };
  auto can_act = [&](size_t k, size_t u) {
    const Unit& un = units[k][u];
    const UnitState& us = st[k][u];
    if (us.acted || (step_of(k, u).recv != RecvKind::kNone && !us.taken)) return false;
    if (un.dep >= 0 && !st[k][static_cast<size_t>(un.dep)].acted) return false;
    for (int w : un.waits)
      if (!st[k][static_cast<size_t>(w)].acted) return false;
    if (waits_for_send(k, u)) {
      const size_t d = static_cast<size_t>(un.sent_dep);
      if (!st[k][d].acted || st[k][d].sent.size() < step_of(k, d).send_peers.size()) return false;
      for (const Key& key : st[k][d].sent)
        if (wire.count(key)) return false;
    }
    return true;
  };
  auto post_sends = [&](size_t k, int peer) {
    size_t& c = cursor[k][peer];
    for (; c < units[k].size(); ++c) {
      const Step& sp = step_of(k, c);
      if (std::find(sp.send_peers.begin(), sp.send_peers.end(), peer) == sp.send_peers.end()) continue;
      if (!st[k][c].acted) return;
      Key key{static_cast<int>(k), peer, sp.send_msg, units[k][c].chunk};
      if (wire.count(key)) return fail("rank " + std::to_string(k) + " sends the same message twice");
      wire[key] = {sp.send_from_in, (sp.send_from_in ? sp.in_offset : sp.out_offset) + units[k][c].offset,
                   units[k][c].count, r.heard[k]};
      st[k][c].sent.push_back(key);
    }
  };
  // As the executor, a rank starts its units in order, at most `window` receives started and not
  // yet acted: only started units take messages or act.
  const size_t window = 8 * static_cast<size_t>(std::max(1, s.empty() ? 1 : s[0].window_scale));
  std::vector<size_t> started(nn, 0), low(nn, 0), inflight(nn, 0);
  std::mt19937 rng(seed);
  std::vector<std::pair<size_t, size_t>> takes, acts;
  while (r.ok) {
    takes.clear();
    acts.clear();
    for (size_t k = 0; k < nn; ++k) {
      while (started[k] < units[k].size() && inflight[k] < window)
        if (step_of(k, started[k]++).recv != RecvKind::kNone) ++inflight[k];
      while (low[k] < started[k] && st[k][low[k]].acted) ++low[k];
      for (size_t u = low[k]; u < started[k]; ++u) {
        if (step_of(k, u).recv != RecvKind::kNone && !st[k][u].taken && wire.count(key_of(k, u))) takes.push_back({k, u});
        if (can_act(k, u)) acts.push_back({k, u});
      }
    }
    const size_t total = takes.size() + acts.size();
    if (total == 0) break;
    size_t pick = std::uniform_int_distribution<size_t>(0, total - 1)(rng);
    if (pick < takes.size()) {  // the message arrives: read from the sender's memory now
      const auto [k, u] = takes[pick];
      auto it = wire.find(key_of(k, u));
      const Msg m = it->second;
      wire.erase(it);
      r.heard[k] |= m.heard;
      const Unit& un = units[k][u];
      if (m.count != un.count) fail("rank " + std::to_string(k) + ": message length differs from the step's");
      const size_t src = static_cast<size_t>(step_of(k, u).recv_peer);
      Mem& from = m.from_in ? in_of(src) : out[src];
      Mem data(from.begin() + static_cast<std::ptrdiff_t>(m.offset),
               from.begin() + static_cast<std::ptrdiff_t>(m.offset + std::min(m.count, un.count)));
      st[k][u].taken = true;
      if (lands_early(k, u)) {
        Apply(static_cast<int>(k), step_of(k, u), un, data, out[k], in_of(k), complete, fail);
        st[k][u].landed = true;
      } else {
        st[k][u].staged = std::move(data);
      }
    } else {
      const auto [k, u] = acts[pick - takes.size()];
      const Step& sp = step_of(k, u);
      if (sp.recv != RecvKind::kNone && !st[k][u].landed)
        Apply(static_cast<int>(k), sp, units[k][u], st[k][u].staged, out[k], in_of(k), complete, fail);
      st[k][u].acted = true;
      if (sp.recv != RecvKind::kNone) --inflight[k];
      for (int p : sp.send_peers) post_sends(k, p);
    }
  }
  for (size_t k = 0; k < nn; ++k)
    for (size_t u = 0; u < units[k].size() && r.ok; ++u)
      if (!st[k][u].acted) fail("deadlock: rank " + std::to_string(k) + " never does unit " + std::to_string(u));
  if (!wire.empty()) fail(std::to_string(wire.size()) + " messages were never received");
  r.out = std::move(out);
  return r;
}

uint64_t All(int n) { return (1ull << n) - 1; }

std::vector<Mem> Own(int n, size_t count) {
  std::vector<Mem> v;
  for (int k = 0; k < n; ++k) v.emplace_back(count, Leaf(k));
  return v;
}
std::vector<Mem> Unset(int n, size_t count) { return std::vector<Mem>(static_cast<size_t>(n), Mem(count)); }

const size_t kCounts[] = {0, 1, 2, 7, 10, 33, 100};
const size_t kChunks[] = {1, 3, 1000};

}  // namespace

TEST_CASE("ring, tree and doubling allreduce reduce every element exactly once, alike on every rank", "[schedule]") {
  const char* names[] = {"ring", "tree", "doubling"};
  Schedule (*make[])(int, int, size_t) = {&RingAllreduce, &TreeAllreduce, &DoublingAllreduce};
  for (int n = 1; n <= 9; ++n)
    for (size_t count : kCounts)
      for (size_t chunk : kChunks)
        for (int a = 0; a < 3; ++a)
          for (bool in_place : {false, true}) {
            std::vector<Schedule> s;
            for (int k = 0; k < n; ++k) s.push_back(make[a](k, n, count));
            auto r = Simulate(n, s, Own(n, count), Unset(n, count), chunk, in_place);
            INFO(names[a] << (in_place ? " in place" : "") << " n=" << n << " count=" << count << " chunk=" << chunk
                          << ": " << r.error);
            REQUIRE(r.ok);
            if (n == 1) continue;  // one rank: the communicator copies, no schedule
            for (int k = 0; k < n; ++k)
              for (size_t i = 0; i < count; ++i) {
                const Elem& e = r.out[static_cast<size_t>(k)][i];
                REQUIRE(e.set == (All(n) | kFinal));
                REQUIRE(e.expr == r.out[0][i].expr);  // the same reduction order, so the same bits
              }
            auto q = SimulateAnyOrder(n, s, Own(n, count), Unset(n, count), chunk, in_place, 7);
            INFO("any order: " << q.error);
            REQUIRE(q.ok);
            for (int k = 0; k < n; ++k)
              for (size_t i = 0; i < count; ++i) REQUIRE(q.out[static_cast<size_t>(k)][i] == r.out[static_cast<size_t>(k)][i]);
          }
}

// Hierarchical allreduce over host maps: contiguous and interleaved hosts, one rank per host and
// one host (degenerate rings), and uneven hosts (the flat ring instead).
TEST_CASE("hierarchical allreduce reduces every element exactly once, alike on every rank, for any host map",
          "[schedule]") {
  std::vector<std::vector<int>> maps = {{0, 0},          {0, 1},          {0, 0, 1, 1},       {0, 1, 0, 1},
                                        {0, 0, 0, 1, 1, 1}, {0, 0, 1, 1, 2, 2}, {5, 5, 5, 5, 9, 9, 9, 9},
                                        {0, 1, 2, 3, 0, 1, 2, 3}, {0, 0, 0, 0}, {0, 1, 2, 3}, {0, 0, 1},
                                        {0, 0, 0, 1, 1, 1, 2, 2, 2}};
  for (const auto& host_of : maps) {
    const int n = static_cast<int>(host_of.size());
    for (size_t count : kCounts)
      for (size_t chunk : kChunks)
        for (size_t part : {size_t{1} << 20, size_t{10}, size_t{1}})  // one part; pipelined parts
        for (bool in_place : {false, true}) {
          std::vector<Schedule> s;
          for (int k = 0; k < n; ++k) s.push_back(HierarchicalAllreduce(k, host_of, count, part));
          auto r = Simulate(n, s, Own(n, count), Unset(n, count), chunk, in_place);
          std::string map;
          for (int h : host_of) map += std::to_string(h);
          INFO("hosts " << map << (in_place ? " in place" : "") << " count=" << count << " chunk=" << chunk
                        << " part=" << part << ": " << r.error);
          REQUIRE(r.ok);
          for (int k = 0; k < n; ++k)
            for (size_t i = 0; i < count; ++i) {
              const Elem& e = r.out[static_cast<size_t>(k)][i];
              REQUIRE(e.set == (All(n) | kFinal));
              REQUIRE(e.expr == r.out[0][i].expr);
            }
          // Out of order, as UCX and libfabric complete: the same result (a seed per case).
          if (chunk == 1000) continue;
          const uint32_t seed = static_cast<uint32_t>(count * 31 + chunk * 7 + part + (in_place ? 1 : 0));
          auto q = SimulateAnyOrder(n, s, Own(n, count), Unset(n, count), chunk, in_place, seed);
          INFO("any order, seed " << seed << ": " << q.error);
          REQUIRE(q.ok);
          for (int k = 0; k < n; ++k)
            for (size_t i = 0; i < count; ++i) REQUIRE(q.out[static_cast<size_t>(k)][i] == r.out[static_cast<size_t>(k)][i]);
        }
  }
  CHECK(HierarchicalAllreduce(0, {0, 0, 1}, 10).algo == "ring");  // uneven: the flat ring
  // What waits for what (rank 1 of 2 x 2, one part: A steps 0-1, B 2-4, C 5-6): every step of B
  // on A's last; C's first on B's; nothing else, and nothing waits for a whole step.
  const Schedule h = HierarchicalAllreduce(1, {0, 0, 1, 1}, 100);
  CHECK(h.algo == "hierarchical");
  REQUIRE(h.steps.size() == 7);
  for (int i : {0, 1, 6}) CHECK(h.steps[static_cast<size_t>(i)].after.empty());
  for (int i : {2, 3, 4}) CHECK(h.steps[static_cast<size_t>(i)].after == std::vector<int>{1});
  CHECK(h.steps[5].after == std::vector<int>{2, 3, 4});
  // Chunk by chunk: a unit of B waits for the units of A's last step that wrote its elements.
  const auto units = ExpandUnits(h, 7);
  for (const Unit& u : units) {
    CHECK(u.dep == -1);
    const Step& st = h.steps[static_cast<size_t>(u.step)];
    for (int w : u.waits) {
      const Unit& a = units[static_cast<size_t>(w)];
      const Step& sa = h.steps[static_cast<size_t>(a.step)];
      CHECK(std::find(st.after.begin(), st.after.end(), a.step) != st.after.end());
      CHECK(sa.out_offset + a.offset < st.out_offset + u.offset + u.count);  // they overlap
      CHECK(st.out_offset + u.offset < sa.out_offset + a.offset + a.count);
    }
    if (u.step >= 2 && u.step <= 5 && u.count > 0) CHECK(!u.waits.empty());
  }
  // Pipelined parts: part 1's reduce-scatter is issued before part 0's cross-host phase, and
  // each part's phases wait for their own part's phase before.
  const Schedule p = HierarchicalAllreduce(1, {0, 0, 1, 1}, 100, 25);  // 4 parts
  REQUIRE(p.steps.size() == 4 * (2 + 3 + 2));  // A: 2 steps, B: 3 (two hosts), C: 2
  CHECK(p.steps[2].after.empty());                  // A1, right after A0
  CHECK(p.steps[4].after == std::vector<int>{1});   // B0 on A0's last
  CHECK(p.steps[9].after == std::vector<int>{3});   // B1 (issued after A2, 7-8) on A1's last (3)
  CHECK(p.steps[12].after == std::vector<int>{4, 5, 6});  // C0 on B0
}

// Out of order, a schedule must say what it waits for: without `after`, the hierarchical
// allreduce's cross-host phase sends what its host's reduce-scatter has not finished. The in-order
// run cannot see it; the any-order one must.
TEST_CASE("the any-order simulator catches a missing wait that the in-order one cannot", "[schedule]") {
  const std::vector<int> host_of = {0, 0, 1, 1};
  const int n = 4;
  std::vector<Schedule> s;
  for (int k = 0; k < n; ++k) {
    s.push_back(HierarchicalAllreduce(k, host_of, 40));
    for (Step& st : s.back().steps) st.after.clear();
  }
  CHECK(Simulate(n, s, Own(n, 40), Unset(n, 40), 3).ok);
  int caught = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto r = SimulateAnyOrder(n, s, Own(n, 40), Unset(n, 40), 3, false, seed);
    bool wrong = !r.ok;
    for (int k = 0; k < n && r.ok; ++k)
      for (const Elem& e : r.out[static_cast<size_t>(k)]) wrong |= e.set != (All(n) | kFinal);
    caught += wrong ? 1 : 0;
  }
  CHECK(caught > 0);
}

// The simulator must be able to fail: the properties above are only worth what it catches.
TEST_CASE("the simulator catches a missing after_sent and a rank-dependent reduction order", "[schedule]") {
  const int n = 4;
  auto run = [&](auto mutate, bool in_place) {
    std::vector<Schedule> s;
    for (int k = 0; k < n; ++k) {
      s.push_back(DoublingAllreduce(k, n, 5));
      for (Step& st : s.back().steps) mutate(st);
    }
    return Simulate(n, s, Own(n, 5), Unset(n, 5), 2, in_place);
  };
  // The partner reads data that already holds its own contribution (or is already divided).
  auto hazard = [](const SimResult& r) {
    return !r.ok && (r.error.find("counts a rank twice") != std::string::npos ||
                     r.error.find("reduces an already divided element") != std::string::npos);
  };
  auto no_wait = [](Step& st) { st.after_sent = false; };
  auto r = run(no_wait, false);  // round 2 overwrites the partial that round 2's send reads
  INFO(r.error);
  CHECK(hazard(r));
  auto own_first = [](Step& st) { st.recv_left = false; };
  r = run(own_first, false);
  REQUIRE(r.ok);
  bool differs = false;
  for (int k = 1; k < n; ++k) differs |= r.out[static_cast<size_t>(k)][0].expr != r.out[0][0].expr;
  CHECK(differs);
  // Two ranks in place: the one round writes over the input its send reads.
  std::vector<Schedule> two;
  for (int k = 0; k < 2; ++k) {
    two.push_back(DoublingAllreduce(k, 2, 3));
    for (Step& st : two.back().steps) st.after_sent = false;
  }
  CHECK(Simulate(2, two, Own(2, 3), Unset(2, 3), 1, false).ok);  // distinct memory: no hazard
  CHECK(hazard(Simulate(2, two, Own(2, 3), Unset(2, 3), 1, true)));
}

TEST_CASE("ring reduce-scatter leaves block r, complete, on rank r", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (size_t count : kCounts)
      for (size_t chunk : kChunks) {
        std::vector<Schedule> s;
        for (int k = 0; k < n; ++k) s.push_back(RingReduceScatter(k, n, count));
        size_t total = count * static_cast<size_t>(n);
        auto r = Simulate(n, s, Own(n, total), Unset(n, total), chunk);
        INFO("n=" << n << " count=" << count << " chunk=" << chunk << ": " << r.error);
        REQUIRE(r.ok);
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < count; ++i) REQUIRE(r.out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i].set == (All(n) | kFinal));
      }
}

TEST_CASE("ring allgather puts rank i's block at block i everywhere", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (size_t count : kCounts)
      for (size_t chunk : kChunks) {
        std::vector<Schedule> s;
        std::vector<Mem> out = Unset(n, count * static_cast<size_t>(n));
        for (int k = 0; k < n; ++k) {
          s.push_back(RingAllgather(k, n, count));
          for (size_t i = 0; i < count; ++i) out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i] = Leaf(k);  // the caller's copy
        }
        auto r = Simulate(n, s, Own(n, count), out, chunk);
        INFO("n=" << n << " count=" << count << " chunk=" << chunk << ": " << r.error);
        REQUIRE(r.ok);
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < count * static_cast<size_t>(n); ++i)
            REQUIRE(r.out[static_cast<size_t>(k)][i] == Leaf(static_cast<int>(i / count)));
      }
}

// Hierarchical allgather and reduce-scatter over the same host maps, in order and out of order.
TEST_CASE("hierarchical allgather and reduce-scatter match the ring's layouts for any host map", "[schedule]") {
  const std::vector<std::vector<int>> maps = {{0, 0},       {0, 1},          {0, 0, 1, 1},       {0, 1, 0, 1},
                                              {0, 0, 0, 1, 1, 1}, {0, 0, 1, 1, 2, 2}, {5, 5, 5, 5, 9, 9, 9, 9},
                                              {0, 1, 2, 3, 0, 1, 2, 3}, {0, 0, 0, 0}, {0, 1, 2}, {0, 0, 1}};
  for (const auto& host_of : maps) {
    const int n = static_cast<int>(host_of.size());
    std::string map;
    for (int h : host_of) map += std::to_string(h);
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(20)})
      for (size_t chunk : {size_t(1), size_t(3), size_t(1000)})
        for (uint32_t seed : {0u, 1u, 2u}) {  // 0: in order
          const size_t total = count * static_cast<size_t>(n);
          INFO("hosts " << map << " count=" << count << " chunk=" << chunk << " seed=" << seed);
          auto sim = [&](const std::vector<Schedule>& s, std::vector<Mem> in, std::vector<Mem> out) {
            return seed == 0 ? Simulate(n, s, std::move(in), std::move(out), chunk)
                             : SimulateAnyOrder(n, s, std::move(in), std::move(out), chunk, false, seed);
          };
          std::vector<Schedule> ag, rs;
          std::vector<Mem> out = Unset(n, total);
          for (int k = 0; k < n; ++k) {
            ag.push_back(HierarchicalAllgather(k, host_of, count));
            rs.push_back(HierarchicalReduceScatter(k, host_of, count));
            for (size_t i = 0; i < count; ++i) out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i] = Leaf(k);
          }
          auto r = sim(ag, Own(n, count), out);
          INFO("allgather: " << r.error);
          REQUIRE(r.ok);
          for (int k = 0; k < n; ++k)
            for (size_t i = 0; i < total; ++i) REQUIRE(r.out[static_cast<size_t>(k)][i] == Leaf(static_cast<int>(i / count)));
          auto q = sim(rs, Own(n, total), Unset(n, total));
          INFO("reduce-scatter: " << q.error);
          REQUIRE(q.ok);
          for (int k = 0; k < n; ++k)
            for (size_t i = 0; i < count; ++i)
              REQUIRE(q.out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i].set == (All(n) | kFinal));
        }
  }
  CHECK(HierarchicalAllgather(0, {0, 0, 1}, 10).algo == "ring");  // uneven: the flat ring
  CHECK(HierarchicalReduceScatter(0, {0, 0, 1}, 10).algo == "ring");
  CHECK(HierarchicalAllgather(0, {0, 0, 1, 1}, 10).algo == "hierarchical");
}

// The host-ordered chain: every root, any host map; it crosses between hosts H-1 times.
TEST_CASE("hierarchical broadcast delivers the root's data, crossing each host boundary once", "[schedule]") {
  const std::vector<std::vector<int>> maps = {{0, 0}, {0, 1}, {0, 1, 0, 1}, {0, 0, 1}, {0, 1, 2, 0, 1, 2}, {7, 7, 3, 3, 3}};
  for (const auto& host_of : maps) {
    const int n = static_cast<int>(host_of.size());
    int hosts = 0;
    for (int i = 0; i < n; ++i) {
      bool first = true;
      for (int j = 0; j < i; ++j) first &= host_of[static_cast<size_t>(j)] != host_of[static_cast<size_t>(i)];
      hosts += first ? 1 : 0;
    }
    for (int root = 0; root < n; ++root)
      for (size_t count : {size_t(0), size_t(1), size_t(10)})
        for (uint32_t seed : {0u, 1u}) {
          std::vector<Schedule> s;
          std::vector<Mem> out = Unset(n, count);
          out[static_cast<size_t>(root)].assign(count, Leaf(root));
          int crossings = 0;
          for (int k = 0; k < n; ++k) {
            s.push_back(HierarchicalBroadcast(k, host_of, root, count));
            for (int p : s.back().steps.back().send_peers) crossings += host_of[static_cast<size_t>(p)] != host_of[static_cast<size_t>(k)];
          }
          auto r = seed == 0 ? Simulate(n, s, Own(n, count), out, 3) : SimulateAnyOrder(n, s, Own(n, count), out, 3, false, seed);
          INFO("n=" << n << " root=" << root << " seed=" << seed << ": " << r.error);
          REQUIRE(r.ok);
          CHECK(crossings == hosts - 1);
          for (int k = 0; k < n; ++k)
            for (const Elem& v : r.out[static_cast<size_t>(k)]) REQUIRE(v == Leaf(root));
        }
  }
}

TEST_CASE("chain and binomial broadcast deliver the root's data to every rank", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (int root = 0; root < n; ++root)
      for (size_t count : {size_t(0), size_t(1), size_t(10)})
        for (int binomial = 0; binomial < 2; ++binomial) {
          std::vector<Schedule> s;
          std::vector<Mem> out = Unset(n, count);
          out[static_cast<size_t>(root)].assign(count, Leaf(root));
          for (int k = 0; k < n; ++k)
            s.push_back(binomial ? BinomialBroadcast(k, n, root, count) : ChainBroadcast(k, n, root, count));
          auto r = Simulate(n, s, Own(n, count), out, 3);
          INFO((binomial ? "binomial" : "chain") << " n=" << n << " root=" << root << ": " << r.error);
          REQUIRE(r.ok);
          for (int k = 0; k < n; ++k)
            for (const Elem& v : r.out[static_cast<size_t>(k)]) REQUIRE(v == Leaf(root));
        }
}

TEST_CASE("binomial and chain reduce leave the complete, divided reduction on the root", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (int root = 0; root < n; ++root)
      for (size_t count : kCounts)
        for (size_t chunk : kChunks)
          for (int binomial = 0; binomial < 2; ++binomial) {
            std::vector<Schedule> s;
            for (int k = 0; k < n; ++k)
              s.push_back(binomial ? BinomialReduce(k, n, root, count) : ChainReduce(k, n, root, count));
            auto r = Simulate(n, s, Own(n, count), Unset(n, count), chunk);
            INFO((binomial ? "binomial" : "chain") << " n=" << n << " root=" << root << " count=" << count
                                                   << " chunk=" << chunk << ": " << r.error);
            REQUIRE(r.ok);
            for (const Elem& v : r.out[static_cast<size_t>(root)]) REQUIRE(v.set == (All(n) | kFinal));
          }
}

TEST_CASE("flat gather and scatter move block r between rank r and the root", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (int root = 0; root < n; ++root)
      for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(10)})
        for (size_t chunk : kChunks) {
          const size_t total = count * static_cast<size_t>(n);
          std::vector<Schedule> g, sc;
          for (int k = 0; k < n; ++k) {
            g.push_back(FlatGather(k, n, root, count));
            sc.push_back(FlatScatter(k, n, root, count));
          }
          // Gather: the root's own block is the caller's copy.
          std::vector<Mem> out = Unset(n, total);
          for (size_t i = 0; i < count; ++i) out[static_cast<size_t>(root)][static_cast<size_t>(root) * count + i] = Leaf(root);
          auto r = Simulate(n, g, Own(n, count), out, chunk);
          INFO("n=" << n << " root=" << root << " count=" << count << " chunk=" << chunk << ": " << r.error);
          REQUIRE(r.ok);
          for (size_t i = 0; i < total; ++i)
            REQUIRE(r.out[static_cast<size_t>(root)][i] == Leaf(static_cast<int>(i / count)));
          // Scatter: the root's input holds block r as "rank r's" data, so where it lands shows.
          std::vector<Mem> in = Unset(n, total);
          for (size_t i = 0; i < total; ++i) in[static_cast<size_t>(root)][i] = Leaf(static_cast<int>(i / count));
          std::vector<Mem> sout = Unset(n, count);
          sout[static_cast<size_t>(root)].assign(count, Leaf(root));
          auto q = Simulate(n, sc, in, sout, chunk);
          INFO(q.error);
          REQUIRE(q.ok);
          for (int k = 0; k < n; ++k)
            for (const Elem& v : q.out[static_cast<size_t>(k)]) REQUIRE(v == Leaf(k));
        }
}

TEST_CASE("binomial gather and scatter move every block through subtrees laid out relative to the root", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (int root = 0; root < n; ++root)
      for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(10)})
        for (size_t chunk : kChunks) {
          // Every rank's buffer holds its subtree's blocks in order relative to the root: block j
          // is rank (k + j) mod n's. The caller put its own block at 0 (gather).
          std::vector<Schedule> g, sc;
          std::vector<Mem> gout(static_cast<size_t>(n)), sin(static_cast<size_t>(n)), sout(static_cast<size_t>(n));
          for (int k = 0; k < n; ++k) {
            g.push_back(BinomialGather(k, n, root, count));
            sc.push_back(BinomialScatter(k, n, root, count));
            const size_t span = static_cast<size_t>(BinomialSpan(Mod(k - root, n), n));
            gout[static_cast<size_t>(k)] = Unset(1, span * count)[0];
            for (size_t i = 0; i < count; ++i) gout[static_cast<size_t>(k)][i] = Leaf(k);
            sout[static_cast<size_t>(k)] = Unset(1, span * count)[0];
            sin[static_cast<size_t>(k)] = sout[static_cast<size_t>(k)];
          }
          REQUIRE(BinomialSpan(0, n) == n);
          auto r = Simulate(n, g, Own(n, count), gout, chunk);
          INFO("n=" << n << " root=" << root << " count=" << count << " chunk=" << chunk << ": " << r.error);
          REQUIRE(r.ok);
          for (size_t i = 0; i < count * static_cast<size_t>(n); ++i)
            REQUIRE(r.out[static_cast<size_t>(root)][i] == Leaf(Mod(root + static_cast<int>(i / count), n)));
          // Scatter: the root's input holds block j as "rank root + j's" data, so where it lands shows.
          for (size_t i = 0; i < count * static_cast<size_t>(n); ++i)
            sin[static_cast<size_t>(root)][i] = Leaf(Mod(root + static_cast<int>(i / count), n));
          auto q = Simulate(n, sc, sin, sout, chunk);
          INFO(q.error);
          REQUIRE(q.ok);
          for (int k = 0; k < n; ++k) {
            if (k == root) continue;  // its own block is the caller's copy
            for (size_t i = 0; i < count; ++i) REQUIRE(q.out[static_cast<size_t>(k)][i] == Leaf(k));
          }
          // Serial: every unit waits for the one issued before it.
          const auto units = ExpandUnits(g[static_cast<size_t>(root)], chunk);
          for (size_t u = 1; u < units.size(); ++u) REQUIRE(units[u].dep == static_cast<int>(u) - 1);
        }
}

TEST_CASE("pairwise alltoall delivers block p of rank k to block k of rank p", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (size_t count : {size_t(0), size_t(1), size_t(7)})
      for (size_t chunk : kChunks) {
        const size_t total = count * static_cast<size_t>(n);
        std::vector<Schedule> s;
        // Element i of rank k's input is tagged with (k, destination i / count) as Leaf(k * n + p),
        // so each block's source and destination show where it lands (n <= 9: 81 tags fit 63 bits
        // only as hashes, so compare the expression, not the set).
        std::vector<Mem> in(static_cast<size_t>(n), Mem(total)), out = Unset(n, total);
        for (int k = 0; k < n; ++k) {
          s.push_back(PairwiseAlltoall(k, n, count));
          for (size_t i = 0; i < total; ++i) {
            const int p = static_cast<int>(i / count);
            in[static_cast<size_t>(k)][i] = Elem{1ull << k, Mix(static_cast<uint64_t>(k * n + p) + 1000)};
            if (p == k) out[static_cast<size_t>(k)][i] = in[static_cast<size_t>(k)][i];  // the caller's copy
          }
        }
        auto r = Simulate(n, s, in, out, chunk);
        INFO("n=" << n << " count=" << count << " chunk=" << chunk << ": " << r.error);
        REQUIRE(r.ok);
        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < total; ++i) {
            const int k = static_cast<int>(i / count);  // block k of rank p's output came from rank k
            REQUIRE(r.out[static_cast<size_t>(p)][i] == Elem{1ull << k, Mix(static_cast<uint64_t>(k * n + p) + 1000)});
          }
      }
}

TEST_CASE("dissemination barrier: every rank hears from every rank before it leaves", "[schedule]") {
  for (int n = 2; n <= 17; ++n) {
    std::vector<Schedule> s;
    for (int k = 0; k < n; ++k) s.push_back(DisseminationBarrier(k, n));
    auto r = Simulate(n, s, Own(n, 0), std::vector<Mem>(static_cast<size_t>(n)), 1);
    INFO("n=" << n << ": " << r.error);
    REQUIRE(r.ok);
    for (int k = 0; k < n; ++k) REQUIRE(r.heard[static_cast<size_t>(k)] == All(n));
  }
}

TEST_CASE("the binary tree is balanced and consistent", "[schedule]") {
  for (int n = 1; n <= 33; ++n) {
    BinaryTree t = BuildBinaryTree(n);
    int roots = 0, depth_max = 0;
    for (int p = 0; p < n; ++p) {
      if (t.parent[static_cast<size_t>(p)] < 0) ++roots;
      for (int c : t.children[static_cast<size_t>(p)]) REQUIRE(t.parent[static_cast<size_t>(c)] == p);
      int d = 0;
      for (int q = p; t.parent[static_cast<size_t>(q)] >= 0; q = t.parent[static_cast<size_t>(q)]) ++d;
      depth_max = std::max(depth_max, d);
    }
    REQUIRE(roots == 1);
    int log2n = 0;
    while ((1 << (log2n + 1)) <= n) ++log2n;
    REQUIRE(depth_max <= log2n);
  }
}

TEST_CASE("even splits cover the range without gaps", "[schedule]") {
  for (size_t count : kCounts)
    for (int n = 1; n <= 9; ++n) {
      size_t next = 0;
      for (int i = 0; i < n; ++i) {
        Range r = SplitEven(count, n, i);
        REQUIRE(r.begin == next);
        next += r.size;
      }
      REQUIRE(next == count);
    }
}

namespace {

// Per-rank counts with zeros among them, and a layout that puts the blocks in a shuffled order
// with gaps between them (MPI allows any displacements).
Blocks RandomBlocks(int n, uint64_t seed, size_t* extent) {
  Blocks b;
  for (int r = 0; r < n; ++r) b.counts.push_back(Mix(seed * 31 + static_cast<uint64_t>(r)) % 6);  // 0..5
  std::vector<int> order;
  for (int r = 0; r < n; ++r) order.push_back(r);
  for (int i = n - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)], order[Mix(seed + static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1)]);
  b.displs.assign(static_cast<size_t>(n), 0);
  size_t at = 0;
  for (int r : order) {
    at += Mix(seed ^ static_cast<uint64_t>(r)) % 3;  // a gap of 0..2
    b.displs[static_cast<size_t>(r)] = at;
    at += b.counts[static_cast<size_t>(r)];
  }
  *extent = at + 1;
  return b;
}

}  // namespace

TEST_CASE("ring allgatherv and reduce_scatterv move blocks of any sizes, laid out anywhere", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (uint64_t seed = 1; seed <= 6; ++seed)
      for (size_t chunk : kChunks) {
        size_t extent = 0;
        const Blocks b = RandomBlocks(n, seed, &extent);
        INFO("n=" << n << " seed=" << seed << " chunk=" << chunk);
        // allgatherv: rank k's own block (its whole input) lands at block k everywhere.
        std::vector<Schedule> s;
        std::vector<Mem> in, out = Unset(n, extent);
        for (int k = 0; k < n; ++k) {
          const size_t uk = static_cast<size_t>(k);
          s.push_back(RingAllgatherv(k, n, b));
          in.emplace_back(b.counts[uk], Leaf(k));
          for (size_t i = 0; i < b.counts[uk]; ++i) out[uk][b.displs[uk] + i] = Leaf(k);  // the caller's copy
        }
        auto r = Simulate(n, s, in, out, chunk);
        INFO(r.error);
        REQUIRE(r.ok);
        for (int k = 0; k < n; ++k)
          for (int p = 0; p < n; ++p)
            for (size_t i = 0; i < b.counts[static_cast<size_t>(p)]; ++i)
              REQUIRE(r.out[static_cast<size_t>(k)][b.displs[static_cast<size_t>(p)] + i] == Leaf(p));
        // reduce_scatterv: blocks back to back; block k complete and divided on rank k.
        const Blocks packed = PackedBlocks(b.counts);
        size_t total = 0;
        for (size_t c : b.counts) total += c;
        std::vector<Schedule> rs;
        for (int k = 0; k < n; ++k) rs.push_back(RingReduceScatterv(k, n, packed));
        auto q = Simulate(n, rs, Own(n, total), Unset(n, total), chunk);
        INFO(q.error);
        REQUIRE(q.ok);
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < packed.counts[static_cast<size_t>(k)]; ++i)
            REQUIRE(q.out[static_cast<size_t>(k)][packed.displs[static_cast<size_t>(k)] + i].set == (All(n) | kFinal));
      }
}

TEST_CASE("pairwise alltoallv delivers each pair's block, whatever its size and place", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (uint64_t seed = 1; seed <= 6; ++seed)
      for (size_t chunk : kChunks) {
        // counts[k][p]: what rank k sends rank p; rank k's send layout and rank p's receive layout.
        std::vector<Blocks> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n));
        std::vector<size_t> in_extent(static_cast<size_t>(n)), out_extent(static_cast<size_t>(n));
        for (int k = 0; k < n; ++k) send[static_cast<size_t>(k)] = RandomBlocks(n, seed * 100 + static_cast<uint64_t>(k), &in_extent[static_cast<size_t>(k)]);
        for (int p = 0; p < n; ++p) {
          std::vector<size_t> from;
          for (int k = 0; k < n; ++k) from.push_back(send[static_cast<size_t>(k)].counts[static_cast<size_t>(p)]);
          Blocks b = PackedBlocks(from);
          for (auto& d : b.displs) d = d * 2 + 1;  // gaps, and not where the sender had them
          recv[static_cast<size_t>(p)] = b;
          size_t end = 0;
          for (int k = 0; k < n; ++k) end = std::max(end, b.displs[static_cast<size_t>(k)] + b.counts[static_cast<size_t>(k)]);
          out_extent[static_cast<size_t>(p)] = end + 1;
        }
        std::vector<Schedule> s;
        std::vector<Mem> in, out;
        auto tag = [&](int k, int p, size_t i) { return Elem{1ull << k, Mix(static_cast<uint64_t>((k * n + p) * 64) + i)}; };
        for (int k = 0; k < n; ++k) {
          const size_t uk = static_cast<size_t>(k);
          s.push_back(PairwiseAlltoallv(k, n, send[uk], recv[uk]));
          in.emplace_back(in_extent[uk]);
          out.emplace_back(out_extent[uk]);
          for (int p = 0; p < n; ++p)
            for (size_t i = 0; i < send[uk].counts[static_cast<size_t>(p)]; ++i) in[uk][send[uk].displs[static_cast<size_t>(p)] + i] = tag(k, p, i);
          for (size_t i = 0; i < send[uk].counts[uk]; ++i) out[uk][recv[uk].displs[uk] + i] = tag(k, k, i);  // the caller's copy
        }
        auto r = Simulate(n, s, in, out, chunk);
        INFO("n=" << n << " seed=" << seed << " chunk=" << chunk << ": " << r.error);
        REQUIRE(r.ok);
        for (int p = 0; p < n; ++p)
          for (int k = 0; k < n; ++k)
            for (size_t i = 0; i < recv[static_cast<size_t>(p)].counts[static_cast<size_t>(k)]; ++i)
              REQUIRE(r.out[static_cast<size_t>(p)][recv[static_cast<size_t>(p)].displs[static_cast<size_t>(k)] + i] == tag(k, p, i));
      }
}
