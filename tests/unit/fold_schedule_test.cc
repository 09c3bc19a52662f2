// The deterministic schedules (schedules/fold.cc), checked by the simulator (schedule_sim.h):
// every element of every result holds every rank once, divided once, and combined in the one
// canonical order, the left fold over the ranks in rank order, the same expression whatever the
// count, the chunk size, the block it falls in, in place or not, and in whatever order the
// executor may run the units. The simulator's expression hash keeps operand order, so a fold in
// any other order (a ring's rotation, a tree) fails here.
#include <catch2/catch.hpp>

#include "tests/support/sanitized.h"
#include "tests/unit/schedule_sim.h"

using namespace hoop;
using namespace hoop::sim;

namespace {

// The canonical fold's expression over n ranks: ((x0 op x1) op x2) ... op x(n-1), divided.
Elem Canonical(int n) {
  Elem e = Leaf(0);
  for (int k = 1; k < n; ++k) e = {e.set | Leaf(k).set, Mix(e.expr * 31 + Mix(Leaf(k).expr))};
  e.set |= kFinal;
  return e;
}

// Runs the schedules in order and in three random orders; every element of `check` (rank, index)
// must be the canonical fold. Under a sanitizer one random order: the simulator, not the schedules
// the library builds, is most of the time there (the other two orders add 26 of the ASan unit
// run's 107 s), and the unsanitized suite runs all three.
template <typename Check>
void Expect(int n, const std::vector<Schedule>& s, size_t in_count, size_t out_count, size_t chunk, bool in_place,
            Check&& check) {
  auto r = Simulate(n, s, Own(n, in_count), Unset(n, out_count), chunk, in_place);
  INFO("in order: " << r.error);
  REQUIRE(r.ok);
  check(r);
  for (uint32_t seed : {1u, 2u, 3u}) {
    if (hoop::test::kSanitized && seed > 1) break;
    auto q = SimulateAnyOrder(n, s, Own(n, in_count), Unset(n, out_count), chunk, in_place, seed);
    INFO("any order, seed " << seed << ": " << q.error);
    REQUIRE(q.ok);
    check(q);
  }
}

}  // namespace

TEST_CASE("fold, fold_all and fold_root allreduce give every element the canonical fold on every rank",
          "[schedule][fold]") {
  Schedule (*make[])(int, int, size_t) = {&FoldAllreduce, &FoldAllAllreduce, &FoldRootAllreduce};
  const char* const names[] = {"fold", "fold_all", "fold_root"};
  for (int n = 2; n <= 9; ++n)
    for (size_t count : kCounts)
      for (size_t chunk : kChunks)
        for (int a = 0; a < 3; ++a)
          for (bool in_place : {false, true}) {
            std::vector<Schedule> s;
            for (int k = 0; k < n; ++k) s.push_back(make[a](k, n, count));
            INFO(names[a] << (in_place ? " in place" : "") << " n=" << n << " count=" << count << " chunk=" << chunk);
            const Elem want = Canonical(n);
            Expect(n, s, count, count, chunk, in_place, [&](const SimResult& r) {
              for (int k = 0; k < n; ++k)
                for (size_t i = 0; i < count; ++i) REQUIRE(r.out[static_cast<size_t>(k)][i] == want);
            });
          }
}

TEST_CASE("fold and fold_root reduce leave the canonical fold on the root", "[schedule][fold]") {
  for (auto make : {&FoldReduce, &FoldRootReduce})
    for (int n = 2; n <= 9; ++n)
      for (int root = 0; root < n; ++root)
        for (size_t count : kCounts)
          for (size_t chunk : kChunks)
            for (bool in_place : {false, true}) {
              std::vector<Schedule> s;
              for (int k = 0; k < n; ++k) s.push_back(make(k, n, root, count));
              INFO(s[0].algo << (in_place ? " in place" : "") << " n=" << n << " root=" << root << " count=" << count
                             << " chunk=" << chunk);
              const Elem want = Canonical(n);
              Expect(n, s, count, count, chunk, in_place, [&](const SimResult& r) {
                for (const Elem& v : r.out[static_cast<size_t>(root)]) REQUIRE(v == want);
              });
            }
}

TEST_CASE("a mid-size fold has one owner per kFoldBlockMin elements: 2k(n-1) messages, every element canonical",
          "[schedule][fold]") {
  const size_t m = kFoldBlockMin;
  for (int n : {2, 3, 4, 5, 8}) {
    CHECK(FoldOwners(n, 0) == 1);
    CHECK(FoldOwners(n, 2 * m - 1) == 1);
    CHECK(FoldOwners(n, 2 * m) == 2);
    CHECK(FoldOwners(n, 1000 * m) == n);
    for (size_t count : {m + 3, 2 * m + 1, 3 * m + 7, static_cast<size_t>(n) * m + 5}) {
      const int k = FoldOwners(n, count);
      for (size_t chunk : {size_t{1000}, size_t{1} << 20})
        for (bool in_place : {false, true}) {
          std::vector<Schedule> all, to_last;
          for (int r = 0; r < n; ++r) all.push_back(FoldAllreduce(r, n, count));
          for (int r = 0; r < n; ++r) to_last.push_back(FoldReduce(r, n, n - 1, count));
          INFO("n=" << n << " count=" << count << " owners=" << k << " chunk=" << chunk
                    << (in_place ? " in place" : ""));
          size_t messages = 0;
          for (const Schedule& rs : all)
            for (const Step& st : rs.steps) messages += st.send_peers.size();
          CHECK(messages == static_cast<size_t>(2 * k * (n - 1)));
          const Elem want = Canonical(n);
          Expect(n, all, count, count, chunk, in_place, [&](const SimResult& r) {
            for (int q = 0; q < n; ++q)
              for (size_t i = 0; i < count; ++i) REQUIRE(r.out[static_cast<size_t>(q)][i] == want);
          });
          Expect(n, to_last, count, count, chunk, in_place, [&](const SimResult& r) {
            for (const Elem& v : r.out[static_cast<size_t>(n - 1)]) REQUIRE(v == want);
          });
        }
    }
  }
}

TEST_CASE("fold reduce_scatter(v) leaves block r, the canonical fold, on rank r", "[schedule][fold]") {
  for (int n = 2; n <= 9; ++n)
    for (uint64_t seed = 0; seed <= 6; ++seed)
      for (size_t chunk : kChunks) {
        // seed 0: even blocks of 3; others: back to back blocks of 0..5 elements.
        std::vector<size_t> counts;
        for (int k = 0; k < n; ++k) counts.push_back(seed == 0 ? 3 : Mix(seed * 31 + static_cast<uint64_t>(k)) % 6);
        const Blocks b = PackedBlocks(counts);
        size_t total = 0;
        for (size_t c : counts) total += c;
        std::vector<Schedule> s;
        for (int k = 0; k < n; ++k) s.push_back(seed == 0 ? FoldReduceScatter(k, n, 3) : FoldReduceScatterv(k, n, b));
        INFO("n=" << n << " seed=" << seed << " chunk=" << chunk);
        const Elem want = Canonical(n);
        Expect(n, s, total, total, chunk, false, [&](const SimResult& r) {
          for (int k = 0; k < n; ++k) {
            const size_t uk = static_cast<size_t>(k);
            for (size_t i = 0; i < b.counts[uk]; ++i) REQUIRE(r.out[uk][b.displs[uk] + i] == want);
          }
        });
      }
}

// The check must be able to fail: the ring folds each block from a different first rank.
TEST_CASE("the canonical check tells the ring's order from the fold's", "[schedule][fold]") {
  const int n = 4;
  const size_t count = 8;
  std::vector<Schedule> s;
  for (int k = 0; k < n; ++k) s.push_back(RingAllreduce(k, n, count));
  auto r = Simulate(n, s, Own(n, count), Unset(n, count), 1000);
  REQUIRE(r.ok);
  size_t canonical = 0;
  for (size_t i = 0; i < count; ++i) canonical += r.out[0][i] == Canonical(n) ? 1 : 0;
  CHECK(canonical < count);
}
