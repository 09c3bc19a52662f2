// Plans: a schedule compiled once per call shape, and the cache that keeps them.
#include <catch2/catch.hpp>

#include "collectives/core/plan.h"

using namespace hoop;

TEST_CASE("a plan lists each peer's sends in unit order and who waits on whom", "[plan]") {
  // Rank 0 of 4, recursive doubling, 3 chunks: per round a send then a reduction that waits for it.
  Plan p = MakePlan(DoublingAllreduce(0, 4, 9), 3);
  REQUIRE(p.units.size() == 4 * 3);
  REQUIRE(p.sends.size() == 2);  // partners 1 and 2
  for (const auto& [peer, order] : p.sends) {
    REQUIRE(order.size() == 3);
    for (size_t i = 1; i < order.size(); ++i) CHECK(order[i - 1] < order[i]);
    for (int u : order) {
      const Step& st = p.schedule.steps[static_cast<size_t>(p.units[static_cast<size_t>(u)].step)];
      CHECK(st.send_peers == std::vector<int>{peer});
      // The round's reduction waits for this send.
      const int waiter = p.send_waiter[static_cast<size_t>(u)];
      REQUIRE(waiter >= 0);
      CHECK(p.units[static_cast<size_t>(waiter)].sent_dep == u);
    }
  }
}

TEST_CASE("the plan cache builds a shape once and stays bounded", "[plan]") {
  PlanCache cache(1, 4);
  PlanKey ring{CollKind::kAllreduce, Algo::kRing, -1, 1000, 64};
  const Plan* a = &cache.Get(ring);
  CHECK(&cache.Get(ring) == a);
  CHECK(cache.size() == 1);
  PlanKey other = ring;
  other.count = 999;
  CHECK(cache.Get(other).units.size() > 0);
  CHECK(cache.size() == 2);
  PlanKey bcast{CollKind::kBroadcast, Algo::kChain, 2, 1000, 64};
  CHECK(cache.Get(bcast).schedule.algo == "chain");
  for (size_t i = 0; i < PlanCache::kMaxPlans + 5; ++i) cache.Get({CollKind::kAllgather, Algo::kRing, -1, i, 8});
  CHECK(cache.size() <= PlanCache::kMaxPlans);
  // What the cache returns is what BuildSchedule makes for that shape.
  CHECK(cache.Get(ring).units.size() == ExpandUnits(RingAllreduce(1, 4, 1000), 64).size());
}

TEST_CASE("a plan is in order where every unit after a receive waits for it", "[plan]") {
  // The blocking interpreter walks these (collectives/core/blocking.cc): recursive doubling and the
  // dissemination barrier on every rank of every count, folds included.
  for (int n = 2; n <= 16; ++n)
    for (int r = 0; r < n; ++r) {
      INFO(n << " ranks, rank " << r);
      const Plan d = MakePlan(DoublingAllreduce(r, n, 7), 1024);
      CHECK(d.in_order);
      CHECK(d.one_chunk);
      CHECK(d.max_unit_count == 7);
      CHECK(MakePlan(DisseminationBarrier(r, n), 1024).in_order);
    }
  // Not these: the root's data need not wait for its roll call's receive (schedules/broadcast.cc),
  // nor an alltoall's later rounds for the earlier rounds' receives.
  CHECK_FALSE(MakePlan(BinomialBroadcast(0, 4, 0, 8), 1024).in_order);
  CHECK_FALSE(MakePlan(PairwiseAlltoall(1, 3, 8), 1024).in_order);
  // Nor a step sending to more peers than the interpreter's message ids can name.
  Schedule wide = DoublingAllreduce(0, 2, 7);
  REQUIRE(MakePlan(wide, 1024).in_order);
  Step& fan = wide.steps.back();
  fan.send_peers.assign(Plan::kInOrderSendPeers, 1);
  CHECK(MakePlan(wide, 1024).in_order);
  fan.send_peers.push_back(1);
  CHECK_FALSE(MakePlan(wide, 1024).in_order);
  // Many chunks: not one.
  const Plan many = MakePlan(DoublingAllreduce(0, 2, 100), 10);
  CHECK_FALSE(many.one_chunk);
  CHECK(many.max_unit_count == 10);
}
