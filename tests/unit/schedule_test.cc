// Schedules as pure functions: every rank's schedule is run at once in a simulated network where
// an element is the set of ranks whose input it contains. A reduction must join disjoint sets
// (nothing counted twice), the average's division must happen exactly once and only on a
// complete set, every message must be received exactly once, and running each rank's units
// strictly in order must not deadlock (so the executor, which runs them with a window, cannot).
#include <catch2/catch.hpp>

#include <map>
#include <tuple>

#include "collectives/schedule.h"

using namespace hoop;

namespace {

constexpr uint64_t kUnset = ~0ull;
constexpr uint64_t kFinal = 1ull << 63;  // the average's division was applied

struct SimResult {
  std::vector<std::vector<uint64_t>> out;  // per rank
  std::vector<uint64_t> heard;             // per rank: ranks it has (transitively) heard from
  bool ok = true;
  std::string error;
};

SimResult Simulate(int n, const std::vector<Schedule>& s, const std::vector<std::vector<uint64_t>>& in,
                   std::vector<std::vector<uint64_t>> out, size_t chunk) {
  SimResult r;
  using Key = std::tuple<int, int, int, uint32_t>;  // src, dst, msg, chunk
  std::map<Key, std::pair<std::vector<uint64_t>, uint64_t>> wire;
  std::vector<std::vector<Unit>> units(static_cast<size_t>(n));
  std::vector<size_t> next(static_cast<size_t>(n), 0);
  r.heard.resize(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    units[static_cast<size_t>(k)] = ExpandUnits(s[static_cast<size_t>(k)], chunk);
    r.heard[static_cast<size_t>(k)] = 1ull << k;
  }
  auto fail = [&](const std::string& e) {
    if (r.ok) r.error = e;
    r.ok = false;
  };
  bool progress = true;
  while (progress && r.ok) {
    progress = false;
    for (int k = 0; k < n && r.ok; ++k) {
      const size_t uk = static_cast<size_t>(k);
      while (next[uk] < units[uk].size() && r.ok) {
        const Unit& u = units[uk][next[uk]];
        const Step& st = s[uk].steps[static_cast<size_t>(u.step)];
        auto& o = out[uk];
        if (st.recv != RecvKind::kNone) {
          Key key{st.recv_peer, k, st.recv_msg, u.chunk};
          auto it = wire.find(key);
          if (it == wire.end()) break;  // not there yet
          auto [data, heard] = it->second;
          wire.erase(it);
          r.heard[uk] |= heard;
          if (data.size() != u.count) fail("rank " + std::to_string(k) + ": message length differs from the step's");
          for (size_t i = 0; i < u.count && r.ok; ++i) {
            size_t oi = st.out_offset + u.offset + i;
            if (st.recv == RecvKind::kCopy) {
              o[oi] = data[i];
              continue;
            }
            uint64_t src = st.accumulate ? o[oi] : in[uk][st.in_offset + u.offset + i];
            if (src == kUnset || data[i] == kUnset) fail("rank " + std::to_string(k) + ": reduces an unset element");
            if ((src | data[i]) & kFinal) fail("rank " + std::to_string(k) + ": reduces an already divided element");
            if (src & data[i]) fail("rank " + std::to_string(k) + ": counts a rank twice");
            o[oi] = src | data[i];
            if (st.finalize) {
              if (o[oi] != (n == 64 ? ~0ull : (1ull << n) - 1)) fail("rank " + std::to_string(k) + ": divides an incomplete sum");
              o[oi] |= kFinal;
            }
          }
        }
        for (int p : st.send_peers) {
          std::vector<uint64_t> data(u.count);
          for (size_t i = 0; i < u.count; ++i)
            data[i] = st.send_from_in ? in[uk][st.in_offset + u.offset + i] : o[st.out_offset + u.offset + i];
          Key key{k, p, st.send_msg, u.chunk};
          if (wire.count(key)) fail("rank " + std::to_string(k) + " sends the same message twice");
          wire[key] = {data, r.heard[uk]};
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

uint64_t All(int n) { return (1ull << n) - 1; }

std::vector<std::vector<uint64_t>> Own(int n, size_t count) {
  std::vector<std::vector<uint64_t>> v;
  for (int k = 0; k < n; ++k) v.emplace_back(count, 1ull << k);
  return v;
}

const size_t kCounts[] = {0, 1, 2, 7, 10, 33, 100};
const size_t kChunks[] = {1, 3, 1000};

}  // namespace

TEST_CASE("ring and tree allreduce reduce every element exactly once from every rank", "[schedule]") {
  for (int n = 1; n <= 9; ++n)
    for (size_t count : kCounts)
      for (size_t chunk : kChunks)
        for (int tree = 0; tree < 2; ++tree) {
          std::vector<Schedule> s;
          for (int k = 0; k < n; ++k) s.push_back(tree ? TreeAllreduce(k, n, count) : RingAllreduce(k, n, count));
          auto r = Simulate(n, s, Own(n, count), std::vector<std::vector<uint64_t>>(n, std::vector<uint64_t>(count, kUnset)), chunk);
          INFO((tree ? "tree" : "ring") << " n=" << n << " count=" << count << " chunk=" << chunk << ": " << r.error);
          REQUIRE(r.ok);
          if (n == 1) continue;  // one rank: the communicator copies, no schedule
          for (int k = 0; k < n; ++k)
            for (uint64_t v : r.out[static_cast<size_t>(k)]) REQUIRE(v == (All(n) | kFinal));
        }
}

TEST_CASE("ring reduce-scatter leaves block r, complete, on rank r", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (size_t count : kCounts)
      for (size_t chunk : kChunks) {
        std::vector<Schedule> s;
        for (int k = 0; k < n; ++k) s.push_back(RingReduceScatter(k, n, count));
        size_t total = count * static_cast<size_t>(n);
        auto r = Simulate(n, s, Own(n, total), std::vector<std::vector<uint64_t>>(n, std::vector<uint64_t>(total, kUnset)), chunk);
        INFO("n=" << n << " count=" << count << " chunk=" << chunk << ": " << r.error);
        REQUIRE(r.ok);
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < count; ++i) REQUIRE(r.out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i] == (All(n) | kFinal));
      }
}

TEST_CASE("ring allgather puts rank i's block at block i everywhere", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (size_t count : kCounts)
      for (size_t chunk : kChunks) {
        std::vector<Schedule> s;
        std::vector<std::vector<uint64_t>> out(n, std::vector<uint64_t>(count * n, kUnset));
        for (int k = 0; k < n; ++k) {
          s.push_back(RingAllgather(k, n, count));
          for (size_t i = 0; i < count; ++i) out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i] = 1ull << k;  // the caller's copy
        }
        auto r = Simulate(n, s, Own(n, count), out, chunk);
        INFO("n=" << n << " count=" << count << " chunk=" << chunk << ": " << r.error);
        REQUIRE(r.ok);
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < count * static_cast<size_t>(n); ++i)
            REQUIRE(r.out[static_cast<size_t>(k)][i] == 1ull << (i / count));
      }
}

TEST_CASE("chain and binomial broadcast deliver the root's data to every rank", "[schedule]") {
  for (int n = 2; n <= 9; ++n)
    for (int root = 0; root < n; ++root)
      for (size_t count : {size_t(0), size_t(1), size_t(10)})
        for (int binomial = 0; binomial < 2; ++binomial) {
          std::vector<Schedule> s;
          std::vector<std::vector<uint64_t>> out(n, std::vector<uint64_t>(count, kUnset));
          out[static_cast<size_t>(root)].assign(count, 1ull << root);
          for (int k = 0; k < n; ++k)
            s.push_back(binomial ? BinomialBroadcast(k, n, root, count) : ChainBroadcast(k, n, root, count));
          auto r = Simulate(n, s, Own(n, count), out, 3);
          INFO((binomial ? "binomial" : "chain") << " n=" << n << " root=" << root << ": " << r.error);
          REQUIRE(r.ok);
          for (int k = 0; k < n; ++k)
            for (uint64_t v : r.out[static_cast<size_t>(k)]) REQUIRE(v == 1ull << root);
        }
}

TEST_CASE("dissemination barrier: every rank hears from every rank before it leaves", "[schedule]") {
  for (int n = 2; n <= 17; ++n) {
    std::vector<Schedule> s;
    for (int k = 0; k < n; ++k) s.push_back(DisseminationBarrier(k, n));
    auto r = Simulate(n, s, Own(n, 0), std::vector<std::vector<uint64_t>>(n), 1);
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
