// The schedule simulator's two runs (schedule_sim.h): units in order, and in random orders that
// keep only what the executor keeps.
#include "tests/unit/schedule_sim.h"

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

namespace hoop::sim {
namespace {

// Does unit u's work on rank k with the message `data`: copies it into `o` or reduces it with the
// step's source, checking that nothing is counted twice or divided early.
template <typename Fail>
void Apply(int k, const Step& st, const Unit& u, const Mem& data, Mem& o, const Mem& in_k, uint64_t complete,
           Fail&& fail) {
  for (size_t i = 0; i < data.size(); ++i) {
    size_t oi = st.out_offset + u.offset + i;
    if (st.recv == RecvKind::kCopy) {
      o[oi] = data[i];
      continue;
    }
    Elem src = st.accumulate ? o[oi] : in_k[st.in_offset + u.offset + i];
    if (src.set == kUnset || data[i].set == kUnset)
      return fail("rank " + std::to_string(k) + ": reduces an unset element");
    if ((src.set | data[i].set) & kFinal)
      return fail("rank " + std::to_string(k) + ": reduces an already divided element");
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

// A fold unit's work on rank k (schedules/fold.cc): out = ((s0 op s1) op s2) ..., its operands a
// held message (held[i]) or, where held[i] is null, rank k's own input.
template <typename Fail>
void ApplyFold(int k, const Step& st, const Unit& u, const std::vector<const Mem*>& held, Mem& o, const Mem& in_k,
               uint64_t complete, Fail&& fail) {
  for (size_t i = 0; i < u.count; ++i) {
    const auto operand = [&](size_t j) { return held[j] ? (*held[j])[i] : in_k[st.in_offset + u.offset + i]; };
    Elem acc = operand(0);
    for (size_t j = 1; j < held.size(); ++j) {
      const Elem x = operand(j);
      if (acc.set == kUnset || x.set == kUnset) return fail("rank " + std::to_string(k) + ": folds an unset element");
      if ((acc.set | x.set) & kFinal) return fail("rank " + std::to_string(k) + ": folds an already divided element");
      if (acc.set & x.set) return fail("rank " + std::to_string(k) + ": folds a rank twice");
      acc = {acc.set | x.set, Mix(acc.expr * 31 + Mix(x.expr))};
    }
    if (st.finalize) {
      if (acc.set != complete) return fail("rank " + std::to_string(k) + ": divides an incomplete fold");
      acc.set |= kFinal;
    }
    o[st.out_offset + u.offset + i] = acc;
  }
}

}  // namespace

SimResult Simulate(int n, const std::vector<Schedule>& s, std::vector<Mem> in, std::vector<Mem> out, size_t chunk,
                   bool in_place) {
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
  std::vector<std::map<size_t, Mem>> held(static_cast<size_t>(n));  // per rank: kHold units' messages
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
        if (st.recv == RecvKind::kHold) {
          held[uk][ui] = staged[uk];
          received[uk] = false;
        } else if (st.recv != RecvKind::kNone) {
          Apply(k, st, u, staged[uk], o, in_of(uk), complete, fail);
          received[uk] = false;
        } else if (!u.fold.empty()) {
          std::vector<const Mem*> ops;
          for (int h : u.fold) ops.push_back(h < 0 ? nullptr : &held[uk][static_cast<size_t>(h)]);
          ApplyFold(k, st, u, ops, o, in_of(uk), complete, fail);
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
    return sp.recv == RecvKind::kCopy ||
           (sp.recv == RecvKind::kReduce && !sp.accumulate && un.dep < 0 && un.waits.empty());
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
  const size_t window = std::max(8 * static_cast<size_t>(std::max(1, s.empty() ? 1 : s[0].window_scale)),
                                 2 * static_cast<size_t>(s.empty() ? 0 : s[0].min_window));
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
        if (step_of(k, u).recv != RecvKind::kNone && !st[k][u].taken && wire.count(key_of(k, u)))
          takes.push_back({k, u});
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
      if (sp.recv != RecvKind::kNone && sp.recv != RecvKind::kHold && !st[k][u].landed)
        Apply(static_cast<int>(k), sp, units[k][u], st[k][u].staged, out[k], in_of(k), complete, fail);
      if (!units[k][u].fold.empty()) {  // the fold frees its held messages' window places
        std::vector<const Mem*> ops;
        for (int h : units[k][u].fold) ops.push_back(h < 0 ? nullptr : &st[k][static_cast<size_t>(h)].staged);
        ApplyFold(static_cast<int>(k), sp, units[k][u], ops, out[k], in_of(k), complete, fail);
        for (int h : units[k][u].fold) inflight[k] -= h >= 0 ? 1 : 0;
      }
      st[k][u].acted = true;
      if (sp.recv != RecvKind::kNone && sp.recv != RecvKind::kHold) --inflight[k];
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

}  // namespace hoop::sim
