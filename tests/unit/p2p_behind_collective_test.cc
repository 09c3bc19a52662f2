// Point-to-point traffic that leaves its sender behind a collective's message (Endpoint::AskHold,
// Mailbox::AskHold). A rank waits for a message from a peer before it joins a collective the
// peer has already started; what it waits for went out after the peer's first message of that
// collective, so it lies behind a message this rank has no receive for yet. MPI's progress rule
// makes each program here correct; without the hold each one stops until HOOP_TIMEOUT:
//  - a rendezvous payload, sent when the CTS came, after the sender entered an allgather;
//  - the CTS itself, sent by a receiver already inside an allreduce, to a sender waiting on it;
//  - eager sends that waited for credit, launched from inside the sender's allreduce.
// Over tcp and shm, nonblocking and blocking waits; rounds repeat the race.
#include <catch2/catch.hpp>

#include <vector>

#include "tests/support/thread_ranks.h"

using namespace hoop;
using hoop::test::ThreadRanks;

namespace {

constexpr size_t kRendezvous = 9604;  // int64s: past the eager limit, so it goes by RTS and CTS

Buffer Host(std::vector<int64_t>& v, size_t count) { return Buffer{v.data(), count, DType::kI64, MemKind::kHost}; }
Buffer Host(std::vector<int64_t>& v) { return Host(v, v.size()); }

Status Expect(bool ok, const std::string& what) { return ok ? Status::Ok() : Internal(what); }

std::unique_ptr<ThreadRanks> Start(int n, const std::string& transport, size_t unexpected_bytes = 0) {
  auto t = ThreadRanks::Start(n, transport, std::chrono::seconds(5), [&](CommOptions& o) {
    if (unexpected_bytes) o.unexpected_bytes = unexpected_bytes;
  });
  INFO(t.status().message());
  REQUIRE(t.ok());
  return std::move(t).value();
}

}  // namespace

TEST_CASE("p2p behind a collective: a payload sent on a CTS after its sender entered an allgather", "[inproc][p2p]") {
  for (const char* transport : {"shm", "tcp", "ucx", "ofi"}) {
    for (bool blocking : {false, true}) {
      auto ranks = Start(3, transport);
      for (int round = 0; round < 10; ++round) {
        Status s = ranks->Run(
            [&](int rank, Communicator& c) -> Status {
              const int n = c.size(), next = (rank + 1) % n, prev = (rank + n - 1) % n;
              std::vector<int64_t> mine(kRendezvous, rank), theirs(kRendezvous, -1), all(static_cast<size_t>(3 * n));
              Work send = c.Send(Host(mine), next, 29);
              HOOP_RETURN_IF_ERROR(blocking ? c.RecvNow(Host(theirs), prev, 29)
                                            : c.Recv(Host(theirs), prev, 29).Wait());
              HOOP_RETURN_IF_ERROR(c.Allgather(Host(mine, 3), Host(all)).Wait());
              HOOP_RETURN_IF_ERROR(send.Wait());
              HOOP_RETURN_IF_ERROR(Expect(theirs.front() == prev && theirs.back() == prev, "payload"));
              for (int r = 0; r < n; ++r)
                HOOP_RETURN_IF_ERROR(Expect(all[static_cast<size_t>(3 * r + 2)] == r, "allgather"));
              return Status::Ok();
            },
            std::chrono::seconds(30));
        INFO(transport << (blocking ? " blocking" : "") << ", round " << round << ": " << s.message());
        REQUIRE(s.ok());
      }
    }
  }
}

TEST_CASE("p2p behind a collective: a CTS sent from inside an allreduce to a sender waiting for it", "[inproc][p2p]") {
  for (const char* transport : {"shm", "tcp", "ucx", "ofi"}) {
    for (bool blocking : {false, true}) {
      auto ranks = Start(2, transport);
      for (int round = 0; round < 10; ++round) {
        Status s = ranks->Run(
            [&](int rank, Communicator& c) -> Status {
              std::vector<int64_t> msg(kRendezvous, rank == 0 ? 7 : -1), sum(5, rank + 1);
              if (rank == 0) {
                HOOP_RETURN_IF_ERROR(blocking ? c.SendNow(Host(msg), 1, 3) : c.Send(Host(msg), 1, 3).Wait());
                return c.Allreduce(Host(sum), Host(sum), ReduceOp::kSum).Wait();
              }
              Work recv = c.Recv(Host(msg), 0, 3);
              HOOP_RETURN_IF_ERROR(c.Allreduce(Host(sum), Host(sum), ReduceOp::kSum).Wait());
              HOOP_RETURN_IF_ERROR(recv.Wait());
              HOOP_RETURN_IF_ERROR(Expect(msg.front() == 7 && msg.back() == 7, "payload"));
              return Expect(sum[0] == 3 && sum[4] == 3, "allreduce");
            },
            std::chrono::seconds(30));
        INFO(transport << (blocking ? " blocking" : "") << ", round " << round << ": " << s.message());
        REQUIRE(s.ok());
      }
    }
  }
}

TEST_CASE("p2p behind a collective: eager sends that waited for credit, sent from inside an allreduce",
          "[inproc][p2p]") {
  for (const char* transport : {"shm", "tcp", "ucx", "ofi"}) {
    // 4 KiB of credit: three of the 1 KiB messages at a time; the rest go out as credit returns.
    auto ranks = Start(2, transport, 4096);
    Status s = ranks->Run(
        [&](int rank, Communicator& c) -> Status {
          constexpr int kMessages = 40;
          std::vector<std::vector<int64_t>> msgs(kMessages, std::vector<int64_t>(128));
          std::vector<int64_t> sum(5, rank + 1);
          if (rank == 0) {
            std::vector<Work> sends;
            for (int m = 0; m < kMessages; ++m) {
              msgs[static_cast<size_t>(m)].assign(128, m);
              sends.push_back(c.Send(Host(msgs[static_cast<size_t>(m)]), 1, 8));
            }
            HOOP_RETURN_IF_ERROR(c.Allreduce(Host(sum), Host(sum), ReduceOp::kSum).Wait());
            for (auto& w : sends) HOOP_RETURN_IF_ERROR(w.Wait());
            return Status::Ok();
          }
          for (int m = 0; m < kMessages; ++m) {
            auto& got = msgs[static_cast<size_t>(m)];
            HOOP_RETURN_IF_ERROR(c.Recv(Host(got), 0, 8).Wait());
            HOOP_RETURN_IF_ERROR(Expect(got.front() == m && got.back() == m, "message " + std::to_string(m)));
          }
          HOOP_RETURN_IF_ERROR(c.Allreduce(Host(sum), Host(sum), ReduceOp::kSum).Wait());
          return Expect(sum[0] == 3, "allreduce");
        },
        std::chrono::seconds(30));
    INFO(transport << ": " << s.message());
    REQUIRE(s.ok());
  }
}
