// The stage map (collectives/stage_map.h) of every allreduce schedule, checked byte by byte
// against a brute-force reading of the plan: the input ranges cover each byte read exactly once,
// a unit's ranges cover what it reads, and each byte's final writer is the last unit in plan
// order that writes it.
#include <catch2/catch.hpp>

#include <vector>

#include "collectives/plan.h"
#include "collectives/stage_map.h"

using namespace hoop;

namespace {

void CheckMap(const Plan& plan, size_t esize, size_t bytes, const std::string& what) {
  INFO(what);
  const StageMap m = BuildStageMap(plan, esize);
  const size_t n = plan.units.size();
  REQUIRE(m.need.size() == n);
  REQUIRE(m.final_at.size() == n + 1);
  // Input: every byte read is in exactly one range; no range holds a byte nobody reads.
  std::vector<int> range_of(bytes, -1);
  for (size_t i = 0; i < m.in.size(); ++i) {
    REQUIRE(m.in[i].lo < m.in[i].hi);
    REQUIRE(m.in[i].hi <= bytes);
    for (size_t b = m.in[i].lo; b < m.in[i].hi; ++b) {
      REQUIRE(range_of[b] == -1);
      range_of[b] = static_cast<int>(i);
    }
  }
  std::vector<char> read(bytes, 0);
  std::vector<int> last_writer(bytes, -1);
  for (size_t u = 0; u < n; ++u) {
    const ByteRange r = UnitReadsIn(plan, u, esize);
    for (size_t b = r.lo; b < r.hi; ++b) {
      read[b] = 1;
      REQUIRE(range_of[b] >= 0);
      CHECK(static_cast<uint32_t>(range_of[b]) < m.need[u]);
    }
    if (r.lo == r.hi) CHECK(m.need[u] == 0);
    // Ranges come in first-read order: a unit needs at most the ranges up to its own reads'.
    if (r.lo < r.hi) {
      int top = -1;
      for (size_t b = r.lo; b < r.hi; ++b) top = std::max(top, range_of[b]);
      CHECK(m.need[u] == static_cast<uint32_t>(top + 1));
    }
    const ByteRange w = UnitWritesOut(plan, u, esize);
    for (size_t b = w.lo; b < w.hi; ++b) last_writer[b] = static_cast<int>(u);
  }
  for (size_t b = 0; b < bytes; ++b)
    if (!read[b]) CHECK(range_of[b] == -1);
  // Output: each byte is final at its last writer, and only there.
  std::vector<int> final_at(bytes, -1);
  size_t written = 0;
  for (size_t u = 0; u < n; ++u)
    for (uint32_t i = m.final_at[u]; i < m.final_at[u + 1]; ++i)
      for (size_t b = m.final[i].lo; b < m.final[i].hi; ++b) {
        REQUIRE(final_at[b] == -1);
        final_at[b] = static_cast<int>(u);
        ++written;
      }
  CHECK(final_at == last_writer);
  CHECK(m.written == written);
}

}  // namespace

TEST_CASE("stage map: each allreduce schedule's input in first-read order and its output's last writers", "[stage]") {
  for (int size : {2, 3, 4, 5, 8}) {
    for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kDoubling, Algo::kHierarchical}) {
      std::vector<int> hosts;
      for (int r = 0; r < size; ++r) hosts.push_back(size % 2 == 0 ? r / 2 : r);
      for (size_t count : {size_t{1}, size_t{7}, size_t{1001}}) {
        for (size_t chunk : {size_t{1}, size_t{16}, size_t{4096}}) {
          for (int rank = 0; rank < size; ++rank) {
            const PlanKey key{CollKind::kAllreduce, algo, -1, count, chunk};
            const Plan plan = MakePlan(BuildSchedule(key, rank, size, &hosts), chunk);
            const size_t esize = 4;
            CheckMap(plan, esize, count * esize,
                     std::string(AlgoName(algo)) + " size " + std::to_string(size) + " rank " + std::to_string(rank) +
                         " count " + std::to_string(count) + " chunk " + std::to_string(chunk));
            // Every allreduce reads its whole input and writes its whole output (pipelined
            // staging copies in only what is read and back only what is written).
            const StageMap m = BuildStageMap(plan, esize);
            size_t in_bytes = 0;
            for (const ByteRange& r : m.in) in_bytes += r.hi - r.lo;
            CHECK(in_bytes == count * esize);
            CHECK(m.written == count * esize);
          }
        }
      }
    }
  }
}

TEST_CASE("stage map: the ring reads its input a chunk at a time, the first chunk first", "[stage]") {
  // Rank 0 of 2, 8 chunks of 4 elements: the ring's first send is chunk 0 of segment 0.
  const Plan plan = MakePlan(RingAllreduce(0, 2, 32), 4);
  const StageMap m = BuildStageMap(plan, 4);
  REQUIRE(m.in.size() == 8);
  for (const ByteRange& r : m.in) CHECK(r.hi - r.lo == 16);
  // The first unit that reads needs only the first range.
  size_t first = 0;
  while (m.need[first] == 0) ++first;
  CHECK(m.need[first] == 1);
}
