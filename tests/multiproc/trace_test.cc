// The flight recorder in a real job (issue 55): each rank's dump holds what it called, in order,
// with the same collective sequence numbers on every rank; a rank that calls another collective
// than the others leaves, in every rank's dump written at the failure (HOOP_TRACE_DIR), the
// operation each was in.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/proc.h"

using namespace hoop::test;
using nlohmann::json;

namespace {

std::string TmpDir(const std::string& tag) {
  const std::string dir = "/tmp/hoop-trace-" + tag + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

json Dump(const std::string& dir, int rank) {
  std::ifstream f(dir + "/hoop-trace.world." + std::to_string(rank) + ".json");
  REQUIRE(f.good());
  return json::parse(f);
}

}  // namespace

TEST_CASE("flight recorder: every rank's dump holds its calls, in order, with the ranks' sequence numbers",
          "[multiproc][trace]") {
  const std::string dir = TmpDir("dump"), marker = NewMarker();
  ProcOptions o;
  o.timeout_s = 60;
  o.env["HOOP_TRACE_OPS"] = "100";
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "trace", dir, marker}, o);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (int rank = 0; rank < 3; ++rank) {
    const json d = Dump(dir, rank);
    INFO(d.dump(1));
    CHECK((d["rank"] == rank && d["size"] == 3 && d["comm"] == "world" && d["reason"] == "request"));
    std::vector<std::string> ops;
    for (const json& op : d["ops"]) {
      CHECK(op["state"] == "done");
      ops.push_back(op["op"]);
    }
    // Joining the job runs collectives of its own first: the test's calls are the last five.
    REQUIRE(ops.size() >= 5);
    const std::vector<std::string> last(ops.end() - 5, ops.end());
    CHECK(last == std::vector<std::string>{"allreduce", "broadcast", "recv", "send", "allreduce"});
    const json& ar = d["ops"][d["ops"].size() - 5];
    CHECK((ar["dtype"] == "f32" && ar["count"] == 1000 && ar["memory"] == "host"));
    CHECK(ar["algo"] != "auto");
    const json& bc = d["ops"][d["ops"].size() - 4];
    CHECK((bc["root"] == 0 && bc["dtype"] == "i32" && bc["seq"] == ar["seq"].get<int>() + 1));
    const json& recv = d["ops"][d["ops"].size() - 3];
    CHECK((recv["peer"] == (rank + 2) % 3 && recv["tag"] == 7 && recv["count"] == 5));
    // The callers' names: NameNextCall's for the next call only, CallOptions::trace_name's.
    CHECK_FALSE(ar.contains("name"));
    CHECK(bc["name"] == "test:broadcast");
    CHECK(recv["name"] == "test:recv");
    CHECK_FALSE(d["ops"][d["ops"].size() - 2].contains("name"));
    CHECK(d["ops"].back()["name"] == "test:second allreduce");
  }
  // The same sequence number on every rank for the same collective.
  CHECK(Dump(dir, 0)["ops"].back()["seq"] == Dump(dir, 2)["ops"].back()["seq"]);
  CHECK(WaitGone(marker, 5) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight recorder: at a failure each rank writes its dump, with the call it was in", "[multiproc][trace]") {
  const std::string dir = TmpDir("hang"), marker = NewMarker();
  ProcOptions o;
  o.timeout_s = 60;
  o.env["HOOP_TIMEOUT"] = "3";
  o.env["HOOP_TRACE_DIR"] = dir;
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "trace", dir, "skip", marker}, o);
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  int written = 0;
  for (int rank = 0; rank < 3; ++rank) {
    if (!std::filesystem::exists(dir + "/hoop-trace.world." + std::to_string(rank) + ".json")) continue;
    ++written;
    const json d = Dump(dir, rank);
    INFO(d.dump(1));
    CHECK(d["reason"] == "error");  // the ranks find they disagree before any times out
    // The call it failed in: rank 1's barrier where the others allreduce; or, for a rank still
    // in the send and receive before it when the abort reached it (a loaded machine), that
    // send or receive (its dump written as the communicator went: DumpAtEnd).
    const json* failed = nullptr;
    for (const json& op : d["ops"])
      if (op["state"] != "done" && !failed) failed = &op;
    REQUIRE(failed);
    const std::string op = (*failed)["op"];
    if (op != "send" && op != "recv") CHECK(op == (rank == 1 ? "barrier" : "allreduce"));
  }
  // Every rank writes one: those that find the disagreement in their collective, and one whose
  // send or receive failed instead.
  CHECK(written == 3);
  CHECK(WaitGone(marker, 5) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight recorder: ranks that time out on a rank that never came write whom they waited for",
          "[multiproc][trace]") {
  const std::string dir = TmpDir("late"), marker = NewMarker();
  ProcOptions o;
  o.timeout_s = 60;
  o.env["HOOP_TIMEOUT"] = "2";
  o.env["HOOP_TRACE_DIR"] = dir;
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "straggler", "8", marker}, o);
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  int timed_out = 0;
  for (int rank : {0, 2}) {
    const json d = Dump(dir, rank);
    INFO(d.dump(1));
    const json& last = d["ops"].back();
    CHECK((last["op"] == "allreduce" && last["state"] == "failed" && last["count"] == 4096));
    // The rank that timed out itself says whom it waited for; one told by it says why it failed.
    if (d["reason"] == "timeout") {
      ++timed_out;
      CHECK_FALSE(last["waiting_for"].empty());
      CHECK(last["error"].get<std::string>().find("timed out") != std::string::npos);
    }
  }
  CHECK(timed_out >= 1);
  CHECK_FALSE(std::filesystem::exists(dir + "/hoop-trace.world.1.json"));  // asleep, then stopped
  CHECK(WaitGone(marker, 5) == 0);
  std::filesystem::remove_all(dir);
}
