// Plans: a Schedule compiled for the executor, and a cache of them by call shape.
//
// Building a schedule, cutting it into chunk units and working out who waits on whom costs a
// dozen allocations and more time than a small message's whole exchange over shared memory.
// Steps of training and benchmark loops repeat the same calls, so the communicator keeps the
// plans it built, keyed by everything a plan depends on (collective, algorithm, count, root,
// chunk); the rank and the rank count are the communicator's own. A repeated call then builds
// nothing. The cache holds at most kMaxPlans plans and starts afresh when full, so a stream of
// ever-new shapes costs what it did without a cache.
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collectives/core/algo.h"
#include "collectives/core/op_desc.h"
#include "collectives/schedules/schedule.h"

namespace hoop {

struct PlanKey {
  CollKind kind = CollKind::kAllreduce;
  Algo algo = Algo::kAuto;  // resolved
  int root = -1;
  size_t count = 0;  // the schedule's count (DescCount)
  size_t chunk_elems = 1;
  bool operator==(const PlanKey&) const = default;
};

struct Plan {
  Schedule schedule;
  std::vector<Unit> units;  // in issue order
  // Who waits on whom: unit u acts only after dep_count[u] others have (Unit::dep and waits), and
  // once it has, each of dependents[dependents_at[u] .. dependents_at[u + 1]) has one fewer to wait for.
  std::vector<uint32_t> dep_count;
  std::vector<uint32_t> dependents_at;
  std::vector<int> dependents;
  std::vector<int> send_waiter;  // per unit: the unit whose after_sent waits for it, or -1
  // Per peer sent to: the units that send to it, in unit order (the order messages must travel).
  std::vector<std::pair<int, std::vector<int>>> sends;
  // For the blocking interpreter (core/blocking.cc): the largest unit's count, whether every unit
  // is chunk 0, and whether the plan's order is its dependency order: at most kInOrderUnits units,
  // none sending to more than kInOrderSendPeers peers, and every unit after one that receives
  // waits for it (through dep, waits or sent_dep, directly
  // or not). Walked one unit after another, such a plan then waits for nothing the executor would
  // not; another (a rooted collective's roll call, whose data steps need not wait for it) would
  // hold each rank's later units behind a receive the executor lets them pass.
  size_t max_unit_count = 0;
  bool one_chunk = true;
  static constexpr size_t kInOrderUnits = 64;
  static constexpr size_t kInOrderSendPeers = 256;
  bool in_order = false;
};

// The schedule a call of this shape runs on `rank` of `size`.
Schedule BuildSchedule(const PlanKey& key, int rank, int size, const std::vector<int>* host_of = nullptr);
Plan MakePlan(Schedule schedule, size_t chunk_elems);

class PlanCache {
 public:
  static constexpr size_t kMaxPlans = 256;
  // host_of: each rank's host id (the hierarchical schedules'), empty where unknown.
  PlanCache(int rank, int size, std::vector<int> host_of = {})
      : rank_(rank), size_(size), host_of_(std::move(host_of)) {}
  // The plan for `key`, built on first use. Valid until the next Get.
  const Plan& Get(const PlanKey& key);
  size_t size() const { return plans_.size(); }
  // Counts the times the cache started afresh: a plan taken in the same epoch is still valid.
  uint64_t epoch() const { return epoch_; }
  bool Contains(const PlanKey& key) const { return plans_.count(key) > 0; }

 private:
  struct Hash {
    size_t operator()(const PlanKey& k) const;
  };
  int rank_, size_;
  std::vector<int> host_of_;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, Hash> plans_;
  // The last plan handed out: a loop of one call shape finds it without hashing.
  PlanKey last_key_;
  const Plan* last_ = nullptr;
  uint64_t epoch_ = 0;
};

}  // namespace hoop
