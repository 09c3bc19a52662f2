// hoop-perf through hooprun: the acceptance sweep (4 ranks, 8 B to 16 MiB, every result
// checked) for ring, tree and doubling, the JSON output, and the other collectives.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {
int RowsWithWrong(const std::string& out, const std::string& wrong) {
  std::istringstream is(out);
  std::string line;
  int rows = 0;
  while (std::getline(is, line)) {
    if (line.find("[0] ") != 0 || line.find('#') != std::string::npos) continue;
    std::istringstream ls(line.substr(4));
    std::string f, last;
    while (ls >> f) last = f;
    if (last == wrong) ++rows;
  }
  return rows;
}
}  // namespace

TEST_CASE("hoop-perf allreduce sweep is correct at every size, ring, tree and doubling", "[perf]") {
  for (const char* algo : {"ring", "tree", "doubling"}) {
    DYNAMIC_SECTION(algo) {
      auto r = RunProc({Bin("hooprun"), "-np", "4", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "16M", "-f", "4",
                        "-c", "1", "-n", "3", "-w", "1", "--algo", algo},
                       Within(180));
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(RowsWithWrong(r.output, "0") == 11);  // 8, 32, ..., 8M: 11 sizes
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      CHECK(r.output.find(std::string(" ") + algo + " ") != std::string::npos);
    }
  }
}

TEST_CASE("the acceptance sweep is correct over every back end", "[perf][transport]") {
  for (const Backend& b : Backends()) {
    DYNAMIC_SECTION(b.label) {
      ProcOptions o;
      o.env = b.env;
      o.timeout_s = 180;
      auto r = RunProc({Bin("hooprun"), "-np", "4", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "16M", "-f", "4",
                        "-c", "1", "-n", "3", "-w", "1"},
                       o);
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(RowsWithWrong(r.output, "0") == 11);
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      // hoop-perf reports the back end it ran over.
      CHECK(r.output.find("transport " + b.env.at("HOOP_TRANSPORT")) != std::string::npos);
    }
  }
}

// Eight ranks on two cores: every waiting rank must get off the CPU (spin briefly, then
// sleep on its futex), or the sweep crawls.
TEST_CASE("8 ranks on 2 cores over shm: a 16 MiB sweep finishes and is correct", "[perf][transport]") {
  ProcOptions o;
  o.env = {{"HOOP_TRANSPORT", "shm"}};
  o.timeout_s = 240;
  auto r = RunProc({Bin("hooprun"), "-np", "8", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "16M", "-f", "4",
                    "-c", "1", "-n", "3", "-w", "1"},
                   o);
  INFO(r.output);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(RowsWithWrong(r.output, "0") == 11);
  WARN("8 ranks over shm, 8 B to 8 MiB: " << r.seconds << " s");
}

TEST_CASE("hoop-perf writes JSON and checks every collective", "[perf]") {
  std::string json = "/tmp/hoop-perf-test-" + std::to_string(::getpid()) + ".json";
  for (const char* coll : {"broadcast", "allgather", "reduce_scatter"}) {
    DYNAMIC_SECTION(coll) {
      auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), coll, "-b", "1K", "-e", "1M", "-f", "32",
                        "-c", "1", "-n", "2", "-w", "1", "-d", "bf16", "-o", "max", "--json", json},
                       Within(120));
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      std::ifstream f(json);
      std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      for (const char* field : {"\"collective\": ", "\"algo\": ", "\"transport\": \"shm\"", "\"dtype\": \"bf16\"",
                                "\"op\": \"max\"", "\"ranks\": 3", "\"bytes\": ", "\"time_us\": ", "\"algbw_gbps\": ",
                                "\"busbw_gbps\": ", "\"wrong\": 0"})
        CHECK(text.find(field) != std::string::npos);
      CHECK(text.find(std::string("\"collective\": \"") + coll + "\"") != std::string::npos);
      std::remove(json.c_str());
    }
  }
}

TEST_CASE("hoop-perf --help and bad options", "[perf]") {
  auto h = RunProc({Bin("hoop-perf"), "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("busbw") != std::string::npos);
  auto bad = RunProc({Bin("hoop-perf"), "allreduce", "-d", "f128"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("-d 'f128'") != std::string::npos);
  auto coll = RunProc({Bin("hoop-perf"), "alltoall"});
  CHECK(coll.exit_code == 2);
}
