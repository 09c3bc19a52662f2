// Elastic hooprun (--min-np, --max-np, --host-discovery-script, --elastic-timeout, --reset-limit)
// with a real training loop in C (tests/launch/c_elastic_test.c): a killed rank's replacement is
// started and admitted by the survivors' grow and the job ends well with every step counted once;
// a host's slots added by the discovery script become a newcomer; the job is stopped under
// --min-np past --elastic-timeout, past --reset-limit, and when no rank it admitted is left; a
// newcomer nobody admits is stopped at the end. Each case checks hooprun's one-line events and
// that no process is left behind.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {

// The "c-elastic ok" lines: job rank -> the rest of the line.
std::map<int, std::string> Oks(const std::string& out) {
  std::map<int, std::string> oks;
  static const std::regex line("c-elastic ok job rank (\\d+): (.*)");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    oks[std::stoi((*it)[1].str())] = (*it)[2].str();
  return oks;
}

// A discovery script in a fresh folder: it prints `first` on its first `calls` runs, then `then`;
// its run number `fail` (0 the first) exits 1 instead.
std::string Script(const std::string& first, int calls, const std::string& then, int fail = -1) {
  char dir[] = "/tmp/hoop-elastic-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/discover.sh";
  std::ofstream f(path);
  f << "#!/bin/sh\nd=$(dirname \"$0\")\nn=$(cat \"$d/count\" 2>/dev/null || echo 0)\necho $((n+1)) > \"$d/count\"\n"
    << "if [ \"$n\" -eq " << fail << " ]; then exit 1; fi\n"
    << "if [ \"$n\" -ge " << calls << " ]; then printf '" << then << "'; else printf '" << first << "'; fi\n";
  f.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

void RemoveScript(const std::string& path) {
  const std::string dir = path.substr(0, path.rfind('/'));
  std::remove((dir + "/count").c_str());
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

ProcResult Elastic(std::vector<std::string> flags, std::vector<std::string> program, const std::string& marker,
                   const Backend* b = nullptr) {
  std::vector<std::string> cmd = {Bin("hooprun"), "--oversubscribe", "-x", "HOOP_TIMEOUT=30"};
  cmd.insert(cmd.end(), flags.begin(), flags.end());
  if (b)
    for (const auto& [k, v] : b->env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
  cmd.push_back(Bin("hoop-c-elastic-test"));
  cmd.insert(cmd.end(), program.begin(), program.end());
  cmd.push_back(marker);
  auto r = RunProc(cmd, Within(120));
  CHECK(WaitGone(marker, 10) == 0);
  return r;
}

}  // namespace

TEST_CASE("elastic hooprun: a killed rank's replacement is admitted and the job ends well", "[elastic]") {
  for (const Backend& b : NativeAndOneDrawn()) {
    const std::string marker = NewMarker();
    auto r = Elastic({"-np", "3", "--min-np", "2", "--max-np", "3"}, {"60", "3", "kill", "1", "at", "10"}, marker, &b);
    INFO(b.label << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output,
               Catch::Contains("hooprun: rank 1 (pid ") &&
                   Catch::Contains("was killed by signal 9 (Killed); 2 ranks live (--min-np 2), the others go on"));
    CHECK_THAT(r.output,
               Catch::Contains("hooprun: started rank 3 (pid ") &&
                   Catch::Contains("on host localhost, a newcomer: the job's ranks admit it at their next grow"));
    const auto oks = Oks(r.output);
    REQUIRE(oks.size() == 3);
    CHECK(oks.count(0) + oks.count(2) + oks.count(3) == 3);
    // One step count, one total, 3 ranks again, job rank 3 the newcomer. Every step counted
    // once: 10 steps of 3 ranks, then 2 until the grow at some step g, then 3 again.
    std::smatch m;
    REQUIRE(std::regex_match(oks.at(0), m, std::regex("step (\\d+), size 3, total (\\d+), newcomer 0")));
    const long step = std::stol(m[1].str()), total = std::stol(m[2].str());
    CHECK(step >= 60);
    const long grown_at = step - (total - 30 - 2 * (step - 10));
    CHECK(grown_at >= 10);
    CHECK(grown_at <= step);
    CHECK(oks.at(2) == oks.at(0));
    CHECK(oks.at(3) == oks.at(0).substr(0, oks.at(0).size() - 1) + "1");
  }
}

TEST_CASE("elastic hooprun: slots the discovery script adds get a newcomer; a failed run changes nothing",
          "[elastic]") {
  // 2 slots; the second run fails; from the fourth, 3 slots.
  const std::string script = Script("localhost:2\\n", 3, "localhost:3\\n", 1);
  const std::string marker = NewMarker();
  auto r = Elastic({"--min-np", "2", "--host-discovery-script", script}, {"20", "3"}, marker);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("hooprun: --host-discovery-script '" + script +
                                       "' exited with code 1; the hosts stay as they were"));
  CHECK_THAT(r.output, Catch::Contains("hooprun: host localhost now has 3 slots (--host-discovery-script)"));
  CHECK_THAT(r.output, Catch::Contains("hooprun: started rank 2 (pid "));
  const auto oks = Oks(r.output);
  REQUIRE(oks.size() == 3);
  CHECK_THAT(oks.at(2), Catch::Contains("size 3") && Catch::EndsWith("newcomer 1"));
  RemoveScript(script);
}

TEST_CASE("elastic hooprun: under --min-np past --elastic-timeout, the job is stopped", "[elastic]") {
  // 3 slots at first, then 2: the killed rank's slot is gone, so no replacement comes.
  const std::string script = Script("localhost:3\\n", 2, "localhost:2\\n");
  const std::string marker = NewMarker();
  auto r = Elastic({"-np", "3", "--min-np", "3", "--host-discovery-script", script, "--elastic-timeout", "2"},
                   {"100000", "3", "kill", "1", "at", "150"}, marker);
  RemoveScript(script);
  INFO(r.output);
  CHECK(r.exit_code == 137);  // the lost rank's
  CHECK_THAT(r.output, Catch::Contains("hooprun: host localhost now has 2 slots (--host-discovery-script)"));
  CHECK_THAT(
      r.output,
      Catch::Contains("hooprun: 2 ranks live (--min-np 3): fewer than --min-np; waiting up to --elastic-timeout 2 s "
                      "for hosts"));
  CHECK_THAT(r.output, Catch::Contains("hooprun: fewer than --min-np 3 ranks for --elastic-timeout 2 s (2 live); "
                                       "stopped the other ranks"));
  CHECK(r.output.find("c-elastic ok") == std::string::npos);
}

TEST_CASE("elastic hooprun: past --reset-limit the job is stopped", "[elastic]") {
  const std::string marker = NewMarker();
  auto r = Elastic({"-np", "2", "--min-np", "1", "--reset-limit", "2"},
                   {"100000", "2", "kill", "1", "at", "5", "newcomers-die"}, marker);
  INFO(r.output);
  CHECK(r.exit_code == 137);
  CHECK_THAT(r.output, Catch::Contains("hooprun: rank 2 (pid ") && Catch::Contains("exited with code 3"));
  CHECK_THAT(r.output, Catch::Contains("hooprun: --reset-limit 2 reached (rank 3 (pid "));
}

TEST_CASE("elastic hooprun: no rank left to admit newcomers", "[elastic]") {
  SECTION("the only rank fails: the job fails at once") {
    const std::string marker = NewMarker();
    auto r = Elastic({"-np", "1", "--min-np", "1"}, {"100", "1", "kill", "0", "at", "5"}, marker);
    INFO(r.output);
    CHECK(r.exit_code == 137);
    CHECK(r.seconds < 10);
    CHECK_THAT(r.output, Catch::Contains("hooprun: no rank the job admitted is left (each failed or was stopped), so "
                                         "none can take newcomers in; stopped the other ranks"));
  }
  SECTION("the job ends well before it admits a newcomer: the newcomer is stopped, the job succeeds") {
    const std::string marker = NewMarker();
    auto r = Elastic({"-np", "2", "--min-np", "1"}, {"100", "1", "kill", "1", "at", "5", "no-grow"}, marker);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("hooprun: rank 2 was never admitted: no rank of the job is left to admit it; "
                                         "stopping it"));
    CHECK(Oks(r.output).size() == 1);
  }
}

TEST_CASE("elastic hooprun: a discovery script that fails or lists nothing at start is refused", "[elastic]") {
  auto failing =
      RunProc({Bin("hooprun"), "--host-discovery-script", "exit 3", Bin("hoop-c-elastic-test"), "1", "1"}, Within(30));
  CHECK(failing.exit_code == 2);
  CHECK_THAT(failing.output, Catch::Contains("hooprun: --host-discovery-script 'exit 3' exited with code 3"));
  auto empty =
      RunProc({Bin("hooprun"), "--host-discovery-script", "true", Bin("hoop-c-elastic-test"), "1", "1"}, Within(30));
  CHECK(empty.exit_code == 2);
  CHECK_THAT(empty.output, Catch::Contains("hooprun: --host-discovery-script 'true' listed no host"));
}
