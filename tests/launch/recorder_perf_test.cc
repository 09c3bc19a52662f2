// `hoop-perf recorder` as a user runs it: the flight recorder's cost side by side (recording
// against not, and --ops 0, neither: the method's own bias), its JSON, help and refusals. What it
// measures is docs/PERF.md's; here, that it runs, checks its results and says what it did.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/perf_output.h"
#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("hoop-perf recorder times recording against not, and --ops 0 against itself", "[perf][trace]") {
  for (const char* ops : {"2000", "0"}) {
    DYNAMIC_SECTION("--ops " << ops) {
      const std::string json = "/tmp/hoop-perf-recorder-" + std::to_string(::getpid()) + ".json";
      auto r = RunProc({Bin("hooprun"), "-np", "2", "--oversubscribe", Bin("hoop-perf"), "recorder", "-R", "4", "-n",
                        "200", "--ops", ops, "--json", json},
                       Within(120));
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find("hoop-perf recorder: 2 ranks over ") != std::string::npos);
      CHECK(r.output.find("# medians: recording ") != std::string::npos);
      CHECK(r.output.find("results checked: right") != std::string::npos);
      CHECK((r.output.find("neither communicator records") != std::string::npos) == (std::string(ops) == "0"));
      const std::string j = Slurp(json);
      std::remove(json.c_str());
      for (const std::string& key :
           std::vector<std::string>{"\"bench\": \"recorder\"", "\"ranks\": 2", "\"blocks\": 4", "\"right\": true",
                                    "\"ratio\": ", std::string("\"ops\": ") + ops})
        CHECK(j.find(key) != std::string::npos);
    }
  }
}

TEST_CASE("hoop-perf recorder --help and bad options", "[perf][trace]") {
  auto h = RunProc({Bin("hoop-perf"), "recorder", "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("--ops N") != std::string::npos);
  CHECK(h.output.find("A/A") != std::string::npos);
  auto b = RunProc({Bin("hoop-perf"), "recorder", "--ops", "-1"});
  CHECK(b.exit_code == 2);
  CHECK(b.output.find("--ops '-1'") != std::string::npos);
  auto c = RunProc({Bin("hoop-perf"), "recorder", "--bytes", "6"});
  CHECK(c.exit_code == 2);
  auto u = RunProc({Bin("hoop-perf"), "recorder", "--fast"});
  CHECK(u.exit_code == 2);
  CHECK(u.output.find("unknown option '--fast'") != std::string::npos);
}
