// The C API's nonblocking calls (tests/launch/c_nonblocking_test.c) as a job under hooprun, over
// every back end and at 1, 3 and 8 ranks: requests in flight, waited out of order, tested until
// done, freed early, pending at finalize, and refused when bad.
#include <catch2/catch.hpp>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("nonblocking C calls over every back end", "[nonblocking]") {
  for (const Backend& b : Backends()) {
    for (int n : {1, 3, 8}) {
      if (n == 8 && b.label != "shm" && b.label != "tcp") continue;  // 8 ranks: the two native back ends
      std::vector<std::string> cmd = {Bin("hooprun"), "-np", std::to_string(n), "--oversubscribe"};
      for (const auto& [k, v] : b.env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
      cmd.push_back(Bin("hoop-c-nonblocking-test"));
      auto r = RunProc(cmd, Within(120));
      INFO(b.label << ", " << n << " ranks\n" << r.output);
      CHECK(r.exit_code == 0);
      for (int k = 0; k < n; ++k)
        CHECK(r.output.find("c-nonblocking ok rank " + std::to_string(k) + " of " + std::to_string(n)) !=
              std::string::npos);
    }
  }
}
