// The shared-memory back end's calls without a poll (Endpoint::SendCopies, TakeNow and Withdraw), on a
// real pair of segments in one process: a small message copied into the ring and taken where it
// lies, and each stepping aside (false, nothing changed) whenever the ordinary path must act:
// nothing there yet, another message at the head of the ring, a length the receive does not
// expect, a full ring, a send queued ahead.
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

#include "tests/support/shm_pair.h"

using namespace hoop;

using test::Collect;

TEST_CASE("shm: a small message copied into the ring and taken where it lies, or left to the poll", "[transport]") {
  auto pair = test::ConnectedShmPair("express");
  Transport& ta = *pair[0];  // sends
  Transport& tb = *pair[1];  // receives
  Endpoint* to_b = ta.endpoint(1);
  Endpoint* from_a = tb.endpoint(0);
  std::vector<char> msg(64), got(64, 0);
  std::iota(msg.begin(), msg.end(), 1);
  Region rgot{got.data(), got.size()};
  constexpr auto kShort = std::chrono::milliseconds(50);

  SECTION("taken whole, with no completion after it") {
    from_a->PostRecv(rgot, 0, 16, Tag{7, 1}, 11);
    CHECK_FALSE(from_a->TakeNow(Tag{7, 1}, 11, 1000, nullptr));  // nothing sent yet
    REQUIRE(to_b->SendCopy(msg.data(), 16, Tag{7, 1}));
    msg[0] = 99;  // the copy is out: the caller's buffer is free at once
    REQUIRE(from_a->TakeNow(Tag{7, 1}, 11, 1000, nullptr));
    CHECK(std::memcmp(got.data() + 1, msg.data() + 1, 15) == 0);
    CHECK(got[0] == 1);
    CHECK(Collect(tb, 1, kShort).empty());
    CHECK(Collect(ta, 1, kShort).empty());  // and none for the send either
  }

  SECTION("another message at the head of the ring is left to the poll") {
    from_a->PostRecv(rgot, 0, 16, Tag{8, 1}, 12);
    REQUIRE(to_b->SendCopy(msg.data(), 16, Tag{8, 1}));
    CHECK_FALSE(from_a->TakeNow(Tag{7, 1}, 13, 100, nullptr));  // waits for tag 7: not this one
    CHECK_FALSE(from_a->TakeNow(Tag{8, 1}, 13, 100, nullptr));  // right tag, but no such receive posted
    auto done = Collect(tb, 1, std::chrono::seconds(5));
    REQUIRE(done.size() == 1);
    CHECK(done[0].op_id == 12);
    CHECK(done[0].status.ok());
    CHECK(std::memcmp(got.data(), msg.data(), 16) == 0);
  }

  SECTION("a receive taken with `then` stays posted for the next message, until withdrawn") {
    std::vector<char> second(16, 0), other(16, 0);
    from_a->PostRecv(rgot, 0, 16, Tag{30, 1}, 31);
    REQUIRE(to_b->SendCopy(msg.data(), 16, Tag{30, 1}));
    const NextRecv next{Tag{31, 1}, other.data()};
    REQUIRE(from_a->TakeNow(Tag{30, 1}, 31, 1000, &next));
    CHECK(std::memcmp(got.data(), msg.data(), 16) == 0);
    // Posted again into the other memory, for tag 31: taken by TakeNow or the poll alike, and
    // what the first brought stays where it is.
    msg[0] = 42;
    REQUIRE(to_b->SendCopy(msg.data(), 16, Tag{31, 1}));
    CHECK_FALSE(from_a->TakeNow(Tag{30, 1}, 31, 1000, &next));  // the old tag is no longer its
    auto done = Collect(tb, 1, std::chrono::seconds(5));
    REQUIRE(done.size() == 1);
    CHECK(done[0].op_id == 31);
    CHECK(done[0].status.ok());
    CHECK(other[0] == 42);
    CHECK(got[0] == 1);  // the first message, untouched by the second
    // Posted again once more, then withdrawn: the message for it waits at the head, untaken,
    // and no completion comes for the withdrawn receive.
    from_a->PostRecv(rgot, 0, 16, Tag{32, 1}, 33);
    REQUIRE(to_b->SendCopy(msg.data(), 16, Tag{32, 1}));
    const NextRecv after{Tag{33, 1}, got.data()};
    REQUIRE(from_a->TakeNow(Tag{32, 1}, 33, 1000, &after));
    CHECK(from_a->Withdraw(33));
    CHECK_FALSE(from_a->Withdraw(33));  // gone already
    REQUIRE(to_b->SendCopy(msg.data(), 16, Tag{33, 1}));
    CHECK(Collect(tb, 1, kShort).empty());
    CHECK_FALSE(from_a->TakeNow(Tag{33, 1}, 33, 100, nullptr));
    Region rsecond{second.data(), second.size()};
    from_a->PostRecv(rsecond, 0, 16, Tag{33, 1}, 34);  // a new receive takes it
    done = Collect(tb, 1, std::chrono::seconds(5));
    REQUIRE(done.size() == 1);
    CHECK(done[0].op_id == 34);
    CHECK(second[0] == 42);
  }

  SECTION("a length the receive does not expect is the poll's to report") {
    from_a->PostRecv(rgot, 0, 32, Tag{9, 1}, 14);
    REQUIRE(to_b->SendCopy(msg.data(), 16, Tag{9, 1}));
    CHECK_FALSE(from_a->TakeNow(Tag{9, 1}, 14, 100, nullptr));
    auto done = Collect(tb, 1, std::chrono::seconds(5));
    REQUIRE(done.size() == 1);
    CHECK(done[0].status.code() == Code::kFailedPrecondition);
  }

  SECTION("two copies go together or not at all") {
    for (uint32_t i = 0; i + 1 < shm::kSlots; ++i) REQUIRE(to_b->SendCopy(msg.data(), 8, Tag{20, 1}));
    const Endpoint::Copy two[2] = {{msg.data(), 8, Tag{21, 1}}, {msg.data(), 8, Tag{22, 1}}};
    CHECK_FALSE(to_b->SendCopies(two, 2));             // one slot left: neither goes
    CHECK(to_b->SendCopy(msg.data(), 8, Tag{23, 1}));  // that slot is still free
    for (uint32_t i = 0; i + 1 < shm::kSlots; ++i) {
      from_a->PostRecv(rgot, 0, 8, Tag{20, 1}, 500 + i);
      REQUIRE(from_a->TakeNow(Tag{20, 1}, 500 + i, 0, nullptr));
    }
    from_a->PostRecv(rgot, 0, 8, Tag{23, 1}, 600);  // next after the 15: the single copy, not a pair's
    CHECK(from_a->TakeNow(Tag{23, 1}, 600, 0, nullptr));
    CHECK(to_b->SendCopies(two, 2));
    from_a->PostRecv(rgot, 0, 8, Tag{21, 1}, 601);
    from_a->PostRecv(rgot, 0, 8, Tag{22, 1}, 602);
    CHECK(from_a->TakeNow(Tag{21, 1}, 601, 0, nullptr));
    CHECK(from_a->TakeNow(Tag{22, 1}, 602, 0, nullptr));
  }

  SECTION("a full ring, or a send queued ahead, makes SendCopy step aside") {
    int copied = 0;
    while (copied < 100 && to_b->SendCopy(msg.data(), 8, Tag{10, 1})) ++copied;
    CHECK(copied == static_cast<int>(shm::kSlots));
    for (int i = 0; i < copied; ++i) {
      from_a->PostRecv(rgot, 0, 8, Tag{10, 1}, 100 + static_cast<uint64_t>(i));
      REQUIRE(from_a->TakeNow(Tag{10, 1}, 100 + static_cast<uint64_t>(i), 0, nullptr));
    }
    CHECK(to_b->SendCopy(msg.data(), 8, Tag{10, 1}));  // room again
    from_a->PostRecv(rgot, 0, 8, Tag{10, 1}, 200);
    REQUIRE(from_a->TakeNow(Tag{10, 1}, 200, 0, nullptr));

    // A message of several slots, posted: the rest of it waits in the channel, and a small
    // message must not overtake it.
    const size_t big = 4 * shm::kInlineMax;
    std::vector<char> large(big, 'x'), large_in(big);
    Region rl{large.data(), big}, rli{large_in.data(), big};
    for (int i = 0; i < 40; ++i) to_b->PostSend(rl, 0, big, Tag{11, 1}, 300 + static_cast<uint64_t>(i));
    CHECK_FALSE(to_b->SendCopy(msg.data(), 8, Tag{12, 1}));
    from_a->PostRecv(rli, 0, big, Tag{11, 1}, 400);
    CHECK_FALSE(from_a->TakeNow(Tag{11, 1}, 400, 0, nullptr));  // several slots: the poll's
  }
}
