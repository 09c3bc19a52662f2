// Schedules as pure functions, checked by the simulator (schedule_sim.h): the flat schedules
// (ring, tree, doubling, chains, trees, pairwise exchange, barrier) and the rank math under them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <tuple>

#include "tests/unit/schedule_sim.h"

using namespace hoop;
using namespace hoop::sim;

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
              for (size_t i = 0; i < count; ++i)
                REQUIRE(q.out[static_cast<size_t>(k)][i] == r.out[static_cast<size_t>(k)][i]);
          }
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
          for (size_t i = 0; i < count; ++i)
            REQUIRE(r.out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i].set == (All(n) | kFinal));
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
          for (size_t i = 0; i < count; ++i)
            out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i] = Leaf(k);  // the caller's copy
        }
        auto r = Simulate(n, s, Own(n, count), out, chunk);
        INFO("n=" << n << " count=" << count << " chunk=" << chunk << ": " << r.error);
        REQUIRE(r.ok);
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < count * static_cast<size_t>(n); ++i)
            REQUIRE(r.out[static_cast<size_t>(k)][i] == Leaf(static_cast<int>(i / count)));
      }
}

// The host-ordered chain: every root, any host map; it crosses between hosts H-1 times.
TEST_CASE("hierarchical broadcast delivers the root's data, crossing each host boundary once", "[schedule]") {
  const std::vector<std::vector<int>> maps = {{0, 0},         {0, 1}, {0, 1, 0, 1}, {0, 0, 1}, {0, 1, 2, 0, 1, 2},
                                              {7, 7, 3, 3, 3}};
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
            for (int p : s.back().steps.back().send_peers)
              crossings += host_of[static_cast<size_t>(p)] != host_of[static_cast<size_t>(k)];
          }
          auto r = seed == 0 ? Simulate(n, s, Own(n, count), out, 3)
                             : SimulateAnyOrder(n, s, Own(n, count), out, 3, false, seed);
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
            INFO((binomial ? "binomial" : "chain")
                 << " n=" << n << " root=" << root << " count=" << count << " chunk=" << chunk << ": " << r.error);
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
          for (size_t i = 0; i < count; ++i)
            out[static_cast<size_t>(root)][static_cast<size_t>(root) * count + i] = Leaf(root);
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
  for (int i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)],
              order[Mix(seed + static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1)]);
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
        for (int k = 0; k < n; ++k)
          send[static_cast<size_t>(k)] =
              RandomBlocks(n, seed * 100 + static_cast<uint64_t>(k), &in_extent[static_cast<size_t>(k)]);
        for (int p = 0; p < n; ++p) {
          std::vector<size_t> from;
          for (int k = 0; k < n; ++k) from.push_back(send[static_cast<size_t>(k)].counts[static_cast<size_t>(p)]);
          Blocks b = PackedBlocks(from);
          for (auto& d : b.displs) d = d * 2 + 1;  // gaps, and not where the sender had them
          recv[static_cast<size_t>(p)] = b;
          size_t end = 0;
          for (int k = 0; k < n; ++k)
            end = std::max(end, b.displs[static_cast<size_t>(k)] + b.counts[static_cast<size_t>(k)]);
          out_extent[static_cast<size_t>(p)] = end + 1;
        }
        std::vector<Schedule> s;
        std::vector<Mem> in, out;
        auto tag = [&](int k, int p, size_t i) {
          return Elem{1ull << k, Mix(static_cast<uint64_t>((k * n + p) * 64) + i)};
        };
        for (int k = 0; k < n; ++k) {
          const size_t uk = static_cast<size_t>(k);
          s.push_back(PairwiseAlltoallv(k, n, send[uk], recv[uk]));
          in.emplace_back(in_extent[uk]);
          out.emplace_back(out_extent[uk]);
          for (int p = 0; p < n; ++p)
            for (size_t i = 0; i < send[uk].counts[static_cast<size_t>(p)]; ++i)
              in[uk][send[uk].displs[static_cast<size_t>(p)] + i] = tag(k, p, i);
          for (size_t i = 0; i < send[uk].counts[uk]; ++i)
            out[uk][recv[uk].displs[uk] + i] = tag(k, k, i);  // the caller's copy
        }
        auto r = Simulate(n, s, in, out, chunk);
        INFO("n=" << n << " seed=" << seed << " chunk=" << chunk << ": " << r.error);
        REQUIRE(r.ok);
        for (int p = 0; p < n; ++p)
          for (int k = 0; k < n; ++k)
            for (size_t i = 0; i < recv[static_cast<size_t>(p)].counts[static_cast<size_t>(k)]; ++i)
              REQUIRE(r.out[static_cast<size_t>(p)][recv[static_cast<size_t>(p)].displs[static_cast<size_t>(k)] + i] ==
                      tag(k, p, i));
      }
}
