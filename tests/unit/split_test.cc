// Sub-communicators through the in-process harness (tests/support/thread_ranks.h): a split and a
// dup used at the same time as their parent, from several threads of each rank, over real tcp
// and shm. Every call shares the parent's connections (transport/shared_transport.h), so this is
// where the hub's turns between threads are checked for exact values (and, under TSan, races).
#include <catch2/catch.hpp>

#include <atomic>
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

// A pipeline's shape: this thread sends activations and gradients as Work (the split's worker
// carries them) and takes the other side's with blocking RecvNow, while another thread of the
// same rank runs small allreduces on the parent, as the tensor fusion runtime's readiness
// exchange does. Neither may starve or lose the other's messages.
TEST_CASE("in-process: point-to-point on a split beside small allreduces on its parent", "[inproc][split]") {
  for (const char* transport : {"shm", "tcp"}) {
    const int n = 2, micros = 4;
    const size_t floats = 73728;
    auto t = ThreadRanks::Start(n, transport);
    INFO(transport << ": " << t.status().message());
    REQUIRE(t.ok());
    auto& ranks = **t;
    Status s = ranks.Run(
        [&](int rank, Communicator& world) -> Status {
          HOOP_ASSIGN_OR_RETURN(auto pipe, world.Split(0, rank));
          std::atomic<bool> done{false};
          Status side;
          std::thread other([&] {
            // The same count of allreduces on both ranks: each runs until both are done.
            for (int m = 0; side.ok(); ++m) {
              double v[2] = {done.load() ? 1.0 : 0.0, 1.0};
              side = world.Allreduce({v, 2, DType::kF64}, {v, 2, DType::kF64}, ReduceOp::kSum).Wait();
              if (side.ok() && v[1] != 2.0) side = Internal("parent allreduce: wrong value");
              if (v[0] == 2.0) break;
              std::this_thread::sleep_for(std::chrono::microseconds(500));
            }
          });
          Status mine;
          std::vector<std::vector<float>> out(micros, std::vector<float>(floats)),
              in(micros, std::vector<float>(floats));
          const int peer = 1 - rank;
          for (int step = 0; step < 300 && mine.ok(); ++step) {
            std::vector<Work> sends;
            for (int i = 0; i < micros && mine.ok(); ++i) {
              const int tag = rank == 0 ? 2 * i : 2 * i + 1;  // rank 0 sends activations, rank 1 gradients
              if (rank == 1) mine = pipe->RecvNow({in[i].data(), floats, DType::kF32}, peer, 2 * i);
              std::fill(out[i].begin(), out[i].end(), static_cast<float>(step * 10 + i) * (rank ? -1.0f : 1.0f));
              sends.push_back(pipe->Send({out[i].data(), floats, DType::kF32}, peer, tag));
              if (rank == 0) mine = pipe->RecvNow({in[i].data(), floats, DType::kF32}, peer, 2 * i + 1);
              const float want = static_cast<float>(step * 10 + i) * (rank ? 1.0f : -1.0f);
              if (mine.ok() && in[i][floats - 1] != want) mine = Internal("pipe message: wrong value");
            }
            for (Work& w : sends)
              if (Status st = w.Wait(); mine.ok()) mine = st;
          }
          done = true;
          other.join();
          HOOP_RETURN_IF_ERROR(mine);
          return side;
        },
        std::chrono::seconds(60));
    INFO(s.message());
    CHECK(s.ok());
  }
}
