// The sleep across back ends (transport/wake_watcher.h): the watcher on pipes, then real
// MultiTransports of threads as ranks on two "hosts" (shm inside one, tcp or UCX across), where a
// rank asleep on its shm doorbell must be woken by the watcher when the other host's message
// comes, not by the end of its sleep.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "transport/memory_store.h"
#include "transport/multi_transport.h"
#include "transport/select.h"
#include "transport/wake_watcher.h"

using namespace hoop;

namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { REQUIRE(::pipe2(fd, O_CLOEXEC | O_NONBLOCK) == 0); }
  ~Pipe() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  void Write() { REQUIRE(::write(fd[1], "x", 1) == 1); }
  void Drain() {
    char buf[64];
    while (::read(fd[0], buf, sizeof(buf)) > 0) {
    }
  }
};

// Waits up to 10 s for `n` kicks (the watcher's thread makes them).
bool Kicked(const std::atomic<int>& kicks, int n) {
  for (int i = 0; i < 10000 && kicks.load() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return kicks.load() >= n;
}

}  // namespace

TEST_CASE("wake watcher: one kick per armed sleep, when a descriptor turns readable", "[transport][wake]") {
  Pipe a, b;
  std::atomic<int> kicks{0};
  auto kick = [&] { kicks.fetch_add(1); };
  WakeWatcher w;

  // News on either descriptor ends the sleep, once: more news before the next arm kicks nothing.
  REQUIRE(w.Arm({a.fd[0], b.fd[0]}, kick).ok());
  b.Write();
  REQUIRE(Kicked(kicks, 1));
  a.Write();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(kicks.load() == 1);
  w.Disarm();
  CHECK(w.kicks() == 1);

  // Readable already when armed: at once.
  REQUIRE(w.Arm({a.fd[0], b.fd[0]}, kick).ok());
  REQUIRE(Kicked(kicks, 2));
  w.Disarm();
  a.Drain();
  b.Drain();

  // Disarmed before any news: no kick, and news afterwards kicks nothing until the next arm.
  REQUIRE(w.Arm({a.fd[0]}, kick).ok());
  w.Disarm();
  a.Write();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(kicks.load() == 2);
  a.Drain();

  // Many quick arms and disarms (a Disarm can be left for a later arm's poll to read), then a
  // sleep whose news comes late: still exactly one kick for it.
  for (int i = 0; i < 200; ++i) {
    REQUIRE(w.Arm({a.fd[0]}, kick).ok());
    w.Disarm();
  }
  REQUIRE(w.Arm({a.fd[0]}, kick).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(kicks.load() == 2);
  a.Write();
  REQUIRE(Kicked(kicks, 3));
  w.Disarm();
  CHECK(w.kicks() == 3);
}

TEST_CASE("wake watcher: destroyed while armed and polling, it stops", "[transport][wake]") {
  Pipe a;
  std::atomic<int> kicks{0};
  {
    WakeWatcher w;
    REQUIRE(w.Arm({a.fd[0]}, [&] { kicks.fetch_add(1); }).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(kicks.load() == 0);
}

// Ranks 0 and 1 on host "a", rank 2 on host "b": rank 0's transport is shm (to 1) + `across`
// (to 2). Rank 0 waits for rank 2's message, which comes 200 ms late, in Poll: it sleeps on its
// shm doorbell, and only the watcher's kick can end that sleep before its 10 ms are up.
TEST_CASE("a rank asleep in shm is woken by the other host's message (MultiTransport)", "[transport][wake]") {
  for (const char* across : {"tcp", "ucx"}) {
    DYNAMIC_SECTION(across) {
      const std::vector<std::string> built = RegisteredTransports();
      if (std::find(built.begin(), built.end(), across) == built.end()) {
        WARN("SKIPPED: " << across << " is not built in");
        continue;
      }
      MemoryStore store;
      std::vector<PeerInfo> peers{{0, "wake-a"}, {1, "wake-a"}, {2, "wake-b"}};
      std::vector<Status> result(3);
      uint64_t kicks = 0;
      std::atomic<int> connected{0};
      std::vector<std::thread> ranks;
      for (int r = 0; r < 3; ++r)
        ranks.emplace_back([&, r] {
          TransportOptions o{r, 3, "127.0.0.1", "", "wake", peers, {}};
          auto t = ConnectPeers(store, "wake/", o, std::string("shm,") + across, Deadline::After(std::chrono::seconds(20)));
          if (!t.ok()) {
            result[static_cast<size_t>(r)] = t.status();
            connected.fetch_add(1);
            return;
          }
          connected.fetch_add(1);
          Transport& tr = **t;
          char buf[8] = {};
          auto reg = tr.Register(buf, sizeof(buf), MemKind::kHost);
          if (!reg.ok()) {
            result[static_cast<size_t>(r)] = reg.status();
            return;
          }
          std::vector<Completion> done;
          if (r == 2) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            std::memcpy(buf, "wake-up", 8);
            tr.endpoint(0)->PostSend(*reg, 0, 8, Tag{7, 0}, 1);
          } else if (r == 0) {
            tr.endpoint(2)->PostRecv(*reg, 0, 8, Tag{7, 0}, 1);
          } else {  // rank 1 only has to exist (rank 0's transport is shm + the other), to the end
            std::this_thread::sleep_for(std::chrono::milliseconds(600));
            return;
          }
          const Deadline until = Deadline::After(std::chrono::seconds(20));
          while (done.empty() && !until.Expired()) {
            Status s = tr.Poll(&done, until);
            if (!s.ok() && s.code() != Code::kDeadlineExceeded) {
              result[static_cast<size_t>(r)] = s;
              return;
            }
          }
          if (done.empty() || !done[0].status.ok()) {
            result[static_cast<size_t>(r)] = done.empty() ? DeadlineExceeded("no completion") : done[0].status;
            return;
          }
          if (r == 0) {
            if (std::strcmp(buf, "wake-up") != 0) result[0] = Internal(std::string("received '") + buf + "'");
            auto* multi = dynamic_cast<MultiTransport*>(&tr);
            if (multi == nullptr) result[0] = Internal("rank 0's transport is " + tr.Name() + ", not shm + another");
            else kicks = multi->kicks();
          }
          // Stay until rank 0 has its message (a closed transport could lose it on the way).
          std::this_thread::sleep_for(std::chrono::milliseconds(r == 2 ? 300 : 0));
        });
      for (auto& t : ranks) t.join();
      for (int r = 0; r < 3; ++r) {
        INFO("rank " << r << ": " << result[static_cast<size_t>(r)].ToString());
        CHECK(result[static_cast<size_t>(r)].ok());
      }
      // Rank 0 slept for most of 200 ms on its doorbell; the message ended that sleep by a kick.
      CHECK(kicks >= 1);
    }
  }
}

TEST_CASE("a kick ends a shm Poll's sleep at once, or the next one", "[transport][wake]") {
  MemoryStore store;
  std::vector<PeerInfo> peers{{0, "kick-a"}, {1, "kick-a"}};
  std::vector<std::unique_ptr<Transport>> t(2);
  std::vector<Status> made(2);
  {
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.emplace_back([&, r] {
        TransportOptions o{r, 2, "127.0.0.1", "", "kick", peers, {}};
        auto got = ConnectPeers(store, "kick/", o, "shm", Deadline::After(std::chrono::seconds(20)));
        if (got.ok()) t[static_cast<size_t>(r)] = std::move(got).value();
        else made[static_cast<size_t>(r)] = got.status();
      });
    for (auto& th : ranks) th.join();
  }
  REQUIRE((made[0].ok() && made[1].ok()));
  Transport& shm = *t[0];
  REQUIRE(shm.Kickable());
  std::vector<Completion> out;
  // Nothing will come: only the kick, 50 ms in, ends a wait that could last 20 s.
  const auto start = std::chrono::steady_clock::now();
  std::thread kicker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    shm.Kick();
  });
  Status s = shm.Poll(&out, Deadline::After(std::chrono::seconds(20)));
  kicker.join();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(s.ToString() << " after " << waited << " s");
  CHECK(s.code() == Code::kDeadlineExceeded);
  CHECK(s.message().find("woken for another back end") != std::string::npos);
  CHECK(waited < 10.0);
  // A kick with nobody asleep ends the next sleep instead.
  shm.Kick();
  s = shm.Poll(&out, Deadline::After(std::chrono::seconds(20)));
  CHECK(s.message().find("woken for another back end") != std::string::npos);
  CHECK(out.empty());
}
