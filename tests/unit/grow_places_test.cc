// Places in the newcomers' line (collectives/core/grow.cc), through the in-process harness: a
// grow whose first rank died leaves the line as the next grow can use. The state such a death
// leaves is written into the store by hand (a place taken with an offer from a grow given up,
// the count of places taken not yet added to); the ranks, the newcomer and their connections
// are real. A chaos run once found a newcomer waiting for a place a dead rank had reserved and
// never offered, while the survivors' next grow offered the place after it.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "tests/support/thread_ranks.h"

using namespace hoop;
using hoop::test::ThreadRanks;

namespace {

// Every rank of `comm` sums rank + 1: 1 + 2 + ... + size.
Status SumCheck(Communicator& comm) {
  int64_t v = comm.rank() + 1;
  HOOP_RETURN_IF_ERROR(comm.Allreduce({&v, 1, DType::kI64}, {&v, 1, DType::kI64}, ReduceOp::kSum).Wait());
  const int64_t n = comm.size();
  if (v != n * (n + 1) / 2) return Internal("allreduce on the grown communicator: " + std::to_string(v));
  return Status::Ok();
}

}  // namespace

TEST_CASE("in-process: a place a dead grow took is stepped over, its newcomer queues again and is admitted",
          "[inproc][grow]") {
  const int n = 2;
  auto t = ThreadRanks::Start(n, "tcp", std::chrono::seconds(20));
  INFO(t.status().message());
  REQUIRE(t.ok());
  auto& ranks = **t;
  Store& store = ranks.store();
  // A grow whose first rank offered place 0 and died before it counted the place: given up.
  const std::string dead = "hoop/dead/grow0/";
  REQUIRE(
      store.SetIfAbsent("hoop/join/slot/0", "dead.g0\t3\t2\t" + dead, Deadline::After(std::chrono::seconds(5))).ok());
  REQUIRE(store.Set(dead + "outcome", "abort").ok());

  // The newcomer takes place 0, finds that grow given up and queues again, at place 1.
  Status joined;
  std::thread newcomer([&] {
    CommOptions o;
    o.transport = "tcp";
    o.timeout = std::chrono::seconds(20);
    auto c = Communicator::Join(store, o);
    joined = c.ok() ? SumCheck(**c) : c.status();
    if (c.ok() && joined.ok() && (*c)->rank() != 2)
      joined = Internal("the newcomer is rank " + std::to_string((*c)->rank()));
  });
  Status s = ranks.Run([&](int, Communicator& world) -> Status {
    // Newcomers counts it once it queued again: one waiting, the place a dead grow took left out.
    int waiting = 0;
    for (int tries = 0; tries < 200 && waiting == 0; ++tries) {
      HOOP_ASSIGN_OR_RETURN(waiting, world.Newcomers());
      if (waiting == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (waiting != 1) return Internal("Newcomers: " + std::to_string(waiting) + ", not 1");
    HOOP_ASSIGN_OR_RETURN(auto grown, world.Grow(1));
    if (grown->size() != 3) return Internal("grown to " + std::to_string(grown->size()));
    return SumCheck(*grown);
  });
  newcomer.join();
  CHECK(s.message() == "");
  CHECK(joined.message() == "");
  CHECK(s.ok());
  CHECK(joined.ok());
  // The grow offered place 1 (place 0 was the dead grow's) and counted it.
  auto slot = store.Get("hoop/join/slot/1", Deadline::After(std::chrono::seconds(0)));
  REQUIRE(slot.ok());
  CHECK(slot->find("inproc.g0\t3\t2\t") == 0);
  CHECK(*store.Add("hoop/join/offered", 0) == 1);
}
