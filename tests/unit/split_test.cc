// Sub-communicators through the in-process harness (tests/support/thread_ranks.h): a split and a
// dup used at the same time as their parent, from several threads of each rank, over real tcp
// and shm. Every call shares the parent's connections (transport/shared_transport.h), so this is
// where the hub's turns between threads are checked for exact values (and, under TSan, races).
#include <catch2/catch.hpp>

#include <thread>

#include "tests/support/thread_ranks.h"

using namespace hoop;
using hoop::test::ThreadRanks;

namespace {
Status Expect(bool ok, const std::string& what) { return ok ? Status::Ok() : Internal(what); }
}  // namespace

TEST_CASE("in-process: a split, a dup and their parent all busy at once give exact values", "[inproc][split]") {
  for (const char* transport : {"tcp", "shm"}) {
    const int n = 4;
    auto t = ThreadRanks::Start(n, transport);
    INFO(transport << ": " << t.status().message());
    REQUIRE(t.ok());
    auto& ranks = **t;
    Status s = ranks.Run([&](int rank, Communicator& world) -> Status {
      // Odd and even ranks, each ordered by descending rank.
      HOOP_ASSIGN_OR_RETURN(auto sub, world.Split(rank % 2, -rank));
      HOOP_ASSIGN_OR_RETURN(auto dup, world.Dup());
      HOOP_RETURN_IF_ERROR(Expect(sub->size() == 2 && sub->rank() == (rank < 2 ? 1 : 0), "split rank"));
      // 16 world allreduces in flight (the world's worker runs them) ...
      const size_t count = 10001;
      std::vector<std::vector<int64_t>> w(16, std::vector<int64_t>(count));
      std::vector<Work> works;
      for (size_t k = 0; k < w.size(); ++k) {
        for (size_t j = 0; j < count; ++j) w[k][j] = static_cast<int64_t>(rank * 1000 + k + j);
        works.push_back(
            world.Allreduce({w[k].data(), count, DType::kI64}, {w[k].data(), count, DType::kI64}, ReduceOp::kSum));
      }
      // ... a second thread sends around a ring on the dup ...
      Status ring;
      std::thread other([&] {
        for (int m = 0; m < 50 && ring.ok(); ++m) {
          int out = rank * 100 + m, in = -1;
          Work send = dup->Send({&out, 1, DType::kI32}, (rank + 1) % n, m);
          ring = dup->Recv({&in, 1, DType::kI32}, (rank + n - 1) % n, m).Wait();
          if (ring.ok()) ring = send.Wait();
          if (ring.ok() && in != ((rank + n - 1) % n) * 100 + m) ring = Internal("dup ring: wrong value");
        }
      });
      // ... while this thread runs blocking allreduces on the split.
      Status mine;
      for (int m = 0; m < 50 && mine.ok(); ++m) {
        std::vector<float> v(777, static_cast<float>(rank + m));
        mine = sub->Allreduce({v.data(), v.size(), DType::kF32}, {v.data(), v.size(), DType::kF32}, ReduceOp::kSum,
                              CallOptions(Algo::kAuto, true))
                   .Wait();
        const float want = static_cast<float>((rank % 2) + (rank % 2 + 2) + 2 * m);
        if (mine.ok() && v[776] != want) mine = Internal("split allreduce: wrong value");
      }
      other.join();
      HOOP_RETURN_IF_ERROR(mine);
      HOOP_RETURN_IF_ERROR(ring);
      for (size_t k = w.size(); k-- > 0;) {
        HOOP_RETURN_IF_ERROR(works[k].Wait());
        for (size_t j = 0; j < count; j += 997)
          HOOP_RETURN_IF_ERROR(Expect(w[k][j] == static_cast<int64_t>(6000 + 4 * (k + j)), "world allreduce"));
      }
      return Status::Ok();
    });
    INFO(s.message());
    CHECK(s.ok());
  }
}
