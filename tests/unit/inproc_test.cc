// Exact values through the in-process harness (tests/support/thread_ranks.h): ranks as threads
// over real tcp and shm back ends. Collectives against the reference on every dtype and op at
// counts 0, 1, 7 and a large odd one; 16 nonblocking allreduces waited in reverse; queued calls
// waited in another order on each rank from two threads (run on the waiting thread); point-to-point
// between random pairs received out of order, any-source, info, and ordering within one tag; the
// blocking calls without a Work (SendNow, RecvNow) at every size class, refusals of a message
// handed to a receive already posted, and behind a nonblocking collective.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "collectives/testing/reference.h"
#include "tests/support/thread_ranks.h"

using namespace hoop;
using hoop::test::ThreadRanks;

namespace {

std::unique_ptr<ThreadRanks> Ranks(int n, const std::string& transport) {
  auto t = ThreadRanks::Start(n, transport);
  INFO(t.status().message());
  REQUIRE(t.ok());
  return std::move(t).value();
}

Status Expect(bool ok, const std::string& what) { return ok ? Status::Ok() : Internal(what); }

}  // namespace

TEST_CASE("in-process: allreduce and reduce give the reference's exact values, every dtype and op", "[inproc]") {
  for (const char* transport : {"tcp", "shm"}) {
    for (int n : {1, 3, 4}) {
      auto ranks = Ranks(n, transport);
      Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
        for (DType d : kAllDTypes) {
          for (ReduceOp op : kAllReduceOps) {
            if (!OpApplies(d, op)) continue;
            for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{40001}}) {
              const size_t bytes = count * DTypeSize(d) + 1;
              std::vector<std::vector<char>> inputs(static_cast<size_t>(n), std::vector<char>(bytes));
              std::vector<const void*> ptrs;
              for (int r = 0; r < n; ++r) {
                FillInput(d, op, inputs[static_cast<size_t>(r)].data(), count, 1000 * count + static_cast<uint64_t>(r));
                ptrs.push_back(inputs[static_cast<size_t>(r)].data());
              }
              std::vector<char> want(bytes), got(bytes), root_got(bytes);
              ReferenceReduce(d, op, ptrs, want.data(), count);
              Buffer in{inputs[static_cast<size_t>(rank)].data(), count, d, MemKind::kHost};
              Buffer out{got.data(), count, d, MemKind::kHost}, rout{root_got.data(), count, d, MemKind::kHost};
              HOOP_RETURN_IF_ERROR(c.Allreduce(in, out, op).Wait());
              HOOP_RETURN_IF_ERROR(c.Reduce(in, rout, op, n - 1).Wait());
              const std::string what = std::string(DTypeName(d)) + " " + ReduceOpName(op) + " count " +
                                       std::to_string(count) + " rank " + std::to_string(rank);
              HOOP_RETURN_IF_ERROR(
                  Expect(CountMismatches(d, got.data(), want.data(), count) == 0, "allreduce " + what));
              if (rank == n - 1)
                HOOP_RETURN_IF_ERROR(
                    Expect(CountMismatches(d, root_got.data(), want.data(), count) == 0, "reduce " + what));
            }
          }
        }
        return Status::Ok();
      });
      INFO(transport << ", " << n << " ranks: " << s.message());
      CHECK(s.ok());
    }
  }
}

TEST_CASE("in-process: 16 nonblocking allreduces in flight, waited in reverse", "[inproc]") {
  auto ranks = Ranks(4, "shm");
  Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
    std::vector<std::vector<int64_t>> bufs;
    std::vector<Work> works;
    for (int k = 0; k < 16; ++k) {
      bufs.emplace_back(static_cast<size_t>(k * 977 + 1), int64_t{rank + k});
      Buffer b{bufs.back().data(), bufs.back().size(), DType::kI64, MemKind::kHost};
      works.push_back(c.Allreduce(b, b, ReduceOp::kSum));
    }
    for (int k = 15; k >= 0; --k) {
      HOOP_RETURN_IF_ERROR(works[static_cast<size_t>(k)].Wait());
      const int64_t want = 0 + 1 + 2 + 3 + 4 * k;
      for (int64_t v : bufs[static_cast<size_t>(k)])
        HOOP_RETURN_IF_ERROR(Expect(v == want, "allreduce " + std::to_string(k) + ": " + std::to_string(v)));
    }
    return Status::Ok();
  });
  INFO(s.message());
  CHECK(s.ok());
}

// A Work waited while its operation is still queued runs it, and those ahead of it, on the
// waiting thread (Work::Wait): each rank here waits on every third collective as soon as it is
// queued (often before the worker wakes), then on the rest in its own order from two threads, over
// collectives of three kinds with sends and receives among them (which the worker keeps), so the
// operations must still run in the order they were queued on every rank.
TEST_CASE("in-process: queued calls waited in a different order on each rank, from two threads", "[inproc]") {
  for (const char* transport : {"tcp", "shm"}) {
    auto ranks = Ranks(3, transport);
    Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
      const int n = c.size(), kCalls = 40;
      std::vector<std::vector<int64_t>> in(kCalls), out(kCalls);
      std::vector<Work> works;
      for (int k = 0; k < kCalls; ++k) {
        const size_t count = static_cast<size_t>(k % 7 == 0 ? 1 : k * 331 + 5);
        in[static_cast<size_t>(k)].assign(count, int64_t{rank * 1000 + k});
        auto& i = in[static_cast<size_t>(k)];
        auto& o = out[static_cast<size_t>(k)];
        Buffer b{i.data(), i.size(), DType::kI64, MemKind::kHost};
        if (k % 5 == 4) {  // a ring exchange: send right, receive from the left
          o.assign(count, -1);
          works.push_back(c.Send(b, (rank + 1) % n, k));
          works.push_back(c.Recv(Buffer{o.data(), o.size(), DType::kI64, MemKind::kHost}, (rank + n - 1) % n, k));
        } else if (k % 3 == 0) {
          o.assign(count * static_cast<size_t>(n), -1);
          works.push_back(c.Allgather(b, Buffer{o.data(), o.size(), DType::kI64, MemKind::kHost}));
        } else if (k % 3 == 1) {
          works.push_back(c.Broadcast(b, b, k % n));
        } else {
          works.push_back(c.Allreduce(b, b, ReduceOp::kSum));
        }
        if (k % 3 == 2 && k % 5 != 4) HOOP_RETURN_IF_ERROR(works.back().Wait());
      }
      std::vector<size_t> order(works.size());
      for (size_t j = 0; j < order.size(); ++j) order[j] = j;
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<uint32_t>(rank) * 7919u + 1u));
      Status st[2];
      std::thread other([&] {
        for (size_t j = 1; j < order.size() && st[1].ok(); j += 2) st[1] = works[order[j]].Wait();
      });
      for (size_t j = 0; j < order.size() && st[0].ok(); j += 2) st[0] = works[order[j]].Wait();
      other.join();
      HOOP_RETURN_IF_ERROR(st[0]);
      HOOP_RETURN_IF_ERROR(st[1]);
      for (int k = 0; k < kCalls; ++k) {
        const auto& i = in[static_cast<size_t>(k)];
        const auto& o = out[static_cast<size_t>(k)];
        const std::string what = "call " + std::to_string(k);
        for (size_t e = 0; e < i.size(); ++e) {
          if (k % 5 == 4) {
            HOOP_RETURN_IF_ERROR(Expect(o[e] == ((rank + n - 1) % n) * 1000 + k, what));
          } else if (k % 3 == 0) {
            for (int r = 0; r < n; ++r)
              HOOP_RETURN_IF_ERROR(Expect(o[static_cast<size_t>(r) * i.size() + e] == r * 1000 + k, what));
          } else if (k % 3 == 1) {
            HOOP_RETURN_IF_ERROR(Expect(i[e] == (k % n) * 1000 + k, what));
          } else {
            HOOP_RETURN_IF_ERROR(Expect(i[e] == (0 + 1 + 2) * 1000 + 3 * k, what));
          }
        }
      }
      return Status::Ok();
    });
    INFO(transport << ": " << s.message());
    CHECK(s.ok());
  }
}

TEST_CASE("in-process: point-to-point between random pairs, any source, in order within a tag", "[inproc][p2p]") {
  for (const char* transport : {"tcp", "shm"}) {
    const int n = 4;
    auto ranks = Ranks(n, transport);
    // The same plan on every rank: 300 messages of random sizes between random pairs.
    struct Msg {
      int src, dst;
      size_t count;
    };
    std::vector<Msg> plan;
    std::mt19937 rng(7);
    for (int m = 0; m < 300; ++m) {
      const size_t count = rng() % 4 == 0 ? rng() % 40000 : rng() % 20;
      plan.push_back({static_cast<int>(rng() % n), static_cast<int>(rng() % n), count});
    }
    auto value = [](int m, size_t i) { return static_cast<int32_t>(m * 100003 + static_cast<int>(i)); };
    Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
      std::vector<std::vector<int32_t>> out(plan.size()), in(plan.size());
      std::vector<std::shared_ptr<RecvInfo>> info(plan.size());
      std::vector<Work> works;
      for (size_t m = 0; m < plan.size(); ++m) {
        if (plan[m].src != rank) continue;
        for (size_t i = 0; i < plan[m].count; ++i) out[m].push_back(value(static_cast<int>(m), i));
        works.push_back(c.Send(Buffer{out[m].data(), plan[m].count, DType::kI32, MemKind::kHost}, plan[m].dst,
                               static_cast<int>(m)));
      }
      for (size_t m = plan.size(); m-- > 0;) {  // in reverse: most arrive before their receive
        if (plan[m].dst != rank) continue;
        in[m].assign(plan[m].count + 3, -1);
        info[m] = std::make_shared<RecvInfo>();
        works.push_back(c.Recv(Buffer{in[m].data(), in[m].size(), DType::kI32, MemKind::kHost}, plan[m].src,
                               static_cast<int>(m), info[m]));
      }
      for (auto& w : works) HOOP_RETURN_IF_ERROR(w.Wait());
      for (size_t m = 0; m < plan.size(); ++m) {
        if (plan[m].dst != rank) continue;
        HOOP_RETURN_IF_ERROR(Expect(
            info[m]->source == plan[m].src && info[m]->tag == static_cast<int>(m) && info[m]->count == plan[m].count,
            "message " + std::to_string(m) + " info"));
        for (size_t i = 0; i < plan[m].count; ++i)
          HOOP_RETURN_IF_ERROR(Expect(in[m][i] == value(static_cast<int>(m), i), "message " + std::to_string(m)));
        HOOP_RETURN_IF_ERROR(Expect(in[m][plan[m].count] == -1, "message " + std::to_string(m) + " overran"));
      }
      // Any source: every rank sends its rank to rank 0 with tag 5, twice (the second larger).
      std::vector<int32_t> mine(100000, rank);
      Work a = c.Send(Buffer{mine.data(), 1, DType::kI32, MemKind::kHost}, 0, 5);
      Work b = c.Send(Buffer{mine.data(), mine.size(), DType::kI32, MemKind::kHost}, 0, 5);
      if (rank == 0) {
        std::vector<int> firsts(static_cast<size_t>(n), 0);
        std::vector<int32_t> got(100000);
        for (int k = 0; k < 2 * n; ++k) {
          auto ri = std::make_shared<RecvInfo>();
          HOOP_RETURN_IF_ERROR(c.Recv(Buffer{got.data(), got.size(), DType::kI32, MemKind::kHost}, kAnySource, 5, ri,
                                      CallOptions{Algo::kAuto, true})
                                   .Wait());
          const int src = ri->source;
          HOOP_RETURN_IF_ERROR(Expect(src >= 0 && src < n && got[0] == src, "any-source from " + std::to_string(src)));
          // Within one pair and tag, the 1-element message comes before the large one.
          const size_t want = firsts[static_cast<size_t>(src)]++ == 0 ? 1 : mine.size();
          HOOP_RETURN_IF_ERROR(Expect(ri->count == want, "any-source order from " + std::to_string(src)));
        }
      }
      HOOP_RETURN_IF_ERROR(a.Wait());
      return b.Wait();
    });
    INFO(transport << ": " << s.message());
    CHECK(s.ok());
  }
}

TEST_CASE("in-process: blocking sends and receives without a Work (SendNow, RecvNow)", "[inproc][p2p]") {
  for (const char* transport : {"tcp", "shm"}) {
    const int n = 3;
    auto ranks = Ranks(n, transport);
    Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
      const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
      // A ring of every size class: empty, inside the frame (up to 24 bytes), just past it, eager
      // and rendezvous; each value names sender, size and element.
      for (size_t count : {size_t{0}, size_t{1}, size_t{6}, size_t{7}, size_t{1000}, size_t{40001}}) {
        auto value = [&](int from, size_t i) { return static_cast<int32_t>(from * 1000003 + count * 7 + i); };
        std::vector<int32_t> out(count), in(count + 2, -1);
        for (size_t i = 0; i < count; ++i) out[i] = value(rank, i);
        Buffer ob{out.data(), count, DType::kI32, MemKind::kHost},
            ib{in.data(), count + 2, DType::kI32, MemKind::kHost};
        RecvInfo info;
        const std::string what = "count " + std::to_string(count) + " rank " + std::to_string(rank);
        if (rank % 2 == 0) {  // even ranks send first, odd ones receive first
          HOOP_RETURN_IF_ERROR(c.SendNow(ob, next, 3));
          HOOP_RETURN_IF_ERROR(c.RecvNow(ib, prev, 3, &info));
        } else {
          HOOP_RETURN_IF_ERROR(c.RecvNow(ib, prev, 3, &info));
          HOOP_RETURN_IF_ERROR(c.SendNow(ob, next, 3));
        }
        HOOP_RETURN_IF_ERROR(Expect(info.source == prev && info.tag == 3 && info.count == count, "info, " + what));
        for (size_t i = 0; i < count; ++i) HOOP_RETURN_IF_ERROR(Expect(in[i] == value(prev, i), "value, " + what));
        HOOP_RETURN_IF_ERROR(Expect(in[count] == -1, "overrun, " + what));
      }
      // A receive posted before its message comes (the barrier orders them): a small message is
      // handed straight to it, and one it cannot take is refused naming both sides.
      int32_t one = -1, three[3] = {rank, rank + 1, rank + 2};
      float f = 0;
      Work fits = c.Recv(Buffer{&one, 1, DType::kI32, MemKind::kHost}, prev, 20);
      Work short_recv = c.Recv(Buffer{&one, 1, DType::kI32, MemKind::kHost}, prev, 21);
      Work wrong_type = c.Recv(Buffer{&f, 1, DType::kF32, MemKind::kHost}, prev, 22);
      HOOP_RETURN_IF_ERROR(c.Barrier().Wait());
      HOOP_RETURN_IF_ERROR(c.SendNow(Buffer{three, 1, DType::kI32, MemKind::kHost}, next, 20));
      HOOP_RETURN_IF_ERROR(c.SendNow(Buffer{three, 3, DType::kI32, MemKind::kHost}, next, 21));
      HOOP_RETURN_IF_ERROR(c.SendNow(Buffer{three, 1, DType::kI32, MemKind::kHost}, next, 22));
      HOOP_RETURN_IF_ERROR(fits.Wait());
      HOOP_RETURN_IF_ERROR(Expect(one == prev, "posted receive got " + std::to_string(one)));
      Status sr = short_recv.Wait(), wt = wrong_type.Wait();
      HOOP_RETURN_IF_ERROR(Expect(sr.code() == Code::kInvalidArgument &&
                                      sr.message().find("12 bytes") != std::string::npos &&
                                      sr.message().find("4 bytes") != std::string::npos,
                                  "short receive: " + sr.message()));
      HOOP_RETURN_IF_ERROR(
          Expect(wt.code() == Code::kInvalidArgument && wt.message().find("i32, not f32") != std::string::npos,
                 "dtype mismatch: " + wt.message()));
      // Behind a nonblocking collective the blocking call waits its turn and still completes.
      std::vector<int32_t> sum_in(5, rank + 1), sum_out(5, 0);
      Work ar = c.Allreduce(Buffer{sum_in.data(), 5, DType::kI32, MemKind::kHost},
                            Buffer{sum_out.data(), 5, DType::kI32, MemKind::kHost}, ReduceOp::kSum);
      int32_t token = rank * 10, got = -1;
      if (rank % 2 == 0) {
        HOOP_RETURN_IF_ERROR(c.SendNow(Buffer{&token, 1, DType::kI32, MemKind::kHost}, next, 30));
        HOOP_RETURN_IF_ERROR(c.RecvNow(Buffer{&got, 1, DType::kI32, MemKind::kHost}, prev, 30));
      } else {
        HOOP_RETURN_IF_ERROR(c.RecvNow(Buffer{&got, 1, DType::kI32, MemKind::kHost}, prev, 30));
        HOOP_RETURN_IF_ERROR(c.SendNow(Buffer{&token, 1, DType::kI32, MemKind::kHost}, next, 30));
      }
      HOOP_RETURN_IF_ERROR(ar.Wait());
      HOOP_RETURN_IF_ERROR(Expect(got == prev * 10 && sum_out[4] == n * (n + 1) / 2, "behind an allreduce"));
      // Bad arguments are refused before anything is posted, and say so.
      bool refused = false;
      Status bad = c.SendNow(Buffer{three, 1, DType::kI32, MemKind::kHost}, n, 0, &refused);
      return Expect(refused && bad.code() == Code::kInvalidArgument && bad.message().find("peer") != std::string::npos,
                    "bad peer: " + bad.message());
    });
    INFO(transport << ": " << s.message());
    CHECK(s.ok());
  }
}
