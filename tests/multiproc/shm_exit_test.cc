// The shared-memory back end when a peer's process exits after its last sends: what it sent is
// all still in the ring, so every receive for it completes, in whatever order the receives are
// posted; a receive for more than it sent fails, naming the exited peer. A real child process
// (fork) is the peer, and it really exits: that is how the back end learns of it (a pidfd).
//
// The order matters because of a collective's end: a rank's last message can sit at the head of
// the ring while the receive posted is for the message behind it, and the receive for the head is
// posted only later. Failing then (the peer is gone, a receive is posted) lost a message that had
// arrived: a barrier then failed with "lost peer" on a rank whose peers had all finished.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/support/shm_pair.h"
#include "transport/shm/shm_transport.h"

using namespace hoop;
using test::Collect;

namespace {

constexpr int kFirst = 5, kSecond = 6;  // the two tags the child sends, in this order

// The child: rank 1. Connects, says its address, waits for the go, sends two messages (the
// second longer than a slot, so it goes in fragments), waits for both to leave, exits.
[[noreturn]] void Child(const std::string& name, const std::string& addr0, int to_parent, int from_parent) {
  TransportOptions o;
  o.rank = 1;
  o.size = 2;
  o.token = name;
  o.comm = name + "-test";
  auto t = ShmTransport::Create(o);
  if (!t.ok() || !(*t)->Connect(0, addr0, Deadline::After(std::chrono::seconds(5))).ok()) _exit(2);
  std::string addr = (*t)->Address();
  uint32_t n = static_cast<uint32_t>(addr.size());
  char go = 0;
  if (write(to_parent, &n, sizeof n) != sizeof n || write(to_parent, addr.data(), n) != static_cast<ssize_t>(n) ||
      read(from_parent, &go, 1) != 1)
    _exit(3);
  std::vector<char> a(40, 'a'), b(20000, 'b');
  Region ra{a.data(), a.size()}, rb{b.data(), b.size()};
  Endpoint* to0 = (*t)->endpoint(0);
  to0->PostSend(ra, 0, a.size(), Tag{kFirst, 1}, 1);
  to0->PostSend(rb, 0, b.size(), Tag{kSecond, 1}, 2);
  std::vector<Completion> done = Collect(**t, 2, std::chrono::seconds(10));
  for (const Completion& c : done)
    if (!c.status.ok()) _exit(4);
  _exit(done.size() == 2 ? 0 : 5);
}

}  // namespace

TEST_CASE("shm: a peer that exited after sending: all it sent is received, in any posting order",
          "[transport][failure]") {
  const std::string name = "exit" + std::to_string(getpid());
  TransportOptions o;
  o.rank = 0;
  o.size = 2;
  o.token = name;
  o.comm = name + "-test";
  auto made = ShmTransport::Create(o);
  REQUIRE(made.ok());
  Transport& t = **made;
  const std::string addr0 = t.Address();  // here: it names this process
  int up[2], down[2];
  REQUIRE(pipe(up) == 0);
  REQUIRE(pipe(down) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) Child(name, addr0, up[1], down[0]);
  close(up[1]);
  close(down[0]);
  uint32_t n = 0;
  REQUIRE(read(up[0], &n, sizeof n) == sizeof n);
  std::string addr1(n, '\0');
  REQUIRE(read(up[0], addr1.data(), n) == static_cast<ssize_t>(n));
  REQUIRE(t.Connect(1, addr1, Deadline::After(std::chrono::seconds(5))).ok());
  REQUIRE(write(down[1], "g", 1) == 1);
  int wstatus = 0;
  REQUIRE(waitpid(child, &wstatus, 0) == child);
  close(up[0]);
  close(down[1]);
  REQUIRE(WIFEXITED(wstatus));
  REQUIRE(WEXITSTATUS(wstatus) == 0);  // both sends left the child before it exited

  Endpoint* from1 = t.endpoint(1);
  std::vector<char> a(40, 0), b(20000, 0);
  Region ra{a.data(), a.size()}, rb{b.data(), b.size()};
  // The receive for the second message first: the first waits at the head of the ring, and the
  // peer is gone. Polling past the peer watch's look (5 ms) must fail nothing.
  from1->PostRecv(rb, 0, b.size(), Tag{kSecond, 1}, 20);
  CHECK(Collect(t, 1, std::chrono::milliseconds(100)).empty());
  from1->PostRecv(ra, 0, a.size(), Tag{kFirst, 1}, 10);
  auto done = Collect(t, 2, std::chrono::seconds(5));
  REQUIRE(done.size() == 2);
  for (const Completion& c : done) {
    INFO(c.status.ToString());
    CHECK(c.status.ok());
  }
  CHECK(a == std::vector<char>(40, 'a'));
  CHECK(b == std::vector<char>(20000, 'b'));

  // The ring is empty now: a receive for more can never be satisfied, and says why.
  from1->PostRecv(ra, 0, a.size(), Tag{7, 1}, 30);
  done = Collect(t, 1, std::chrono::seconds(5));
  REQUIRE(done.size() == 1);
  CHECK(done[0].op_id == 30);
  CHECK_FALSE(done[0].status.ok());
  CHECK_THAT(done[0].status.ToString(), Catch::Contains("lost peer 1") && Catch::Contains("exited"));
}
