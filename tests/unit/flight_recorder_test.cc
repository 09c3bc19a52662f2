// The flight recorder (collectives/core/flight_recorder.h) as logic: an operation's states and
// times, a failure's message and peers, the ring keeping the last N (oldest first) and those in
// flight, off at capacity 0, its JSON, and writers on several threads in turn while a reader
// reads (never waiting, never a torn record).
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "collectives/core/flight_recorder.h"

using namespace hoop;

namespace {

TraceCall Allreduce(uint64_t count) {
  TraceCall c;
  c.kind = CollKind::kAllreduce;
  c.count = count;
  return c;
}

}  // namespace

TEST_CASE("flight recorder: states, times, a failure's message and peers", "[trace]") {
  FlightRecorder r(8);
  const uint64_t a = r.Queued(Allreduce(5));
  TraceCall send;
  send.send = true;
  send.peer = 3;
  send.tag = 7;
  send.dtype = DType::kBF16;
  const uint64_t b = r.Queued(send);
  CHECK((a == 1 && b == 2));
  r.Started(a, 0, Algo::kRing);
  r.Ended(a, Status::Ok());
  r.Started(b, -1, Algo::kAuto);
  r.Ended(b, DeadlineExceeded("rank 0: timed out; rank 3 is not making progress"), {3});
  const uint64_t c = r.Queued(Allreduce(1));
  auto ops = r.Snapshot();
  REQUIRE(ops.size() == 3);
  CHECK((ops[0].state == TraceState::kDone && ops[0].seq == 0 && ops[0].algo == "ring" && ops[0].call.count == 5));
  CHECK(ops[0].started_s >= ops[0].queued_s);
  CHECK(ops[0].ended_s < 0);                  // a completed operation's end is not timed
  CHECK(ops[1].ended_s >= ops[1].started_s);  // a failed one's is
  CHECK((ops[1].state == TraceState::kFailed && ops[1].call.send && ops[1].call.peer == 3 && ops[1].algo.empty()));
  CHECK(ops[1].error == "rank 0: timed out; rank 3 is not making progress");
  CHECK(ops[1].waiting_for == std::vector<int>{3});
  CHECK((ops[2].id == c && ops[2].state == TraceState::kQueued && ops[2].started_s < 0));
  CHECK(r.recorded() == 3);
  CHECK(r.failed_any());  // the timeout: a dump is owed at the communicator's end (DumpAtEnd)
  // A call refused for its arguments, or failed by a revoke the application asked for, owes none.
  FlightRecorder quiet(4);
  quiet.Ended(quiet.Begun(Allreduce(1), 0, Algo::kRing), InvalidArgument("rank 0: bad count"));
  quiet.Ended(quiet.Begun(Allreduce(1), 1, Algo::kRing), Revoked("rank 0 revoked it"));
  CHECK(quiet.Snapshot().size() == 2);
  CHECK_FALSE(quiet.failed_any());
}

TEST_CASE("flight recorder: the last N kept, oldest first; one in flight never evicted; off at 0", "[trace]") {
  FlightRecorder r(3);  // rounded up to 4
  CHECK(r.capacity() == 4);
  for (int i = 0; i < 10; ++i) {
    const uint64_t id = r.Queued(Allreduce(static_cast<uint64_t>(i)));
    r.Started(id, i, Algo::kRing);
    if (i != 1) r.Ended(id, Status::Ok());  // operation 2 hangs
  }
  r.Started(3, 2, Algo::kTree);  // its slot now holds operation 7: nothing changes
  auto ops = r.Snapshot();
  // Operation 2 kept its slot (6 and 10 went unrecorded); 7, 8, 9 in the others.
  REQUIRE(ops.size() == 4);
  const uint64_t ids[] = {2, 7, 8, 9};
  for (int i = 0; i < 4; ++i) {
    CHECK(ops[i].id == ids[i]);
    CHECK(ops[i].call.count == ids[i] - 1);
    CHECK(ops[i].state == (i == 0 ? TraceState::kStarted : TraceState::kDone));
    CHECK(ops[i].algo == "ring");
  }
  CHECK(r.recorded() == 10);
  CHECK(r.dropped() == 2);
  // A slot a failure held, taken again, shows none of it (its end, message and peers are not
  // reset by the claim: read only from a failed one).
  FlightRecorder f(1);
  f.Ended(f.Begun(Allreduce(1), 0, Algo::kRing), DeadlineExceeded("rank 0: timed out"), {1, 2});
  REQUIRE(f.Snapshot().size() == 1);
  CHECK((f.Snapshot()[0].ended_s >= 0 && f.Snapshot()[0].waiting_for.size() == 2 && !f.Snapshot()[0].error.empty()));
  TraceCall send;
  send.send = true;
  send.peer = 5;
  send.tag = -3;
  send.stream = true;
  send.mem = MemKind::kCuda;
  const uint64_t again = f.Begun(send, -1, Algo::kAuto);
  f.Step(again, 7, 9, Algo::kAuto);
  auto reused = f.Snapshot();
  REQUIRE(reused.size() == 1);
  CHECK((reused[0].state == TraceState::kStarted && reused[0].ended_s < 0 && reused[0].error.empty() &&
         reused[0].waiting_for.empty()));
  CHECK((reused[0].call.send && !reused[0].call.recv && reused[0].call.peer == 5 && reused[0].call.tag == -3 &&
         reused[0].call.root == -1 && reused[0].call.stream && reused[0].call.mem == MemKind::kCuda));
  CHECK((reused[0].step == 7 && reused[0].chunk == 9 && reused[0].algo.empty()));
  // Where a started one waits.
  r.Step(2, 3, 1, Algo::kAuto);
  CHECK((r.Snapshot()[0].step == 3 && r.Snapshot()[0].chunk == 1));
  // Queued and started at once, on the caller's thread.
  FlightRecorder b(2);
  const uint64_t now = b.Begun(Allreduce(8), 5, Algo::kDoubling);
  auto one = b.Snapshot();
  REQUIRE(one.size() == 1);
  CHECK((one[0].id == now && one[0].state == TraceState::kStarted && one[0].seq == 5 && one[0].algo == "doubling"));
  CHECK(one[0].started_s == one[0].queued_s);
  FlightRecorder off(0);
  CHECK_FALSE(off.on());
  CHECK(off.Queued(Allreduce(1)) == 0);
  off.Ended(0, Status::Ok());
  CHECK(off.Snapshot().empty());
}

TEST_CASE("flight recorder: the JSON dump, written whole", "[trace]") {
  FlightRecorder r(16);
  const uint64_t a = r.Queued(Allreduce(1024));
  r.Started(a, 4, Algo::kDoubling);
  r.Ended(a, Internal("a \"quoted\"\nline"), {1, 2});
  TraceOwner o{"world", 2, 4, 2, ::getpid(), "hostA", "request", {Allreduce(7)}, true, "pg 0", {-1, 0, -1, 57}};
  const std::string dir = std::filesystem::temp_directory_path() / ("hoop-trace-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = WriteTrace(dir, o, r);
  REQUIRE(path.ok());
  CHECK(*path == dir + "/hoop-trace.world.2.json");
  std::ifstream f(*path);
  const auto j = nlohmann::json::parse(f);
  CHECK(j["hoop_trace"] == 1);
  CHECK((j["comm"] == "world" && j["rank"] == 2 && j["size"] == 4 && j["reason"] == "request" && j["label"] == "pg 0"));
  CHECK(j["retransmits"] == nlohmann::json::array({-1, 0, -1, 57}));
  REQUIRE(j["ops"].size() == 1);
  const auto& op = j["ops"][0];
  CHECK((op["op"] == "allreduce" && op["seq"] == 4 && op["algo"] == "doubling" && op["state"] == "failed"));
  CHECK(op["error"] == "a \"quoted\"\nline");
  CHECK(op["waiting_for"] == nlohmann::json::array({1, 2}));
  REQUIRE(j["queued"].size() == 1);  // the call behind it, not yet started
  CHECK((j["queued"][0]["op"] == "allreduce" && j["queued"][0]["count"] == 7));
  o.queue_listed = false;  // the queue's lock was held
  CHECK(nlohmann::json::parse(TraceJson(o, r))["queued"].is_null());
  CHECK_FALSE(WriteTrace("/nonexistent/dir", o, r).ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight recorder: callers' names, kept apart and cut at 95 characters; the live view's last N", "[trace]") {
  FlightRecorder r(4);
  const uint64_t a = r.Begun(Allreduce(8), 0, Algo::kRing);
  r.Name(a, "hoop:allreduce");
  r.Done(a);
  const uint64_t b = r.Begun(Allreduce(8), 1, Algo::kRing);
  r.Name(b, std::string(200, 'x'));
  r.Name(0, "nobody");  // not recorded: nothing to name
  auto ops = r.Snapshot();
  REQUIRE(ops.size() == 2);
  CHECK(ops[0].name == "hoop:allreduce");
  CHECK(ops[1].name == std::string(95, 'x'));
  // A slot taken again forgets its last name.
  for (int i = 0; i < 4; ++i) r.Done(r.Begun(Allreduce(1), 2 + i, Algo::kRing));
  for (const TraceRecord& op : r.Snapshot()) CHECK((op.id == b || op.name.empty()));
  // The JSON: "name" where there is one; with `last`, the newest N and every one in flight.
  TraceOwner o{"world", 0, 1, 0, ::getpid(), "h", "status", {}, true, "", {}};
  const auto all = nlohmann::json::parse(TraceJson(o, r));
  CHECK(all["ops"].size() == 4);
  CHECK(all["now_s"].get<double>() >= 0);
  const auto last = nlohmann::json::parse(TraceJson(o, r, 1));
  REQUIRE(last["ops"].size() == 2);  // operation b, still started, and the newest
  CHECK((last["ops"][0]["id"] == b && last["ops"][0]["name"] == std::string(95, 'x')));
  CHECK((last["ops"][1]["id"] == 5 && !last["ops"][1].contains("name")));  // (6 went unrecorded: b holds its slot)
}

TEST_CASE("flight recorder: records made on four threads in turn, a reader never waits nor sees a torn record",
          "[trace]") {
  // As a communicator uses it: whichever thread holds the turn (one at a time: the mutex here)
  // records, starts and ends; the ring wraps every 64 operations.
  FlightRecorder r(64);
  std::atomic<bool> stop{false};
  std::mutex turn;
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        std::lock_guard<std::mutex> held(turn);
        const uint64_t id = r.Queued(Allreduce(static_cast<uint64_t>(t)));
        r.Started(id, static_cast<int64_t>(id), Algo::kRing);
        r.Ended(id, Status::Ok());
      }
    });
  std::thread reader([&] {
    while (!stop.load()) {
      for (const TraceRecord& op : r.Snapshot()) {
        if (op.busy) continue;
        // A record is whole: a started one's seq is its id (as written together).
        if (op.state != TraceState::kQueued) REQUIRE(op.seq == static_cast<int64_t>(op.id));
        REQUIRE(op.call.count < 4);
      }
    }
  });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  auto ops = r.Snapshot();
  REQUIRE(ops.size() == 64);
  for (const TraceRecord& op : ops) CHECK(op.state == TraceState::kDone);
  CHECK(r.recorded() == 80000);
}
