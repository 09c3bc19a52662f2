// Sends, receives and collectives on streams, through the communicator (ranks as threads over
// shm and tcp), on fake streams (tests/support/fake_stream.h, installed with
// CommOptions::stream_ops) and host buffers: the ordering logic without a device. The host
// threads never wait on a call: "kernels" queued on the streams write the inputs and check the
// outputs, and the test waits only for the streams to reach their end. What a real stream adds
// (device buffers staged by copies on it) is tested on a GPU (tests/gpu/p2p_test.cc).
#include <catch2/catch.hpp>

#include <numeric>

#include "tests/support/fake_stream.h"
#include "tests/support/thread_ranks.h"

using namespace hoop;
using namespace std::chrono_literals;
using test::FakeStream;
using test::Flag;
using test::ThreadRanks;

namespace {

std::unique_ptr<ThreadRanks> Ranks(int n, const std::string& transport) {
  auto t = ThreadRanks::Start(n, transport, 10s, [](CommOptions& o) { o.stream_ops = test::FakeStreamOps(); });
  INFO(t.status().message());
  REQUIRE(t.ok());
  return std::move(t).value();
}

// Runs body on n ranks as threads; a failure names its rank.
void OnRanks(int n, const std::string& transport, const std::function<Status(int, Communicator&)>& body) {
  Status s = Ranks(n, transport)->Run(body);
  INFO(transport << ", " << n << " ranks: " << s.message());
  CHECK(s.ok());
}

Buffer Of(std::vector<int32_t>& v) { return Buffer{v.data(), v.size(), DType::kI32, MemKind::kHost}; }

CallOptions On(FakeStream& s) {
  CallOptions o;
  o.stream = &s;
  return o;
}

// Waits for a stream's last work; on a timeout, says which and fails every call in flight so the
// streams are let go.
Status Reached(Flag& end, Communicator& c, const std::string& what) {
  if (end.Within(20s)) return Status::Ok();
  c.Abort("the test's stream never reached its end");
  return DeadlineExceeded(what + ": the work queued after the calls never ran");
}

}  // namespace

TEST_CASE("stream calls: a send then a receive on one stream, against a receive then a send", "[stream]") {
  for (const char* transport : {"shm", "tcp"}) {
    OnRanks(2, transport, [&](int rank, Communicator& c) -> Status {
      FakeStream stream;
      Flag gate, end;
      std::vector<int32_t> mine(1001, 0), got(1001, -1), reply(1001, 0);
      bool right = false;
      stream.Queue([&] { gate.Within(20s); });  // earlier work still running when the calls are made
      std::vector<Work> calls;
      if (rank == 0) {
        stream.Queue([&] { std::iota(mine.begin(), mine.end(), 7); });
        calls.push_back(c.Send(Of(mine), 1, 5, On(stream)));
        calls.push_back(c.Recv(Of(got), 1, 6, nullptr, On(stream)));
        stream.Queue([&] {
          right = true;
          for (size_t i = 0; i < got.size(); ++i) right = right && got[i] == mine[i] + 1;
          end.up = true;
        });
      } else {
        calls.push_back(c.Recv(Of(got), 0, 5, nullptr, On(stream)));
        stream.Queue([&] {
          for (size_t i = 0; i < got.size(); ++i) reply[i] = got[i] + 1;
        });
        calls.push_back(c.Send(Of(reply), 0, 6, On(stream)));
        stream.Queue([&] {
          right = got[0] == 7 && got[1000] == 1007;
          end.up = true;
        });
      }
      // Nothing can have run: the stream has not reached the calls.
      for (Work& w : calls)
        if (w.Done() || w.Refused())
          return Internal("rank " + std::to_string(rank) + ": a call ended before its stream reached it");
      gate.up = true;
      HOOP_RETURN_IF_ERROR(Reached(end, c, "rank " + std::to_string(rank)));
      for (Work& w : calls) HOOP_RETURN_IF_ERROR(w.Wait());
      return right ? Status::Ok()
                   : Internal("rank " + std::to_string(rank) + ": the stream's work after the receive saw wrong data");
    });
  }
}

TEST_CASE("stream calls: calls on different streams end in any order, none waiting on another stream's", "[stream]") {
  // Rank 1 receives on stream A what rank 0 sends only after receiving both of rank 1's sends on
  // stream B: B's second send must go while A's receive is still waiting.
  OnRanks(2, "shm", [&](int rank, Communicator& c) -> Status {
    FakeStream a, b;
    Flag end_a, end_b;
    std::vector<int32_t> x(300, 1), y(300, 2), z(300, 3), got1(300, 0), got2(300, 0);
    if (rank == 1) {
      Work r = c.Recv(Of(z), 0, 1, nullptr, On(a));
      Work s1 = c.Send(Of(x), 0, 2, On(b));
      Work s2 = c.Send(Of(y), 0, 3, On(b));
      a.Queue([&] { end_a.up = true; });
      b.Queue([&] { end_b.up = true; });
      HOOP_RETURN_IF_ERROR(Reached(end_b, c, "rank 1, stream B"));
      HOOP_RETURN_IF_ERROR(Reached(end_a, c, "rank 1, stream A"));
      HOOP_RETURN_IF_ERROR(r.Wait());
      HOOP_RETURN_IF_ERROR(s1.Wait());
      HOOP_RETURN_IF_ERROR(s2.Wait());
      return z == std::vector<int32_t>(300, 4) ? Status::Ok() : Internal("rank 1: wrong message on stream A");
    }
    Work r1 = c.Recv(Of(got1), 1, 2, nullptr, On(a));
    Work r2 = c.Recv(Of(got2), 1, 3, nullptr, On(a));
    a.Queue([&] {
      for (size_t i = 0; i < z.size(); ++i) z[i] = got1[i] + got2[i] + 1;
    });
    Work s1 = c.Send(Of(z), 1, 1, On(a));
    a.Queue([&] { end_a.up = true; });
    HOOP_RETURN_IF_ERROR(Reached(end_a, c, "rank 0"));
    HOOP_RETURN_IF_ERROR(r1.Wait());
    HOOP_RETURN_IF_ERROR(r2.Wait());
    return s1.Wait();
  });
}

TEST_CASE("stream calls: a collective on a stream after a receive on it, the worker driving the receive", "[stream]") {
  OnRanks(3, "shm", [&](int rank, Communicator& c) -> Status {
    FakeStream stream;
    Flag end;
    std::vector<int32_t> v(5000, rank), got(5000, 0), out(5000, 0);
    std::vector<Work> calls;
    // Rank 0 sends rank 2 a message that rank 2 adds to its input before the allreduce.
    if (rank == 0) calls.push_back(c.Send(Of(v), 2, 9, On(stream)));
    if (rank == 2) {
      calls.push_back(c.Recv(Of(got), 0, 9, nullptr, On(stream)));
      stream.Queue([&] {
        for (size_t i = 0; i < v.size(); ++i) v[i] += got[i] + 100;
      });
    }
    calls.push_back(c.Allreduce(Of(v), Of(out), ReduceOp::kSum, On(stream)));
    stream.Queue([&] { end.up = true; });
    HOOP_RETURN_IF_ERROR(Reached(end, c, "rank " + std::to_string(rank)));
    for (Work& w : calls) HOOP_RETURN_IF_ERROR(w.Wait());
    // 0 + 1 + (2 + 0 + 100)
    return out == std::vector<int32_t>(5000, 103) ? Status::Ok()
                                                  : Internal("rank " + std::to_string(rank) + ": wrong sum");
  });
}

TEST_CASE("stream calls: a receive shorter than its buffer leaves the rest; bad calls refused at once", "[stream]") {
  OnRanks(2, "tcp", [&](int rank, Communicator& c) -> Status {
    FakeStream stream;
    Flag end;
    std::vector<int32_t> v(10, 5), got(20, -1);
    Work bad = c.Send(Of(v), 7, 1, On(stream));
    if (!bad.Refused()) return Internal("a send to rank 7 of 2 was not refused");
    if (bad.Wait().message().find("peer 7 is not a rank") == std::string::npos) return Internal(bad.Wait().message());
    Work w = rank == 0 ? c.Send(Of(v), 1, 3, On(stream)) : c.Recv(Of(got), 0, 3, nullptr, On(stream));
    stream.Queue([&] { end.up = true; });
    HOOP_RETURN_IF_ERROR(Reached(end, c, "rank " + std::to_string(rank)));
    HOOP_RETURN_IF_ERROR(w.Wait());
    if (rank == 1)
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != (i < 10 ? 5 : -1))
          return Internal("rank 1: element " + std::to_string(i) + " is " + std::to_string(got[i]));
    return Status::Ok();
  });
}
