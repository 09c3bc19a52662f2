// The C API's newer calls as jobs under hooprun, over every back end and at 1, 3 and 8 ranks:
// the nonblocking calls (tests/launch/c_nonblocking_test.c: requests in flight, waited out of
// order, tested until done, freed early, pending at finalize, refused when bad) and reduce,
// gather, scatter and alltoall (tests/launch/c_more_collectives_test.c).
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
