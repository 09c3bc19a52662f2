// The hierarchical schedules over host maps (schedules/hierarchical*.cc, broadcast.cc), checked by
// the simulator (schedule_sim.h) in order and in random orders: allreduce, allgather,
// reduce-scatter, broadcast, and what waits for what.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <tuple>

#include "tests/unit/schedule_sim.h"

using namespace hoop;
using namespace hoop::sim;

// Hierarchical allreduce over host maps: contiguous and interleaved hosts, one rank per host and
// one host (degenerate rings), and uneven hosts (the flat ring instead).
TEST_CASE("hierarchical allreduce reduces every element exactly once, alike on every rank, for any host map",
          "[schedule]") {
  std::vector<std::vector<int>> maps = {{0, 0},
                                        {0, 1},
                                        {0, 0, 1, 1},
                                        {0, 1, 0, 1},
                                        {0, 0, 0, 1, 1, 1},
                                        {0, 0, 1, 1, 2, 2},
                                        {5, 5, 5, 5, 9, 9, 9, 9},
                                        {0, 1, 2, 3, 0, 1, 2, 3},
                                        {0, 0, 0, 0},
                                        {0, 1, 2, 3},
                                        {0, 0, 1},
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
              for (size_t i = 0; i < count; ++i)
                REQUIRE(q.out[static_cast<size_t>(k)][i] == r.out[static_cast<size_t>(k)][i]);
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
  REQUIRE(p.steps.size() == 4 * (2 + 3 + 2));                          // A: 2 steps, B: 3 (two hosts), C: 2
  CHECK(p.steps[2].after.empty());                                     // A1, right after A0
  CHECK(p.steps[4].after == std::vector<int>{1});                      // B0 on A0's last
  CHECK(p.steps[9].after == std::vector<int>{3});                      // B1 (issued after A2, 7-8) on A1's last (3)
  CHECK(p.steps[12].after == std::vector<int>{4, 5, 6});               // C0 on B0
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

// Hierarchical allgather and reduce-scatter over the same host maps, in order and out of order.
TEST_CASE("hierarchical allgather and reduce-scatter match the ring's layouts for any host map", "[schedule]") {
  const std::vector<std::vector<int>> maps = {{0, 0},
                                              {0, 1},
                                              {0, 0, 1, 1},
                                              {0, 1, 0, 1},
                                              {0, 0, 0, 1, 1, 1},
                                              {0, 0, 1, 1, 2, 2},
                                              {5, 5, 5, 5, 9, 9, 9, 9},
                                              {0, 1, 2, 3, 0, 1, 2, 3},
                                              {0, 0, 0, 0},
                                              {0, 1, 2},
                                              {0, 0, 1}};
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
            for (size_t i = 0; i < count; ++i)
              out[static_cast<size_t>(k)][static_cast<size_t>(k) * count + i] = Leaf(k);
          }
          auto r = sim(ag, Own(n, count), out);
          INFO("allgather: " << r.error);
          REQUIRE(r.ok);
          for (int k = 0; k < n; ++k)
            for (size_t i = 0; i < total; ++i)
              REQUIRE(r.out[static_cast<size_t>(k)][i] == Leaf(static_cast<int>(i / count)));
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
