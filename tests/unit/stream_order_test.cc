// StreamOrder's logic (collectives/device/stream_order.h) on a fake CUDA stream: a thread that runs the
// host functions queued on it in order, as CUDA runs a stream's work. What a real stream adds
// (the hold as CUDA sees it, the staging copies around it) is tested on a GPU in tests/gpu.
#include <catch2/catch.hpp>

#include <chrono>

#include "collectives/device/stream_order.h"
#include "tests/support/fake_stream.h"

namespace hoop {
namespace {

using test::FakeStream;
using test::Flag;

using namespace std::chrono_literals;

Status FailingLaunch(void*, void (*)(void*), void*) { return Internal("cudaLaunchHostFunc: no stream"); }
const StreamOps kFailing{&FailingLaunch, &FakeStream::WaitWord, &FakeStream::AllocWords, &FakeStream::FreeWords};

std::atomic<int> g_slabs{0};
StatusOr<uint32_t*> CountedAlloc(size_t n) {
  ++g_slabs;
  return FakeStream::AllocWords(n);
}
const StreamOps kCounted{&FakeStream::Launch, &FakeStream::WaitWord, &CountedAlloc, &FakeStream::FreeWords};

}  // namespace

TEST_CASE("stream order: the worker waits for the stream's earlier work, the stream's later work for the release",
          "[stream]") {
  FakeStream stream;
  Flag gate, after;
  stream.Queue([&] { gate.Within(10s); });  // the caller's earlier work, still running
  auto order = std::make_unique<StreamOrder>(test::FakeStreamOps());
  auto t = order->Enter(&stream);
  REQUIRE(t.ok());
  CHECK(t->seq == 1);
  stream.Queue([&] { after.up = true; });  // the caller's work after the call
  CHECK_FALSE(StreamOrder::InputReady(*t));
  Status early = order->WaitInput(*t, Deadline::After(50ms));
  CHECK(early.code() == Code::kDeadlineExceeded);
  CHECK_THAT(early.message(), Catch::Contains("did not finish in time"));
  gate.up = true;
  REQUIRE(order->WaitInput(*t, Deadline::After(10s)).ok());
  CHECK_FALSE(after.Within(100ms));  // held: the operation is still running
  order->Release(*t);
  CHECK(after.Within(10s));
}

TEST_CASE("stream order: a release lets that call's stream go and no other, in any order", "[stream]") {
  FakeStream s1, s2;
  Flag after1, after2;
  StreamOrder order(test::FakeStreamOps());
  auto t1 = order.Enter(&s1);
  auto t2 = order.Enter(&s2);
  REQUIRE((t1.ok() && t2.ok()));
  CHECK(t2->seq == t1->seq + 1);
  s1.Queue([&] { after1.up = true; });
  s2.Queue([&] { after2.up = true; });
  REQUIRE(order.WaitInput(*t1, Deadline::After(10s)).ok());
  REQUIRE(order.WaitInput(*t2, Deadline::After(10s)).ok());
  CHECK(StreamOrder::InputReady(*t2));
  // The later call ends first (a send whose peer was quicker than the earlier receive's).
  StreamOrder::Release(*t2);
  CHECK(after2.Within(10s));
  CHECK_FALSE(after1.Within(100ms));
  StreamOrder::Release(*t1);
  CHECK(after1.Within(10s));
}

TEST_CASE("stream order: freeing it lets every held stream go; a failed launch holds nothing", "[stream]") {
  FakeStream stream;
  Flag after;
  {
    StreamOrder order(test::FakeStreamOps());
    auto t = order.Enter(&stream);
    REQUIRE(t.ok());
    stream.Queue([&] { after.up = true; });
    CHECK_FALSE(after.Within(50ms));
  }
  CHECK(after.Within(10s));

  StreamOrder broken(&kFailing);
  auto t = broken.Enter(&stream);
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.status().message(), Catch::Contains("no stream"));
}

TEST_CASE("stream order: a released call's word is reused, with a higher value, and holds again", "[stream]") {
  // More calls than one slab of words, one at a time: each holds its stream until released, and
  // the words of released calls serve the later ones (one slab in all).
  FakeStream stream;
  StreamOrder order(&kCounted);
  const int before = g_slabs.load();
  for (size_t i = 0; i < 3 * StreamOrder::kSlabWords; ++i) {
    auto t = order.Enter(&stream);
    REQUIRE(t.ok());
    Flag after;
    stream.Queue([&] { after.up = true; });
    REQUIRE(order.WaitInput(*t, Deadline::After(10s)).ok());
    if (i % 500 == 0) CHECK_FALSE(after.Within(20ms));  // held until released
    StreamOrder::Release(*t);
    REQUIRE(after.Within(10s));
  }
  CHECK(g_slabs.load() - before == 1);
}

}  // namespace hoop
