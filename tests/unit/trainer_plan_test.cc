// The plans of hoop-train's strategies, as pure logic: a pipeline's split of layers over stages
// and its schedules (pipeline_plan.h), and the parameter servers' shards (ps_server.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>

#include "trainer/linear.h"
#include "trainer/pipeline_plan.h"
#include "trainer/ps_server.h"

using namespace hoop::train;

namespace {
double Slowest(const std::vector<double>& t, const std::vector<int>& first) {
  double worst = 0;
  for (size_t s = 0; s < first.size(); ++s) {
    const int end = s + 1 < first.size() ? first[s + 1] : static_cast<int>(t.size());
    worst = std::max(worst, std::accumulate(t.begin() + first[s], t.begin() + end, 0.0));
  }
  return worst;
}
}  // namespace

TEST_CASE("SplitLayers: contiguous stages whose slowest is as fast as any split's", "[trainer][pipeline]") {
  CHECK(SplitLayers({1, 1, 1, 1}, 2) == std::vector<int>{0, 2});
  CHECK(SplitLayers({5, 1, 1, 1, 1, 1}, 2) == std::vector<int>{0, 1});
  CHECK(SplitLayers({1, 2, 3}, 3) == std::vector<int>{0, 1, 2});
  CHECK(SplitLayers({4, 4, 4}, 1) == std::vector<int>{0});
  // Against every split of 7 layers into 3 stages.
  const std::vector<double> t{3, 1, 4, 1, 5, 9, 2};
  double best = 1e9;
  for (int a = 1; a < 7; ++a)
    for (int b = a + 1; b < 7; ++b) best = std::min(best, Slowest(t, {0, a, b}));
  const auto got = SplitLayers(t, 3);
  REQUIRE(got.size() == 3);
  CHECK(got[0] == 0);
  CHECK(std::is_sorted(got.begin(), got.end()));
  CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());  // no empty stage
  CHECK(Slowest(t, got) == best);
}

TEST_CASE("PipeSchedule: every micro-batch forward then backward, 1F1B bounded in flight", "[trainer][pipeline]") {
  for (const char* kind : {"gpipe", "1f1b"})
    for (int stages = 1; stages <= 4; ++stages)
      for (int stage = 0; stage < stages; ++stage)
        for (int micros = 1; micros <= 6; ++micros) {
          INFO(kind << " stage " << stage << "/" << stages << " micros " << micros);
          const auto ops = PipeSchedule(kind, stage, stages, micros);
          REQUIRE(ops.size() == static_cast<size_t>(2 * micros));
          std::vector<int> fwd(micros, -1), bwd(micros, -1);
          int in_flight = 0, most = 0, next_fwd = 0;
          for (size_t k = 0; k < ops.size(); ++k) {
            auto& at = ops[k].forward ? fwd : bwd;
            CHECK(at[ops[k].micro] == -1);
            at[ops[k].micro] = static_cast<int>(k);
            if (ops[k].forward) CHECK(ops[k].micro == next_fwd++);  // forwards in order: the stages agree
            in_flight += ops[k].forward ? 1 : -1;
            most = std::max(most, in_flight);
          }
          for (int i = 0; i < micros; ++i) CHECK(fwd[i] < bwd[i]);
          if (std::string(kind) == "1f1b")
            CHECK(most <= std::min(stages - stage, micros));
          else
            CHECK(most == micros);
        }
  // 1F1B on the last stage alternates from the start.
  CHECK(PipeSchedule("1f1b", 1, 2, 2) == std::vector<PipeOp>{{true, 0}, {false, 0}, {true, 1}, {false, 1}});
  CHECK(PipeSchedule("1f1b", 0, 2, 2) == std::vector<PipeOp>{{true, 0}, {true, 1}, {false, 0}, {false, 1}});
}

TEST_CASE("MicroBatches: as even as can be, none empty", "[trainer][pipeline]") {
  CHECK(MicroBatches(32, 4) == std::vector<int>{8, 8, 8, 8});
  CHECK(MicroBatches(10, 4) == std::vector<int>{3, 3, 2, 2});
  CHECK(MicroBatches(2, 4) == std::vector<int>{1, 1});
  CHECK(MicroBatches(0, 4).empty());
}

TEST_CASE("ShardParams: whole tensors dealt so the servers' shards weigh alike", "[trainer][ps]") {
  std::mt19937 rng(1);
  std::vector<std::unique_ptr<Linear>> layers;
  std::vector<Param*> params;
  for (int out : {100, 10, 60, 40, 5})
    layers.push_back(std::make_unique<Linear>("fc" + std::to_string(out), 10, out, rng));
  for (auto& l : layers)
    for (Param* p : l->Params()) params.push_back(p);
  const auto shards = ShardParams(params, 2);
  REQUIRE(shards.size() == 2);
  std::vector<int> all;
  std::vector<size_t> load(2, 0);
  for (int s = 0; s < 2; ++s) {
    CHECK(std::is_sorted(shards[s].begin(), shards[s].end()));  // the model's order
    for (int i : shards[s]) {
      all.push_back(i);
      load[s] += params[i]->value.size();
    }
  }
  std::sort(all.begin(), all.end());
  std::vector<int> every(params.size());
  std::iota(every.begin(), every.end(), 0);
  CHECK(all == every);  // each tensor on exactly one server
  // 2365 values, the largest tensor 1000: largest first, each to the lighter server, ends close.
  CHECK(std::max(load[0], load[1]) - std::min(load[0], load[1]) <= 100);
  CHECK(ShardParams(params, 1)[0] == every);
}
