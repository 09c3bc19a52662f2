// ProgressLoop's contract (transport/progress_loop.h), driven by a fake back end (the loop's
// logic, not a transport): it returns at the first completion, and a deadline that has passed
// ends the wait at the next slower look instead of after the whole spin (MultiTransport asks
// each of its parts for a look with an expired deadline, many times a second). A closed SpinGate
// (hoop's worker while its caller computes) sleeps at the first slower look instead of spinning,
// and opens again when a thread starts waiting.
#include <catch2/catch.hpp>

#include <atomic>

#include "transport/progress_loop.h"

using namespace hoop;

namespace {
struct FakeBackEnd {
  std::atomic<int>* waiters_after_sleep = nullptr;  // set to 1 by the first sleep, when given
  unsigned turns = 0;
  unsigned complete_at = ~0u;  // the turn on which a completion appears
  unsigned sleeps = 0;
  Status Progress(std::vector<Completion>* out) {
    if (++turns == complete_at) out->push_back(Completion{7, 1, false, Status::Ok(), 0});
    return Status::Ok();
  }
  void Watch(std::vector<Completion>*) {}
  Status Sleep(std::vector<Completion>*, Deadline) {
    ++sleeps;
    if (waiters_after_sleep) waiters_after_sleep->store(1);
    return Status::Ok();
  }
};
}  // namespace

TEST_CASE("ProgressLoop: the first completion ends it; a passed deadline ends it at the next look", "[progress]") {
  const WaitStyle style{"fake", std::chrono::microseconds(50000), 63, false};
  std::vector<Completion> out;

  SECTION("a completion on the 5th turn returns at once") {
    FakeBackEnd b;
    b.complete_at = 5;
    REQUIRE(ProgressLoop(b, style, &out, Deadline::After(std::chrono::seconds(10)), SpinGate{}).ok());
    CHECK(b.turns == 5);
    CHECK(out.size() == 1);
  }
  SECTION("an expired deadline: one look, not a 50 ms spin") {
    FakeBackEnd b;
    Status s = ProgressLoop(b, style, &out, Deadline::After(std::chrono::milliseconds(0)), SpinGate{});
    CHECK(s.code() == Code::kDeadlineExceeded);
    CHECK(b.turns == 64);  // the first slower look comes on turn 64 (look_mask 63)
    CHECK(b.sleeps == 0);
    CHECK(out.empty());
  }
  SECTION("a deadline that passes during the spin ends it there") {
    FakeBackEnd b;
    const auto start = std::chrono::steady_clock::now();
    Status s = ProgressLoop(b, style, &out, Deadline::After(std::chrono::milliseconds(2)), SpinGate{});
    CHECK(s.code() == Code::kDeadlineExceeded);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(40));  // not the 50 ms spin
    CHECK(b.sleeps == 0);
  }
}

TEST_CASE("ProgressLoop: a closed SpinGate sleeps at once; an open one spins", "[progress]") {
  const WaitStyle style{"fake", std::chrono::microseconds(50000), 63, false};
  std::vector<Completion> out;
  std::atomic<int> waiters{0};
  FakeBackEnd b;
  b.complete_at = 64 * 40;  // well inside a 50 ms spin

  SECTION("nobody waits: it sleeps at each slower look") {
    REQUIRE(ProgressLoop(b, style, &out, Deadline::After(std::chrono::seconds(10)), SpinGate{&waiters}).ok());
    CHECK(b.sleeps == 39);
  }
  SECTION("a thread waits: it spins through, as an ungated wait does") {
    waiters = 1;
    REQUIRE(ProgressLoop(b, style, &out, Deadline::After(std::chrono::seconds(10)), SpinGate{&waiters}).ok());
    CHECK(b.sleeps == 0);
  }
  SECTION("a thread starts waiting during a sleep: the spin comes back") {
    b.waiters_after_sleep = &waiters;
    REQUIRE(ProgressLoop(b, style, &out, Deadline::After(std::chrono::seconds(10)), SpinGate{&waiters}).ok());
    CHECK(b.sleeps == 1);
  }
}
