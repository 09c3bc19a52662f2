// The stage map (collectives/device/stage_map.h) of every schedule pipelined staging runs, checked byte
// by byte against a brute-force reading of the plan: the input ranges cover each byte read
// exactly once (of `in`, and of `out` before the plan writes it), a unit's ranges cover what it
// reads, and each byte's final writer is the last unit in plan order that writes it.
#include <catch2/catch.hpp>

#include <vector>

#include "collectives/core/plan.h"
#include "collectives/device/stage_map.h"

using namespace hoop;

namespace {

// Returns the bytes of `out` the plan reads before writing them.
size_t CheckMap(const Plan& plan, size_t esize, size_t in_bytes, size_t bytes, const std::string& what) {
  INFO(what);
  const StageMap m = BuildStageMap(plan, esize);
  const size_t n = plan.units.size();
  REQUIRE(m.need.size() == n);
  REQUIRE(m.final_at.size() == n + 1);
  // Input: every byte read is in exactly one range; no range holds a byte nobody reads.
  std::vector<int> range_of[2] = {std::vector<int>(in_bytes, -1), std::vector<int>(bytes, -1)};
  for (size_t i = 0; i < m.in.size(); ++i) {
    REQUIRE(m.in[i].lo < m.in[i].hi);
    REQUIRE(m.in[i].hi <= range_of[m.in[i].out].size());
    for (size_t b = m.in[i].lo; b < m.in[i].hi; ++b) {
      REQUIRE(range_of[m.in[i].out][b] == -1);
      range_of[m.in[i].out][b] = static_cast<int>(i);
    }
  }
  std::vector<char> read[2] = {std::vector<char>(in_bytes, 0), std::vector<char>(bytes, 0)};
  std::vector<char> wrote(bytes, 0);
  std::vector<int> last_writer(bytes, -1);
  for (size_t u = 0; u < n; ++u) {
    const Step& st = plan.schedule.steps[static_cast<size_t>(plan.units[u].step)];
    const bool write_first = !(st.recv == RecvKind::kReduce && st.accumulate);
    const ByteRange w = UnitWritesOut(plan, u, esize);
    const ByteRange r = UnitReadsIn(plan, u, esize);
    const ByteRange ro = UnitReadsOut(plan, u, esize);
    if (write_first)
      for (size_t b = w.lo; b < w.hi; ++b) wrote[b] = 1;
    // What this unit reads that must be staged: `in`, and `out` not written yet.
    int top = -1;
    for (size_t b = r.lo; b < r.hi; ++b) {
      read[0][b] = 1;
      REQUIRE(range_of[0][b] >= 0);
      top = std::max(top, range_of[0][b]);
    }
    for (size_t b = ro.lo; b < ro.hi; ++b) {
      if (wrote[b]) continue;
      read[1][b] = 1;
      REQUIRE(range_of[1][b] >= 0);
      top = std::max(top, range_of[1][b]);
    }
    // Ranges come in first-read order: a unit needs exactly the ranges up to its own reads'.
    CHECK(m.need[u] == static_cast<uint32_t>(top + 1));
    for (size_t b = w.lo; b < w.hi; ++b) {
      last_writer[b] = static_cast<int>(u);
      wrote[b] = 1;
    }
  }
  size_t preread = 0;
  for (int side : {0, 1})
    for (size_t b = 0; b < read[side].size(); ++b) {
      if (!read[side][b]) CHECK(range_of[side][b] == -1);
      preread += side == 1 && read[side][b];
    }
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
  return preread;
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
            const size_t preread = CheckMap(plan, esize, count * esize, count * esize,
                                            std::string(AlgoName(algo)) + " size " + std::to_string(size) + " rank " +
                                                std::to_string(rank) + " count " + std::to_string(count) + " chunk " +
                                                std::to_string(chunk));
            CHECK(preread == 0);
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

TEST_CASE(
    "stage map: broadcast, allgather and reduce-scatter; only a hierarchical allgather reads its own block from out",
    "[stage]") {
  for (CollKind kind : {CollKind::kBroadcast, CollKind::kAllgather, CollKind::kReduceScatter})
    for (int a = 1; a <= static_cast<int>(Algo::kHierarchical); ++a) {
      const Algo algo = static_cast<Algo>(a);
      if (!FindAlgo(kind, algo)) continue;
      for (int size : {2, 3, 4, 6}) {
        std::vector<int> hosts;
        for (int r = 0; r < size; ++r) hosts.push_back(r / 2);
        for (size_t count : {size_t{1}, size_t{7}, size_t{1001}})
          for (int rank = 0; rank < size; ++rank) {
            const size_t esize = 4, n = static_cast<size_t>(size), chunk = 16;
            const PlanKey key{kind, algo, kind == CollKind::kBroadcast ? size - 1 : -1, count, chunk};
            const Plan plan = MakePlan(BuildSchedule(key, rank, size, &hosts), chunk);
            const size_t in = kind == CollKind::kReduceScatter ? n * count : count;
            const size_t out = kind == CollKind::kBroadcast ? count : n * count;
            const std::string what = std::string(CollKindName(kind)) + " " + AlgoName(algo) + " size " +
                                     std::to_string(size) + " rank " + std::to_string(rank) + " count " +
                                     std::to_string(count);
            const size_t preread = CheckMap(plan, esize, in * esize, out * esize, what);
            INFO(what);
            if (kind == CollKind::kAllgather && algo == Algo::kHierarchical && size % 2 == 0)
              CHECK(preread == count * esize);  // its own block, placed by the caller (hosts of 2 ranks)
            else
              CHECK(preread == 0);
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
