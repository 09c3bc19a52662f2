// hoop-doctor on the hangs users meet (issue 55): a real 3-rank job under hooprun in which rank 1
// does the wrong thing (hoop-test-rank hang KIND 1: tests/support/trace_rank.cc) leaves dumps
// (HOOP_TRACE_DIR: at the failure, or on SIGUSR1 to hooprun, which forwards it), and hoop-doctor
// names the cause and rank 1, with the exit code of that finding.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/proc.h"
#include "tests/support/status_support.h"

using namespace hoop::test;
using nlohmann::json;

namespace {

struct Case {
  const char* kind;
  const char* verdict;
  int exit_code;
  bool signal;  // the job never fails by itself within the test: SIGUSR1 to hooprun, then the timeout
};

}  // namespace

TEST_CASE("hoop-doctor names the cause and the rank of each hang from the dumps", "[multiproc][trace][doctor]") {
  const Case cases[] = {
      {"order", "mismatch", 3, false},      // a broadcast where the others call an allreduce
      {"size", "mismatch", 3, false},       // 999 elements where the others pass 1000
      {"skip", "mismatch", 3, false},       // the allreduce left out: its next call meets it
      {"exit", "died", 4, false},           // gone before the allreduce
      {"stop", "no-dump", 7, false},        // SIGSTOPped: no dump, the others wait for it
      {"sleep", "never-entered", 5, true},  // in its own code: its dump on SIGUSR1 shows it
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.kind) {
      const std::string dir = "/tmp/hoop-doctor-" + std::string(c.kind) + "-" + std::to_string(::getpid());
      std::filesystem::remove_all(dir);
      std::filesystem::create_directories(dir);
      const std::string marker = NewMarker();
      ProcOptions o = c.signal ? SignalAfter(SIGUSR1, 4, 90) : Within(90);
      o.env["HOOP_TIMEOUT"] = c.signal ? "8" : "3";
      o.env["HOOP_TRACE_DIR"] = dir;
      auto job = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "hang", c.kind, "1", marker}, o);
      INFO(job.output);
      REQUIRE_FALSE(job.timed_out);
      CHECK(job.exit_code != 0);
      if (c.signal) CHECK(job.output.find("hooprun: SIGUSR1: asked 3 rank(s)") != std::string::npos);
      auto text = RunProc({Bin("hoop-doctor"), dir}, Within(30));
      INFO(text.output);
      CHECK(text.exit_code == c.exit_code);
      auto doc = RunProc({Bin("hoop-doctor"), "--json", dir}, Within(30));
      const json j = json::parse(doc.output, nullptr, false);
      REQUIRE(j.is_array());
      REQUIRE(j.size() == 1);
      CHECK(j[0]["comm"] == "world");
      CHECK(j[0]["verdict"] == c.verdict);
      CHECK(j[0]["culprits"] == json::array({1}));
      CHECK(j[0]["seq"] == 2);  // the second round's allreduce
      CHECK(WaitGone(marker, 10) == 0);
      std::filesystem::remove_all(dir);
    }
  }
}

TEST_CASE("hoop-doctor: usage, no dumps, and a healthy job's dumps", "[multiproc][trace][doctor]") {
  CHECK(RunProc({Bin("hoop-doctor")}, Within(10)).exit_code == 2);
  CHECK(RunProc({Bin("hoop-doctor"), "--help"}, Within(10)).exit_code == 0);
  CHECK(RunProc({Bin("hoop-doctor"), "--version"}, Within(10)).output.find("hoop-doctor (hoop) ") == 0);
  CHECK(RunProc({Bin("hoop-doctor"), "--nope", "x"}, Within(10)).exit_code == 2);
  CHECK(RunProc({Bin("hoop-doctor"), "/nonexistent/dumps"}, Within(10)).exit_code == 2);
  const std::string dir = "/tmp/hoop-doctor-ok-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CHECK(RunProc({Bin("hoop-doctor"), dir}, Within(10)).exit_code == 1);  // no dump in it
  auto job = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-test-rank"), "trace", dir}, Within(60));
  INFO(job.output);
  REQUIRE(job.exit_code == 0);
  auto doc = RunProc({Bin("hoop-doctor"), dir}, Within(30));
  INFO(doc.output);
  CHECK(doc.exit_code == 0);
  CHECK(doc.output.find("no hang found") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("hoop-doctor reads PyTorch's flight recorder dumps in their JSON form", "[multiproc][trace][doctor]") {
  // Written here in the layout PyTorch 2.x dumps (version 2.x: "entries" with "process_group",
  // "collective_seq_id", "profiling_name", "input_sizes", "input_dtypes", "state"; the rank in
  // the file name): rank 1 completed collective 1 and never scheduled 2, which rank 0 started.
  const std::string dir = "/tmp/hoop-doctor-torch-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto entry = [](int seq, const char* state) {
    return json{{"record_id", seq},
                {"pg_id", 0},
                {"process_group", {"0", "default_pg"}},
                {"collective_seq_id", seq},
                {"p2p_seq_id", 0},
                {"is_p2p", false},
                {"op_id", seq},
                {"profiling_name", "nccl:all_reduce"},
                {"input_sizes", {{4, 256}}},
                {"input_dtypes", {"Float"}},
                {"output_sizes", {{4, 256}}},
                {"output_dtypes", {"Float"}},
                {"state", state}};
  };
  for (int rank : {0, 1}) {
    json d{{"version", "2.10"}, {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", "[0, 1]"}}}}}};
    d["entries"] = json::array({entry(1, "completed")});
    if (rank == 0) d["entries"].push_back(entry(2, "started"));
    std::ofstream(dir + "/nccl_trace_rank_" + std::to_string(rank) + ".json") << d.dump();
  }
  auto doc = RunProc({Bin("hoop-doctor"), "--json", dir}, Within(30));
  INFO(doc.output);
  CHECK(doc.exit_code == 5);
  const json j = json::parse(doc.output, nullptr, false);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 1);
  CHECK((j[0]["comm"] == "0" && j[0]["size"] == 2 && j[0]["verdict"] == "never-entered" && j[0]["seq"] == 2));
  CHECK(j[0]["culprits"] == json::array({1}));
  CHECK(j[0]["lines"][0].get<std::string>().find("allreduce 1024 x Float") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("SIGUSR1 to hooprun spares ranks that have no communicator (the signal would end them)",
          "[multiproc][trace][doctor]") {
  auto job = RunProc({Bin("hooprun"), "-np", "2", "sleep", "3"}, SignalAfter(SIGUSR1, 1, 30));
  INFO(job.output);
  CHECK(job.exit_code == 0);
  CHECK(job.output.find("hooprun: SIGUSR1: asked 0 rank(s)") != std::string::npos);
  CHECK(job.output.find("not rank(s) 0,1: no communicator yet") != std::string::npos);
}

TEST_CASE("hooprun --status on a live hung job names the cause and the rank hoop-doctor names",
          "[multiproc][trace][doctor][status]") {
  const Case cases[] = {
      {"sleep", "never-entered", 5, false},  // in its own code: the others wait in the allreduce
      {"stop", "no-dump", 7, false},         // SIGSTOPped: it does not answer, the others wait for it
      {"skip", "mismatch", 3, false},        // its broadcast meets the others' allreduce
      // (order and size do not hang: the ranks find they disagree and fail at once, naming it;
      // exit ends the job within seconds. hoop-doctor's test above reads their dumps.)
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.kind) {
      const std::string marker = NewMarker();
      const std::string tmp = "/tmp/hoop-status-" + std::string(c.kind) + "-" + std::to_string(::getpid());
      std::filesystem::create_directories(tmp);
      ProcOptions o = Within(120), asking = Within(30);
      o.env["HOOP_TIMEOUT"] = "60";                  // hung for the whole test, which ends the job itself
      o.env["TMPDIR"] = asking.env["TMPDIR"] = tmp;  // where the job file is
      ProcResult job;
      std::thread run([&] {
        job = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "hang", c.kind, "1", marker}, o);
      });
      const int pid = HooprunWith(tmp, marker, 30);
      REQUIRE(pid > 0);
      ProcResult status;
      // The ranks reach the hang within moments; the finding needs a wait of a second.
      for (int tries = 0; tries < 20 && status.exit_code != c.exit_code; ++tries) {
        ::sleep(1);
        status = RunProc({Bin("hooprun"), "--status", std::to_string(pid)}, asking);
      }
      ::kill(pid, SIGTERM);
      run.join();
      INFO(status.output);
      INFO(job.output);
      CHECK(status.exit_code == c.exit_code);
      CHECK(status.output.find("communicator 'world': " + std::string(c.verdict)) != std::string::npos);
      CHECK(status.output.find("RANK  HOST") != std::string::npos);
      if (std::string(c.kind) == "stop") CHECK(RowOf(status.output, 1).find("stopped") != std::string::npos);
      if (std::string(c.kind) == "sleep") {
        CHECK(RowOf(status.output, 0).find("allreduce 1000 x f32") != std::string::npos);
        CHECK(RowOf(status.output, 1).find("behind by 1") != std::string::npos);
      }
      CHECK(WaitGone(marker, 20) == 0);
      std::filesystem::remove_all(tmp);
    }
  }
}

TEST_CASE("hooprun --status: usage, and no job to ask", "[multiproc][trace][doctor][status]") {
  ProcOptions o = Within(20);
  o.env["TMPDIR"] = "/tmp/hoop-status-none-" + std::to_string(::getpid());
  auto none = RunProc({Bin("hooprun"), "--status"}, o);
  CHECK(none.exit_code == 1);
  CHECK(none.output.find("no running hooprun job") != std::string::npos);
  CHECK(RunProc({Bin("hooprun"), "--status", "1"}, o).exit_code == 1);
  CHECK(RunProc({Bin("hooprun"), "--status", "x"}, o).exit_code == 2);
  CHECK(RunProc({Bin("hooprun"), "--status", "1", "2"}, o).exit_code == 2);
  CHECK(RunProc({Bin("hooprun"), "--help"}, o).output.find("--status [PID]") != std::string::npos);
}

TEST_CASE("hoop-doctor: a rank stuck in an earlier collective, and the links that resent segments",
          "[multiproc][trace][doctor]") {
  // Written in the layout hoop dumps (flight_recorder.h's TraceJson): rank 0 is still in
  // allreduce #5, waiting for rank 2, who finished it and waits in #6 with rank 1.
  const std::string dir = "/tmp/hoop-doctor-lossy-" + std::to_string(::getpid());
  auto write = [&](int rank, int64_t seq, std::vector<int> waiting, std::vector<int64_t> resent) {
    json ops = json::array();
    for (int64_t s = 4; s <= seq; ++s)
      ops.push_back({{"id", s + 1},
                     {"seq", s},
                     {"op", "allreduce"},
                     {"dtype", "f32"},
                     {"count", 1048576},
                     {"root", -1},
                     {"peer", -1},
                     {"algo", "ring"},
                     {"state", s < seq ? "done" : "failed"},
                     {"step", 2},
                     {"chunk", 1},
                     {"error", s < seq ? "" : "timed out"},
                     {"waiting_for", s < seq ? std::vector<int>{} : waiting}});
    json d{{"hoop_trace", 1}, {"comm", "world"}, {"rank", rank}, {"size", 3}, {"ops", ops}, {"queued", json::array()}};
    if (!resent.empty()) d["retransmits"] = resent;
    std::ofstream(dir + "/hoop-trace.world." + std::to_string(rank) + ".json") << d.dump();
  };
  auto doctor = [&] {
    auto doc = RunProc({Bin("hoop-doctor"), "--json", dir}, Within(30));
    INFO(doc.output);
    const json j = json::parse(doc.output, nullptr, false);
    REQUIRE((j.is_array() && j.size() == 1));
    return j[0];
  };
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write(0, 5, {2}, {});
  write(1, 6, {0}, {});
  write(2, 6, {1}, {});
  json d = doctor();
  CHECK((d["verdict"] == "stuck" && d["seq"] == 5 && d["culprits"] == json::array({2})));
  // Every rank in one collective, each waiting for the next (a ring's cycle): the waits alone
  // name all three; the links that resent segments, all of them rank 2's, name it.
  write(0, 6, {2}, {-1, 3, 41});  // (3: a busy link resends a few)
  write(1, 6, {0}, {0, -1, 17});
  write(2, 6, {1}, {33, 12, -1});
  d = doctor();
  INFO(d.dump(1));
  CHECK((d["verdict"] == "stuck" && d["seq"] == 6 && d["culprits"] == json::array({2})));
  CHECK(d["lines"].back().get<std::string>().find("is rank 2's: a lossy link there") != std::string::npos);
  std::filesystem::remove_all(dir);
}
