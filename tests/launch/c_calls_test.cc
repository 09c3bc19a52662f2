// The C API's newer calls as jobs under hooprun, over every back end and at 1, 3 and 8 ranks:
// the nonblocking calls (tests/launch/c_nonblocking_test.c: requests in flight, waited out of
// order, tested until done, freed early, pending at finalize, refused when bad) and reduce,
// gather, scatter and alltoall (tests/launch/c_more_collectives_test.c), point-to-point
// (tests/launch/c_p2p_test.c; also with a tiny HOOP_UNEXPECTED_BYTES, and a receive that times out).
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
