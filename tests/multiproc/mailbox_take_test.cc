// Mailbox::TakeInline on a real pair of shared-memory segments in one process: a blocking
// receive takes a message that rides inside its frame at once, with no post and no completion,
// and only when it is the one that receive must get: a receive posted ahead, or a message held
// from before, comes first; a larger message's frame is handed over once the receive is posted,
// its payload taken straight into it; another tag, another dtype or a message too long for it is
// handled the ordinary way (held, then matched and refused as any other).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "tests/support/shm_pair.h"
#include "transport/tagged/mailbox.h"

using namespace hoop;

namespace {
Mailbox::Options Box(int rank) {
  Mailbox::Options o;
  o.rank = rank;
  o.size = 2;
  return o;
}

std::shared_ptr<P2pCall> Receive(void* data, size_t count, DType dtype, int peer, int tag) {
  auto c = std::make_shared<P2pCall>();
  c->peer = peer;
  c->tag = tag;
  c->data = data;
  c->count = count;
  c->dtype = dtype;
  P2pCall* raw = c.get();
  c->complete = [raw](const Status& s) {
    raw->status = s;
    raw->done = true;
  };
  return c;
}

// Polls until `call` is done, five seconds at most.
bool Await(Mailbox& m, const P2pCall& call) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!call.done && std::chrono::steady_clock::now() < end)
    m.Progress(Deadline::After(std::chrono::milliseconds(10)));
  return call.done;
}

// Polls until something completes (a frame has come in), five seconds at most.
bool PollOnce(Mailbox& m) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end)
    if (m.Progress(Deadline::After(std::chrono::milliseconds(10)))) return true;
  return false;
}
}  // namespace

TEST_CASE("shm: a blocking receive takes a message inside its frame at once, and only when it is the one to take",
          "[transport]") {
  auto pair = test::ConnectedShmPair("take-inline");
  Mailbox a(*pair[0], Box(0));  // sends
  Mailbox b(*pair[1], Box(1));  // receives
  REQUIRE(a.Start().ok());
  REQUIRE(b.Start().ok());
  constexpr unsigned kSpins = 1u << 22;
  using Taken = Mailbox::Taken;
  int32_t x = 111, y = 222, got = 0;
  RecvInfo info;

  SECTION("taken at once, info filled, nothing left pending") {
    REQUIRE(a.SendSmall(1, 5, &x, 4, DType::kI32));
    CHECK(b.TakeInline(0, 5, &got, 8, DType::kI32, &info, kSpins) == Taken::kMine);
    CHECK(got == 111);
    CHECK(info.source == 0);
    CHECK(info.tag == 5);
    CHECK(info.count == 1);
    CHECK_FALSE(b.Busy());
    CHECK(b.TakeInline(0, 5, &got, 8, DType::kI32, &info, 1000) == Taken::kNothing);  // nothing more came
    REQUIRE(a.SendSmall(1, 5, nullptr, 0, DType::kI32));                              // an empty one
    info = {};
    CHECK(b.TakeInline(0, 5, &got, 8, DType::kI32, &info, kSpins) == Taken::kMine);
    CHECK(info.count == 0);
  }

  SECTION("a receive posted ahead with the same peer and tag gets the first message") {
    int32_t first = 0;
    auto ahead = Receive(&first, 1, DType::kI32, 0, 15);
    b.Post(ahead);
    REQUIRE(a.SendSmall(1, 15, &x, 4, DType::kI32));
    REQUIRE(a.SendSmall(1, 15, &y, 4, DType::kI32));
    CHECK(b.TakeInline(0, 15, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kNothing);  // not looked at
    REQUIRE(Await(b, *ahead));
    CHECK(ahead->status.ok());
    CHECK(first == 111);
    CHECK(b.TakeInline(0, 15, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kMine);
    CHECK(got == 222);
  }

  SECTION("a message held from before gets taken first, by the ordinary post") {
    REQUIRE(a.SendSmall(1, 16, &x, 4, DType::kI32));
    REQUIRE(PollOnce(b));  // in, and held: nobody has asked for it
    REQUIRE(a.SendSmall(1, 16, &y, 4, DType::kI32));
    CHECK(b.TakeInline(0, 16, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kNothing);
    auto r = Receive(&got, 1, DType::kI32, 0, 16);
    b.Post(r);
    REQUIRE(Await(b, *r));
    CHECK(got == 111);
  }

  SECTION("a larger message: its frame taken, the receive posted, its payload taken straight into it") {
    std::vector<char> out(1000), in(1000, 0);
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 7);
    REQUIRE(a.SendSmall(1, 21, out.data(), out.size(), DType::kU8));
    CHECK(b.TakeInline(0, 21, in.data(), in.size(), DType::kU8, nullptr, kSpins) == Taken::kOther);
    auto r = Receive(in.data(), in.size(), DType::kU8, 0, 21);
    b.Post(r);
    b.HandleTaken(0, kSpins);
    REQUIRE(r->done);  // no poll needed: the payload was next on the stream
    CHECK(r->status.ok());
    CHECK(in == out);
  }

  SECTION("another tag, another dtype, or too long: handled as any message, then refused as any") {
    REQUIRE(a.SendSmall(1, 17, &x, 4, DType::kI32));
    CHECK(b.TakeInline(0, 18, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kOther);
    b.HandleTaken(0, kSpins);  // no receive for it: held
    auto r17 = Receive(&got, 1, DType::kI32, 0, 17);
    b.Post(r17);  // held since: matched at once
    REQUIRE(r17->done);
    CHECK(r17->status.ok());
    CHECK(got == 111);

    const float f = 1.5f;
    REQUIRE(a.SendSmall(1, 19, &f, 4, DType::kF32));
    CHECK(b.TakeInline(0, 19, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kOther);
    auto r19 = Receive(&got, 1, DType::kI32, 0, 19);
    b.Post(r19);
    b.HandleTaken(0, kSpins);
    REQUIRE(Await(b, *r19));
    CHECK(r19->status.code() == Code::kInvalidArgument);
    CHECK_THAT(r19->status.message(), Catch::Contains("f32") && Catch::Contains("i32"));

    const int32_t six[6] = {1, 2, 3, 4, 5, 6};
    int32_t five[5] = {};
    REQUIRE(a.SendSmall(1, 20, six, sizeof six, DType::kI32));
    CHECK(b.TakeInline(0, 20, five, sizeof five, DType::kI32, nullptr, kSpins) == Taken::kOther);
    auto r20 = Receive(five, 5, DType::kI32, 0, 20);
    b.Post(r20);
    b.HandleTaken(0, kSpins);
    REQUIRE(Await(b, *r20));
    CHECK(r20->status.code() == Code::kInvalidArgument);
    CHECK_THAT(r20->status.message(), Catch::Contains("24 bytes") && Catch::Contains("20 bytes"));
  }
}
