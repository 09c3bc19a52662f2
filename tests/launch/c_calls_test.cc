// The C API's newer calls as jobs under hooprun, over every back end and at 1, 3 and 8 ranks:
// the nonblocking calls (tests/launch/c_nonblocking_test.c: requests in flight, waited out of
// order, tested until done, freed early, pending at finalize, refused when bad) and reduce,
// gather, scatter and alltoall (tests/launch/c_more_collectives_test.c), point-to-point
// (tests/launch/c_p2p_test.c; also with a tiny HOOP_UNEXPECTED_BYTES, and a receive that times out),
// sub-communicators (tests/launch/c_split_test.c; also a split one rank does not call),
// hoop_comm_revoke (tests/launch/c_revoke_test.c), hoop_comm_shrink (tests/launch/c_shrink_test.c)
// and hoop_comm_grow (tests/launch/c_grow_test.c).
#include <catch2/catch.hpp>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {

// Runs `program` as every rank of a job; each rank prints "<tag> ok rank R of N".
void RunEverywhere(const std::string& program, const std::string& tag, const std::vector<std::string>& flags = {}) {
  for (const Backend& b : Backends()) {
    for (int n : {1, 3, 8}) {
      if (n == 8 && b.label != "shm" && b.label != "tcp") continue;  // 8 ranks: the two native back ends
      std::vector<std::string> cmd = {Bin("hooprun"), "-np", std::to_string(n), "--oversubscribe"};
      cmd.insert(cmd.end(), flags.begin(), flags.end());
      for (const auto& [k, v] : b.env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
      cmd.push_back(Bin(program));
      auto r = RunProc(cmd, Within(120));
      INFO(program << ", " << b.label << ", " << n << " ranks\n" << r.output);
      CHECK(r.exit_code == 0);
      for (int k = 0; k < n; ++k)
        CHECK(r.output.find(tag + " ok rank " + std::to_string(k) + " of " + std::to_string(n)) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("nonblocking C calls over every back end", "[nonblocking]") {
  RunEverywhere("hoop-c-nonblocking-test", "c-nonblocking");
}

TEST_CASE("C reduce, gather, scatter and alltoall over every back end", "[collectives]") {
  RunEverywhere("hoop-c-more-collectives-test", "c-more-collectives");
}

TEST_CASE("C point-to-point over every back end", "[p2p]") { RunEverywhere("hoop-c-p2p-test", "c-p2p"); }

TEST_CASE("C point-to-point with little room for unexpected messages: senders wait", "[p2p]") {
  for (const char* label : {"shm", "tcp"}) {
    if (!Selected(label)) continue;
    std::vector<std::string> cmd = {Bin("hooprun"), "-np", "3", "--oversubscribe", "-x", "HOOP_UNEXPECTED_BYTES=4K"};
    for (const auto& [k, v] : Named(label).env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
    cmd.insert(cmd.end(), {Bin("hoop-c-p2p-test"), "credit"});
    auto r = RunProc(cmd, Within(120));
    INFO(label << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("c-p2p ok rank 2 of 3") != std::string::npos);
  }
}

TEST_CASE("C point-to-point: a receive nobody sends to fails at HOOP_TIMEOUT naming peer and tag", "[p2p]") {
  for (const char* label : {"shm", "tcp"}) {
    if (!Selected(label)) continue;
    std::vector<std::string> cmd = {Bin("hooprun"), "-np", "2", "-x", "HOOP_TIMEOUT=2"};
    for (const auto& [k, v] : Named(label).env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
    cmd.insert(cmd.end(), {Bin("hoop-c-p2p-test"), "timeout"});
    auto r = RunProc(cmd, Within(60));
    INFO(label << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("c-p2p ok rank 0 of 2") != std::string::npos);
    CHECK(r.output.find("c-p2p ok rank 1 of 2") != std::string::npos);
  }
}

TEST_CASE("C sub-communicators over every back end", "[split]") { RunEverywhere("hoop-c-split-test", "c-split"); }

// A revoke by one rank fails the others' running allreduce at once (well inside the 60 s
// HOOP_TIMEOUT), and every later call on the communicator and on those sharing its connections.
TEST_CASE("C revoke over every back end: every rank's calls fail as revoked, naming who and why", "[revoke]") {
  RunEverywhere("hoop-c-revoke-test", "c-revoke", {"-x", "HOOP_TIMEOUT=60"});
}

// A rank killed mid-job (rank 0 included: hooprun serves the store): the survivors' allreduce
// fails, they shrink, and the shrunk communicator computes right with the survivors in order; a
// second rank killed inside the shrink costs another round or shrink, not a hang. Every back end.
TEST_CASE("C shrink after a SIGKILL over every back end: the survivors go on", "[shrink]") {
  struct Case {
    int n;
    std::vector<std::string> args;
  };
  const std::vector<Case> cases = {{2, {"0"}}, {3, {"last"}}, {4, {"1", "last"}}, {8, {"0", "5"}}};
  for (const Backend& b : Backends()) {
    for (const Case& c : cases) {
      if (c.n == 8 && b.label != "shm" && b.label != "tcp") continue;
      std::vector<std::string> args = c.args;
      if (args.size() > 1 && b.label == "ucx/tcp" && UcxTcpAbortsOnDeathDuringWireup()) {
        WARN("ucx/tcp, " << c.n << " ranks: rank " << args[1]
                         << " is not killed inside the shrink: this UCX (before 1.14) aborts a survivor wiring "
                            "to a rank that dies meanwhile (openucx/ucx#8175)");
        args.pop_back();
      }
      std::vector<std::string> cmd = {Bin("hooprun"),       "-np", std::to_string(c.n), "--oversubscribe",
                                      "--enable-recovery",  "-x",  "HOOP_TIMEOUT=60",   "-x",
                                      "HOOP_SHRINK_WAIT=30"};
      for (const auto& [k, v] : b.env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
      cmd.push_back(Bin("hoop-c-shrink-test"));
      cmd.insert(cmd.end(), args.begin(), args.end());
      auto r = RunProc(cmd, Within(120));
      INFO(b.label << ", " << c.n << " ranks, killed: " << args[0] << (args.size() > 1 ? " and " + args[1] : "") << "\n"
                   << r.output);
      CHECK(r.exit_code == 137);  // hooprun --enable-recovery: the first failed rank's code (SIGKILL)
      CHECK(r.seconds < 30);      // no one waited out HOOP_SHRINK_WAIT: the dead were known at once
      const int dead = static_cast<int>(args.size());
      size_t oks = 0;
      for (size_t at = 0; (at = r.output.find("c-shrink ok rank", at)) != std::string::npos; ++at) ++oks;
      CHECK(oks == static_cast<size_t>(c.n - dead));
      CHECK(r.output.find(" of " + std::to_string(c.n) + " -> ") != std::string::npos);
    }
  }
}

// A stopped rank (SIGSTOP, continued 15 s later) is no failed one: the others' allreduce times
// out, their shrink waits HOOP_SHRINK_WAIT for it and goes on without it, and once continued its
// own shrink says it was left out.
TEST_CASE("C shrink around a stopped rank: it is left out after HOOP_SHRINK_WAIT, and told so", "[shrink]") {
  for (const char* label : {"tcp", "shm"}) {
    if (!Selected(label)) continue;
    std::vector<std::string> cmd = {Bin("hooprun"),      "-np", "3", "--oversubscribe", "-x", "HOOP_TIMEOUT=4", "-x",
                                    "HOOP_SHRINK_WAIT=2"};
    for (const auto& [k, v] : Named(label).env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
    cmd.insert(cmd.end(), {Bin("hoop-c-shrink-test"), "stop", "1"});
    auto r = RunProc(cmd, Within(90));
    INFO(label << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("c-shrink ok rank 0 of 3 -> 0 of 2") != std::string::npos);
    CHECK(r.output.find("c-shrink ok rank 2 of 3 -> 1 of 2") != std::string::npos);
    CHECK(r.output.find("c-shrink left out rank 1") != std::string::npos);
  }
}

// hoop_comm_shrink_excluding: a live rank left out by the others (PyTorch's shrink_group, NCCL's
// ncclCommShrink); nobody waits HOOP_SHRINK_WAIT (60 s here) for it. tcp, shm and one other
// back end drawn per run (NativeAndOneDrawn; HOOPTEST_SEED repeats a draw).
TEST_CASE("C shrink excluding a live rank over tcp, shm and a drawn back end", "[shrink]") {
  for (const Backend& b : NativeAndOneDrawn()) {
    std::vector<std::string> cmd = {Bin("hooprun"), "-np", "4", "--oversubscribe", "-x", "HOOP_SHRINK_WAIT=60"};
    for (const auto& [k, v] : b.env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
    cmd.insert(cmd.end(), {Bin("hoop-c-shrink-test"), "exclude", "2"});
    auto r = RunProc(cmd, Within(90));
    INFO(b.label << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.seconds < 30);
    CHECK(r.output.find("c-shrink excluded rank 2") != std::string::npos);
    for (const char* line : {"c-shrink ok rank 0 of 4 -> 0 of 3", "c-shrink ok rank 1 of 4 -> 1 of 3",
                             "c-shrink ok rank 3 of 4 -> 2 of 3"})
      CHECK(r.output.find(line) != std::string::npos);
  }
}

// Newcomers admitted by hoop_comm_grow through the store (hoop_init_join): two added to a job,
// and one in the place of a rank killed, after the survivors shrank. tcp, shm and one other back
// end drawn per run (NativeAndOneDrawn; HOOPTEST_SEED repeats a draw).
TEST_CASE("C grow over tcp, shm and a drawn back end: newcomers join, old ranks keep their numbers", "[grow]") {
  for (const Backend& b : NativeAndOneDrawn()) {
    for (const auto& [n, args] : std::vector<std::pair<int, std::vector<std::string>>>{
             {1, {"add", "2"}}, {3, {"add", "1"}}, {4, {"replace"}}}) {
      std::vector<std::string> cmd = {Bin("hooprun"),      "-np", std::to_string(n), "--oversubscribe",
                                      "--enable-recovery", "-x",  "HOOP_TIMEOUT=60"};
      for (const auto& [k, v] : b.env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
      cmd.push_back(Bin("hoop-c-grow-test"));
      cmd.insert(cmd.end(), args.begin(), args.end());
      auto r = RunProc(cmd, Within(120));
      INFO(b.label << ", " << n << " ranks, " << args[0] << "\n" << r.output);
      const bool replace = args[0] == "replace";
      CHECK(r.exit_code == (replace ? 137 : 0));
      const int total = replace ? n : n + std::stoi(args[1]);
      const int newcomers = replace ? 1 : std::stoi(args[1]);
      for (int k = total - newcomers; k < total; ++k)
        CHECK(r.output.find("c-grow ok rank " + std::to_string(k) + " of " + std::to_string(total) + ", newcomer") !=
              std::string::npos);
      size_t oks = 0;
      for (size_t at = 0; (at = r.output.find("c-grow ok rank", at)) != std::string::npos; ++at) ++oks;
      CHECK(oks == static_cast<size_t>(total));
    }
  }
}

TEST_CASE("C split that one rank does not call: every rank gets an error, none hangs", "[split]") {
  for (const char* label : {"shm", "tcp"}) {
    if (!Selected(label)) continue;
    std::vector<std::string> cmd = {Bin("hooprun"), "-np", "4", "--oversubscribe", "-x", "HOOP_TIMEOUT=20"};
    for (const auto& [k, v] : Named(label).env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
    cmd.insert(cmd.end(), {Bin("hoop-c-split-test"), "missing"});
    auto r = RunProc(cmd, Within(60));
    INFO(label << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.seconds < 15);  // the disagreement is seen at once, not at HOOP_TIMEOUT
    for (int k = 0; k < 4; ++k)
      CHECK(r.output.find("c-split ok rank " + std::to_string(k) + " of 4") != std::string::npos);
    // Whichever side meets the other's call first names both: the split by name, not by the
    // allgather it runs.
    CHECK((r.output.find("collective split here, barrier on rank 3") != std::string::npos ||
           r.output.find("collective barrier here, split on rank") != std::string::npos));
    CHECK(r.output.find("collective allgather") == std::string::npos);
  }
}

TEST_CASE("signal actions a program set survive loading libhoop and starting every back end", "[signals]") {
  // hoop-c-signals-test sets SIGINT and SIGTERM handlers and ignores SIGHUP before it dlopens
  // libhoop (as Python does before `import hoop`); UCX and libfabric's psm install handlers of
  // their own when loaded or started. Every back end, 2 ranks.
  for (const Backend& b : Backends()) {
    std::vector<std::string> cmd = {Bin("hooprun"), "-np", "2"};
    for (const auto& [k, v] : b.env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
    cmd.insert(cmd.end(), {Bin("hoop-c-signals-test"), std::string(HOOP_BUILD_DIR) + "/lib/libhoop.so"});
    auto r = RunProc(cmd, Within(60));
    INFO(b.label << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("c-signals ok rank 1 of 2") != std::string::npos);
  }
}

TEST_CASE("completed nonblocking sends reach a late receiver after the sender finalized and exited",
          "[p2p][finalize]") {
  // K isends + wait_all + finalize + exit on rank 0, rank 1 receiving 100 ms later: 0 lost, on
  // tcp, shm and one other back end drawn per run (HOOPTEST_SEED; HOOPTEST_BACKENDS=... takes
  // those named), small (inside their frames) and mixed sizes, and receives that start only
  // after the receiver saw the sender leave ("left"). HOOPTEST_FINALIZE_RUNS (default 1, about
  // 25 s in all) runs of each; issue 48's bar is 20, run by hand (docs/PERF.md has none: this is
  // not speed).
  const char* env = std::getenv("HOOPTEST_FINALIZE_RUNS");
  const int runs = env ? std::max(1, std::atoi(env)) : 1;
  for (const Backend& b : NativeAndOneDrawn())
    for (const char* k : {"1", "100", "1000", "10000"})
      for (const char* mode : {"small", "mixed", "left"})
        for (int run = 0; run < runs; ++run) {
          // "left": receives posted only after the sender's exit was seen; K up to 1000 (time).
          if (std::string(mode) == "left" && std::atoi(k) > 1000) continue;
          std::vector<std::string> cmd = {Bin("hooprun"), "-np", "2"};
          for (const auto& [key, v] : b.env) cmd.insert(cmd.end(), {"-x", key + "=" + v});
          cmd.insert(cmd.end(), {Bin("hoop-c-finalize-test"), k, mode});
          auto r = RunProc(cmd, Within(90));
          INFO(b.label << ", K " << k << " " << mode << ", run " << run << "\n" << r.output);
          REQUIRE(r.exit_code == 0);
          CHECK(r.output.find("c-finalize ok rank 1 of 2: " + std::string(k) + " messages") != std::string::npos);
        }
}

TEST_CASE("hoop_wait_all is linear in its requests: 100k against 10k", "[p2p][waitall]") {
  // A halo exchange of 100k requests once took minutes (a quadratic check for repeats). Linear
  // means 10x the requests in about 10x the time; 30x plus a second of slack leaves room for a
  // busy machine and still fails the quadratic 100x.
  auto seconds = [](int k) {
    auto r = RunProc({Bin("hooprun"), "-np", "2", "-x", "HOOP_TRANSPORT=shm", Bin("hoop-c-finalize-test"),
                      std::to_string(k), "waitall"},
                     Within(120));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    double worst = 0;
    for (size_t at = 0; (at = r.output.find("seconds ", at)) != std::string::npos; at += 8)
      worst = std::max(worst, std::atof(r.output.c_str() + at + 8));
    return worst;
  };
  const double small = seconds(10000), large = seconds(100000);
  INFO("10k: " << small << " s, 100k: " << large << " s");
  CHECK(large < 30 * small + 1.0);
}

TEST_CASE("two communicators on one set of connections, run in different orders by different ranks, do not hang",
          "[comm][views]") {
  // A dup's allreduce in flight on even ranks while odd ranks first run the world's: the dup's
  // early message must not hold up the world's behind it on the link (tcp and shm stalled the
  // link: each side waited for the other until HOOP_TIMEOUT). A small and a pipelined size.
  for (const Backend& b : Backends())
    for (const char* n : {"1", "300000"}) {
      std::vector<std::string> cmd = {Bin("hooprun"), "-np", "3", "--oversubscribe", "-x", "HOOP_TIMEOUT=20"};
      for (const auto& [key, v] : b.env) cmd.insert(cmd.end(), {"-x", key + "=" + v});
      cmd.insert(cmd.end(), {Bin("hoop-c-views-test"), n});
      auto r = RunProc(cmd, Within(90));
      INFO(b.label << ", " << n << " elements\n" << r.output);
      CHECK(r.exit_code == 0);
      for (int rank = 0; rank < 3; ++rank)
        CHECK(r.output.find("c-views ok rank " + std::to_string(rank) + " of 3") != std::string::npos);
    }
}
