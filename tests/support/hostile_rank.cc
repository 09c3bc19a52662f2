// hoop-test-rank's hostile clients. Mode `strangers` (2 ranks over tcp): Rank 0 plays a stranger
// before it joins: it reads rank 1's listening address from the job's store and sends, to that
// port and to the store server, connections that say nothing, that send garbage, that present a
// wrong token, and (to the rank) a right token for another communicator. Rank 1 is by then in
// start-up, waiting for rank 0 to dial. Then rank 0 joins and both run checked allreduces while
// rank 0 sends a second round of strangers, now including a connection that presents the job's
// token and communicator as a stale peer would. Every stranger must be refused (the rank and the
// store server log each), none may delay the job (before, each silent connection cost start-up
// 5 s), and every result must be right.
//
// Mode `fd_flood` (hooprun started with a low soft limit on descriptors): rank 0 opens silent
// connections to the store until hooprun has no descriptors left, holds them, and measures the
// CPU time hooprun (its parent) spends meanwhile. A server that cannot accept must not spin on
// its listening socket (before: 100% of a core); the store must still work afterwards.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives/api/bootstrap.h"
#include "tests/support/rank_support.h"
#include "transport/store/tcp_store.h"
#include "transport/util/handshake.h"

namespace hoop {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Connects to `to` and plays stranger `what`; every connection is kept open (appended to `held`)
// so silent ones stay silent for as long as the test wants. With `await` the answer to a hello is
// awaited and printed; without, the hello is sent and the answer left for later (a rank still
// waiting for its peers' addresses reads it only when it starts accepting).
void Play(const std::string& what, const HostPort& to, const std::string& token, std::vector<Fd>* held,
          bool await = true) {
  auto fd = ConnectRetry(to, Deadline::After(std::chrono::seconds(5)));
  if (!fd.ok()) {
    std::printf("rank 0: stranger %s at %s: could not connect: %s\n", what.c_str(), to.ToString().c_str(),
                fd.status().message().c_str());
    return;
  }
  std::string outcome = "sent";
  if (what == "silent") {
    held->push_back(std::move(fd).value());
    outcome = "holding it open";
  } else if (what == "garbage") {
    std::string junk(200, '\0');
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>(i * 37 + 11);
    (void)SendAll(fd->get(), junk.data(), junk.size(), Deadline::After(std::chrono::seconds(2)));
    held->push_back(std::move(fd).value());
  } else {
    // A hello: the wrong token, another communicator, or (after start-up) the job's own.
    Hello h;
    h.kind = what == "wrong-token-store" ? HelloKind::kStoreClient : HelloKind::kPeer;
    h.rank = 0;
    h.comm = what == "other-communicator" ? "not-this-one" : "world";
    Status s = SendHello(fd->get(), what.rfind("wrong-token", 0) == 0 ? "not-the-token" : token, h,
                         Deadline::After(std::chrono::seconds(await ? 3 : 0)));
    outcome = s.ok() ? "ACCEPTED" : await ? s.ToString() : "hello sent";
    held->push_back(std::move(fd).value());
  }
  std::printf("rank 0: stranger %s at %s: %s\n", what.c_str(), to.ToString().c_str(), outcome.c_str());
}

StatusOr<HostPort> RankOneAddress(Store& store) {
  HOOP_ASSIGN_OR_RETURN(std::string rec, store.Get("hoop/world/addr/1", Deadline::After(std::chrono::seconds(20))));
  size_t at = rec.find("tcp=");
  if (at == std::string::npos) return InvalidArgument("rank 1 offers no tcp address: " + rec);
  size_t end = rec.find(' ', at);
  return ParseHostPort(rec.substr(at + 4, end == std::string::npos ? std::string::npos : end - at - 4));
}

bool Allreduces(Communicator& c, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    std::vector<int> x(10000, c.rank() + i);
    Status s = c.Allreduce({x.data(), x.size(), DType::kI32}, {x.data(), x.size(), DType::kI32}, ReduceOp::kSum).Wait();
    if (!s.ok() || x[9999] != 1 + 2 * i) {
      std::printf("rank %d: FAIL allreduce %d: %s\n", c.rank(), i, s.ToString().c_str());
      return false;
    }
  }
  return true;
}

// utime + stime of a process, in seconds.
double CpuSeconds(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t at = stat.rfind(')');
  if (at == std::string::npos) return -1;
  std::istringstream is(stat.substr(at + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && is >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

int RunFdFlood(const Config& cfg) {
  auto job = JoinJob(cfg);
  if (!job.ok()) {
    std::printf("rank %d: FAIL join: %s\n", cfg.rank, job.status().ToString().c_str());
    return 1;
  }
  Communicator& c = *(*job)->comm;
  int code = 0;
  if (cfg.rank == 0) {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;  // ours may be raised; hooprun keeps its low one
    ::setrlimit(RLIMIT_NOFILE, &lim);
    auto hp = ParseHostPort(cfg.store.substr(6));
    std::vector<Fd> held;
    for (int i = 0; i < 200 && hp.ok(); ++i) {
      auto fd = ConnectRetry(*hp, Deadline::After(std::chrono::seconds(1)));
      if (fd.ok()) held.push_back(std::move(fd).value());
    }
    const int hooprun = ::getppid();
    const double before = CpuSeconds(hooprun);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double used = CpuSeconds(hooprun) - before;
    std::printf("rank 0: held %zu connections; hooprun used %.2f s of CPU in 2 s\n", held.size(), used);
    if (used > 0.5) code = 1;
    held.clear();
    // The store serves again once descriptors are free.
    auto store = OpenStore(cfg.store, cfg.token, Deadline::After(std::chrono::seconds(10)));
    const Status set = store.ok() ? (*store)->Set("after-flood", "yes") : store.status();
    if (!set.ok()) {
      std::printf("rank 0: FAIL the store does not serve after the flood: %s\n", set.ToString().c_str());
      code = 1;
    }
  }
  if (!Allreduces(c, 3)) code = 1;
  std::printf("rank %d: fd_flood %s\n", cfg.rank, code ? "FAILED" : "ok");
  return code;
}

int RunStrangers(const Config& cfg) {
  std::vector<Fd> held;
  HostPort store_at;
  if (cfg.rank == 0) {
    auto hp = ParseHostPort(cfg.store.substr(6));
    auto store = OpenStore(cfg.store, cfg.token, Deadline::After(std::chrono::seconds(10)));
    if (!hp.ok() || !store.ok()) {
      std::printf("rank 0: FAIL cannot reach the store %s\n", cfg.store.c_str());
      return 1;
    }
    store_at = *hp;
    // Rank 1 creates its listener once every rank's host is known: say ours, as start-up would.
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    (void)(*store)->Set("hoop/world/host/0", host);
    auto peer = RankOneAddress(**store);
    if (!peer.ok()) {
      std::printf("rank 0: FAIL %s\n", peer.status().ToString().c_str());
      return 1;
    }
    for (const char* w : {"silent", "silent", "silent", "garbage", "wrong-token", "other-communicator"})
      Play(w, *peer, cfg.token, &held, false);
    for (const char* w : {"silent", "garbage", "wrong-token-store"}) Play(w, store_at, cfg.token, &held);
  }
  const auto t0 = Clock::now();
  int code = 0;
  auto job = JoinJob(cfg);
  if (!job.ok()) {
    std::printf("rank %d: FAIL join: %s\n", cfg.rank, job.status().ToString().c_str());
    return 1;
  }
  Communicator& c = *(*job)->comm;
  std::printf("rank %d: joined in %.2f s\n", cfg.rank, Since(t0));
  if (!Allreduces(c, 5)) code = 1;
  if (cfg.rank == 0) {
    // The rank's address again, now that start-up is over: a second round, a stale peer too.
    auto store = OpenStore(cfg.store, cfg.token, Deadline::After(std::chrono::seconds(10)));
    auto peer = store.ok() ? RankOneAddress(**store) : StatusOr<HostPort>(store.status());
    if (!peer.ok()) {
      std::printf("rank 0: FAIL %s\n", peer.status().ToString().c_str());
      return 1;
    }
    for (const char* w : {"silent", "garbage", "wrong-token", "other-communicator", "stale-peer"})
      Play(w, *peer, cfg.token, &held);
    for (const char* w : {"silent", "garbage", "wrong-token-store"}) Play(w, store_at, cfg.token, &held);
  }
  if (!Allreduces(c, 20)) code = 1;
  if (!c.Barrier().Wait().ok()) code = 1;
  std::printf("rank %d: strangers done in %.2f s, %s\n", cfg.rank, Since(t0), code ? "FAILED" : "all results right");
  return code;
}

}  // namespace hoop
