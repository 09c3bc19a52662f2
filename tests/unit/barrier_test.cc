// The barrier (collectives/barrier.cc: dissemination as blocking exchanges on the caller's
// thread) through the in-process harness, ranks as threads over real tcp and shm: no rank
// leaves before every rank has entered, on 1-8 ranks, blocking and not, the last to come a
// different rank each round; a rank calling something else meanwhile gets "ranks disagree"
// rather than a hang; a rank that never comes is named when the others time out.
#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <thread>

#include "tests/support/thread_ranks.h"

using namespace hoop;
using hoop::test::ThreadRanks;

namespace {

std::unique_ptr<ThreadRanks> Ranks(int n, const std::string& transport,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto t = ThreadRanks::Start(n, transport, timeout);
  INFO(t.status().message());
  REQUIRE(t.ok());
  return std::move(t).value();
}

}  // namespace

TEST_CASE("barrier: no rank leaves before every rank has entered, 1-8 ranks, blocking and not", "[inproc][barrier]") {
  constexpr int kRounds = 12;
  for (const char* transport : {"shm", "tcp"}) {
    for (int n = 1; n <= 8; ++n) {
      auto ranks = Ranks(n, transport);
      std::vector<std::atomic<int>> entered(kRounds);
      for (auto& e : entered) e = 0;
      Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
        std::mt19937 rng(static_cast<unsigned>(rank * 7919 + n));
        for (int r = 0; r < kRounds; ++r) {
          // The round's latecomer sleeps longest: every rank in turn, then random ones.
          const int late = r < n ? r : static_cast<int>(rng() % static_cast<unsigned>(n));
          if (rank == late)
            std::this_thread::sleep_for(std::chrono::milliseconds(3 + r % 3));
          else if (rng() % 2)
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
          entered[static_cast<size_t>(r)].fetch_add(1);
          CallOptions o;
          o.blocking = r % 3 != 2;  // every third round through the worker thread
          HOOP_RETURN_IF_ERROR(c.Barrier(o).Wait());
          const int in = entered[static_cast<size_t>(r)].load();
          if (in != n)
            return Internal("rank " + std::to_string(rank) + " left barrier round " + std::to_string(r) + " with " +
                            std::to_string(in) + " of " + std::to_string(n) + " ranks entered");
        }
        return Status::Ok();
      });
      INFO(transport << ", " << n << " ranks");
      CHECK(s.ToString() == Status::Ok().ToString());
    }
  }
}

TEST_CASE("barrier: a rank allreducing meanwhile gets 'ranks disagree', not a hang", "[inproc][barrier]") {
  for (const char* transport : {"shm", "tcp"}) {
    auto ranks = Ranks(2, transport);
    std::vector<std::string> said(2);
    const auto t0 = std::chrono::steady_clock::now();
    (void)ranks->Run([&](int rank, Communicator& c) -> Status {
      float x = 1, y = 0;
      Status s = rank == 0 ? c.Barrier().Wait()
                           : c.Allreduce(Buffer{&x, 1, DType::kF32, MemKind::kHost},
                                         Buffer{&y, 1, DType::kF32, MemKind::kHost}, ReduceOp::kSum)
                                 .Wait();
      said[static_cast<size_t>(rank)] = s.message();
      return s;
    });
    INFO(transport << ": rank 0: " << said[0] << "\nrank 1: " << said[1]);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    // Whoever gets the other's message first names the difference; the other hears the abort.
    const bool named =
        said[0].find("ranks disagree") != std::string::npos || said[1].find("ranks disagree") != std::string::npos;
    CHECK(named);
    CHECK(said[0].find("barrier") != std::string::npos);
    CHECK_FALSE(said[1].empty());
  }
}

TEST_CASE("barrier: a rank that never comes is named when the others time out", "[inproc][barrier]") {
  for (const char* transport : {"shm", "tcp"}) {
    auto ranks = Ranks(3, transport, std::chrono::milliseconds(500));
    std::vector<std::string> said(3);
    (void)ranks->Run([&](int rank, Communicator& c) -> Status {
      if (rank == 1) {  // never comes (until the others have given up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        return Status::Ok();
      }
      Status s = c.Barrier().Wait();
      said[static_cast<size_t>(rank)] = s.message();
      return s;
    });
    for (int rank : {0, 2}) {
      INFO(transport << ": rank " << rank << ": " << said[static_cast<size_t>(rank)]);
      // Either it timed out itself waiting for rank 1, or it heard so from the rank that did.
      // HOOP_TIMEOUT 0.5 s: half waited, half left to find who stopped (stall.h).
      CHECK(said[static_cast<size_t>(rank)].find("timed out after 0.25 s (HOOP_TIMEOUT 0.5 s, less 0.25 s") !=
            std::string::npos);
      CHECK(said[static_cast<size_t>(rank)].find("waiting for rank") != std::string::npos);
    }
  }
}
