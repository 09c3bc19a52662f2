// The C API's newer calls as jobs under hooprun, over every back end and at 1, 3 and 8 ranks:
// the nonblocking calls (tests/launch/c_nonblocking_test.c: requests in flight, waited out of
// order, tested until done, freed early, pending at finalize, refused when bad) and reduce,
// gather, scatter and alltoall (tests/launch/c_more_collectives_test.c), point-to-point
// (tests/launch/c_p2p_test.c; also with a tiny HOOP_UNEXPECTED_BYTES, and a receive that times out),
// sub-communicators (tests/launch/c_split_test.c; also a split one rank does not call).
#include <catch2/catch.hpp>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {

// Runs `program` as every rank of a job; each rank prints "<tag> ok rank R of N".
void RunEverywhere(const std::string& program, const std::string& tag) {
  for (const Backend& b : Backends()) {
    for (int n : {1, 3, 8}) {
      if (n == 8 && b.label != "shm" && b.label != "tcp") continue;  // 8 ranks: the two native back ends
      std::vector<std::string> cmd = {Bin("hooprun"), "-np", std::to_string(n), "--oversubscribe"};
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

TEST_CASE("C point-to-point over every back end", "[p2p]") {
  RunEverywhere("hoop-c-p2p-test", "c-p2p");
}

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

TEST_CASE("C sub-communicators over every back end", "[split]") {
  RunEverywhere("hoop-c-split-test", "c-split");
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
    for (int k = 0; k < 4; ++k) CHECK(r.output.find("c-split ok rank " + std::to_string(k) + " of 4") != std::string::npos);
    // Whichever side meets the other's call first names both.
    CHECK((r.output.find("collective allgather here, barrier on rank 3") != std::string::npos ||
           r.output.find("collective barrier here, allgather on rank") != std::string::npos));
  }
}
