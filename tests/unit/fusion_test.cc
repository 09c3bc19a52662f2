// The tensor fusion runtime's pure parts: the request/response codec, the response cache, the
// coordinator's message table, the fusion planner, scaled copies, the timeline's JSON, and the
// settings in Config.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "collectives/testing/reference.h"
#include "common/config.h"
#include "tensorfusion/fusion_planner.h"
#include "tensorfusion/handle.h"
#include "tensorfusion/message_table.h"
#include "tensorfusion/request.h"
#include "tensorfusion/response_cache.h"
#include "tensorfusion/scale.h"
#include "tensorfusion/stand_in.h"
#include "tensorfusion/timeline.h"

using namespace hoop;
using namespace hoop::fusion;

namespace {
TensorParams Ar(uint64_t count, DType dt = DType::kF32, ReduceOp op = ReduceOp::kSum) {
  TensorParams p;
  p.count = count;
  p.dtype = dt;
  p.op = op;
  return p;
}
}  // namespace

TEST_CASE("requests and responses survive their encoding; malformed lists are refused", "[fusion]") {
  TensorParams b = Ar(7, DType::kI64);
  b.kind = CollKind::kBroadcast;
  b.root = 3;
  TensorParams s = Ar(1000, DType::kBF16, ReduceOp::kAvg);
  s.prescale = 0.5;
  s.postscale = 2;
  s.compression = 1;
  s.unfused = true;
  // The last dtype and op pass too (the decoder once stopped at f64 and prod).
  std::vector<Request> reqs = {
      {"a", b, 12}, {"grad/conv1.weight", s, 0}, {"", Ar(0), 99}, {"mask", Ar(5, kLastDType, kLastReduceOp), 1}};
  std::vector<char> bytes;
  EncodeRequests(reqs, &bytes);
  auto back = DecodeRequests(bytes.data(), bytes.size());
  REQUIRE(back.ok());
  REQUIRE(back->size() == reqs.size());
  reqs[2].join = true;  // a rank's join travels as a request of its own
  EncodeRequests(reqs, &bytes);
  back = DecodeRequests(bytes.data(), bytes.size());
  REQUIRE(back.ok());
  REQUIRE(back->size() == reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    CHECK((*back)[i].name == reqs[i].name);
    CHECK((*back)[i].params == reqs[i].params);
    CHECK((*back)[i].age_ms == reqs[i].age_ms);
    CHECK((*back)[i].join == (i == 2));
  }
  std::vector<Response> resp = {{"x", s, "", false},
                                {"y", b, "tensor 'y': ranks disagree", false},
                                {"z", s, "tensor 'z': rank 1 did not submit it", true},
                                {"", Ar(0), "", false, 5}};
  EncodeResponses(resp, &bytes);
  auto rb = DecodeResponses(bytes.data(), bytes.size());
  REQUIRE(rb.ok());
  CHECK((*rb)[1].error == "tensor 'y': ranks disagree");
  CHECK_FALSE((*rb)[1].timed_out);
  CHECK((*rb)[2].timed_out);  // a wait that ran out travels as one
  CHECK((*rb)[0].params == s);
  CHECK((*rb)[0].join_last == -1);
  CHECK((*rb)[3].join_last == 5);  // every rank has joined, rank 5 last
  // Truncated, padded, or carrying an impossible value: an error, never a crash.
  CHECK_FALSE(DecodeResponses(bytes.data(), bytes.size() - 1).ok());
  bytes.push_back(0);
  CHECK_FALSE(DecodeResponses(bytes.data(), bytes.size()).ok());
  EncodeRequests({{"a", b, 0}}, &bytes);
  bytes[4 + 4 + 1] = 42;  // count, name length, name: then the kind byte
  CHECK_FALSE(DecodeRequests(bytes.data(), bytes.size()).ok());
  CHECK(DecodeRequests(nullptr, 0).status().message().find("malformed request") != std::string::npos);
}

TEST_CASE("the response cache finds only exact matches and evicts the least recently used", "[fusion]") {
  ResponseCache c(3);
  c.Put("a", Ar(10));
  c.Put("b", Ar(20));
  c.Put("c", Ar(30));
  CHECK(c.size() == 3);
  CHECK(c.Find("a", Ar(10)) == 0);
  CHECK(c.Find("a", Ar(11)) == -1);  // cached with other parameters: only the coordinator decides
  CHECK(c.Find("z", Ar(10)) == -1);
  TensorParams on_device = Ar(10);  // a rank whose tensor lives elsewhere (a hybrid job) still hits
  on_device.mem = MemKind::kCuda;
  CHECK(c.Find("a", on_device) == 0);
  c.Touch(0);          // a was hit: b is now the least recently used
  c.Put("d", Ar(40));  // full: d takes b's slot
  CHECK(c.size() == 3);
  CHECK(c.Find("b", Ar(20)) == -1);
  CHECK(c.Find("d", Ar(40)) == 1);
  c.Put("a", Ar(12));  // a name's new parameters stay in its slot
  CHECK(c.Find("a", Ar(12)) == 0);
  CHECK(c.Find("a", Ar(10)) == -1);
  // Two caches fed the same responses and hits stay identical (what every rank relies on).
  ResponseCache x(2), y(2);
  for (ResponseCache* r : {&x, &y}) {
    r->Put("p", Ar(1));
    r->Put("q", Ar(2));
    r->Touch(0);
    r->Put("r", Ar(3));
  }
  for (size_t s = 0; s < 2; ++s) CHECK(x.name(s) == y.name(s));
  CHECK(x.name(1) == "r");
  ResponseCache off(0);
  off.Put("a", Ar(1));
  CHECK(off.size() == 0);
  CHECK(off.Find("a", Ar(1)) == -1);
}

TEST_CASE("the message table decides complete names in order and names disagreements", "[fusion]") {
  auto t0 = Clock::now();
  MessageTable t(3);
  t.Add(0, {"b", Ar(5), 0}, t0);
  t.Add(0, {"a", Ar(5), 0}, t0);
  t.Add(1, {"a", Ar(5), 0}, t0);
  t.Add(1, {"b", Ar(5), 0}, t0);
  CHECK(t.TakeDecided(t0, std::chrono::seconds(10)).empty());
  t.Add(2, {"a", Ar(5), 0}, t0);
  t.Add(2, {"b", Ar(6, DType::kF64), 0}, t0);
  auto d = t.TakeDecided(t0, std::chrono::seconds(10));
  REQUIRE(d.size() == 2);
  CHECK(d[0].name == "a");  // complete first
  CHECK(d[0].error.empty());
  CHECK(d[1].name == "b");
  CHECK(d[1].error ==
        "tensor 'b': ranks disagree: dtype f32 on ranks 0, 1 vs f64 on rank 2; count 5 on ranks 0, 1 vs 6 on rank 2");
  CHECK(t.empty());

  TensorParams bc = Ar(4);
  bc.kind = CollKind::kBroadcast;
  std::vector<TensorParams> roots = {bc, bc, bc};
  roots[1].root = 1;
  CHECK(DescribeDisagreement(roots) == "root -1 on ranks 0, 2 vs 1 on rank 1");
  std::vector<TensorParams> ops = {Ar(4, DType::kF32, ReduceOp::kMax), Ar(4), Ar(4, DType::kF32, ReduceOp::kMin)};
  CHECK(DescribeDisagreement(ops) == "op max on rank 0 vs sum on rank 1 vs min on rank 2");
  CHECK(DescribeDisagreement({Ar(4), Ar(4)}).empty());
  std::vector<TensorParams> places = {Ar(4), Ar(4)};  // rank 0's on a GPU, rank 1's on the host
  places[0].mem = MemKind::kCuda;
  CHECK(DescribeDisagreement(places).empty());
}

TEST_CASE("the message table lets joined ranks stand in for allreduce and ends the join once all have joined",
          "[fusion]") {
  auto t0 = Clock::now();
  const auto timeout = std::chrono::seconds(10);
  Request join;
  join.join = true;
  MessageTable t(3);
  t.Add(0, {"early", Ar(5), 0}, t0);  // reported before rank 2 joins: decided when it does
  t.Add(1, {"early", Ar(5), 0}, t0);
  CHECK(t.TakeDecided(t0, timeout).empty());
  t.Add(2, join, t0);
  auto d = t.TakeDecided(t0, timeout);
  REQUIRE(d.size() == 1);
  CHECK(d[0].name == "early");
  CHECK(d[0].error.empty());
  CHECK(d[0].join_last == -1);
  // Rank 1's reports count; rank 2 stands in; rank 0 is still missing.
  t.Add(1, {"late", Ar(7, DType::kI32, ReduceOp::kMax), 0}, t0);
  CHECK(t.TakeDecided(t0, timeout).empty());
  t.Add(0, {"late", Ar(7, DType::kI32, ReduceOp::kMax), 0}, t0);
  d = t.TakeDecided(t0, timeout);
  REQUIRE(d.size() == 1);
  CHECK(d[0].params == Ar(7, DType::kI32, ReduceOp::kMax));
  // A broadcast or allgather fails at once, on the first rank that submits it, naming the joined.
  TensorParams bc = Ar(4);
  bc.kind = CollKind::kBroadcast;
  bc.root = 0;
  t.Add(0, {"bc", bc, 0}, t0);
  d = t.TakeDecided(t0, timeout);
  REQUIRE(d.size() == 1);
  CHECK(d[0].error ==
        "tensor 'bc': broadcast cannot run while rank 2 has joined (join: ranks that have joined stand in for "
        "allreduce only, until every rank has joined)");
  // Disagreements among the ranks that did submit are still named.
  t.Add(0, {"odd", Ar(4), 0}, t0);
  t.Add(1, {"odd", Ar(5), 0}, t0);
  d = t.TakeDecided(t0, timeout);
  REQUIRE(d.size() == 1);
  CHECK(d[0].error == "tensor 'odd': ranks disagree: count 4 on rank 0 vs 5 on rank 1");
  // Rank 0 joins, then rank 1: the join ends with rank 1 last, after the tensor rank 1 sent
  // along with its join.
  t.Add(0, join, t0);
  CHECK(t.TakeDecided(t0, timeout).empty());
  t.Add(1, {"last", Ar(3), 0}, t0);
  t.Add(1, join, t0);
  d = t.TakeDecided(t0, timeout);
  REQUIRE(d.size() == 2);
  CHECK(d[0].name == "last");
  CHECK(d[1].join_last == 1);
  CHECK(t.empty());
  // Nobody counts as joined any more: names wait for every rank again.
  t.Add(0, {"after", Ar(3), 0}, t0);
  CHECK(t.TakeDecided(t0, timeout).empty());
}

TEST_CASE("a joined rank's stand-in is the identity of every op on every dtype", "[fusion]") {
  const size_t n = 257;
  for (DType dt : kAllDTypes) {
    for (ReduceOp op : kAllReduceOps) {
      if (!OpApplies(dt, op) || op == ReduceOp::kAvg) continue;
      const std::vector<double> scales = IsFloat(dt) ? std::vector<double>{1, 0.5, -2} : std::vector<double>{1};
      for (double pre : scales) {
        if (dt == DType::kF8E4M3 && pre != 1 && (op == ReduceOp::kMin || op == ReduceOp::kMax)) continue;  // no inf
        INFO(DTypeName(dt) << " " << ReduceOpName(op) << " prescale " << pre);
        const size_t es = DTypeSize(dt);
        std::vector<char> x(n * es), id(n * es), got(n * es);
        FillInput(dt, op, x.data(), n, 99);
        FillIdentity(dt, op, pre, id.data(), n);
        ScaledCopy(dt, id.data(), id.data(), n, pre);  // the stand-in is prescaled like any input
        ReferenceReduce(dt, op, {x.data(), id.data()}, got.data(), n);
        CHECK(CountMismatches(dt, got.data(), x.data(), n) == 0);
        CHECK(std::memcmp(got.data(), x.data(), n * es) == 0);
      }
    }
  }
}

TEST_CASE("the message table warns about stalls and times names out, naming the missing ranks", "[fusion]") {
  auto t0 = Clock::now();
  MessageTable t(4);
  t.Add(0, {"w", Ar(5), 2000}, t0);  // submitted 2 s ago on rank 0
  t.Add(2, {"w", Ar(5), 0}, t0);
  auto lines = t.Stalled(t0, std::chrono::seconds(1));
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "tensor 'w' has waited 2.0 s: submitted by ranks 0, 2, not yet by ranks 1, 3");
  CHECK(t.Stalled(t0 + std::chrono::milliseconds(500), std::chrono::seconds(1)).empty());  // once per period
  CHECK(t.Stalled(t0 + std::chrono::milliseconds(1100), std::chrono::seconds(1)).size() == 1);
  CHECK(t.TakeDecided(t0, std::chrono::seconds(3)).empty());
  auto d = t.TakeDecided(t0 + std::chrono::seconds(1), std::chrono::seconds(3));
  REQUIRE(d.size() == 1);
  CHECK(d[0].error == "tensor 'w': ranks 1, 3 did not submit it within HOOP_TIMEOUT (3 s); submitted by ranks 0, 2");
  CHECK(d[0].timed_out);
  CHECK(t.empty());
  // A timeout given through the C API is named so, not as HOOP_TIMEOUT.
  t.Add(1, {"v", Ar(5), 0}, t0);
  d = t.TakeDecided(t0 + std::chrono::seconds(4), std::chrono::seconds(3), "timeout");
  REQUIRE(d.size() == 1);
  CHECK(d[0].error == "tensor 'v': ranks 0, 2, 3 did not submit it within timeout (3 s); submitted by rank 1");
}

TEST_CASE("fusion groups tensors one collective can serve, up to the threshold, in order", "[fusion]") {
  TensorParams bc = Ar(100);
  bc.kind = CollKind::kBroadcast;
  bc.root = 1;
  TensorParams scaled = Ar(100);
  scaled.prescale = 2;  // scale factors are per tensor: still fusable
  std::vector<TensorParams> list = {Ar(100), Ar(100, DType::kF64), bc, Ar(100), scaled, Ar(300), Ar(100)};
  auto g = PlanFusion(list, 1000, 4);  // f32: 400 bytes each, 1200 for the 300
  REQUIRE(g.size() == 5);
  CHECK(g[0].members == std::vector<size_t>{0, 3});  // 800 bytes; the third would pass 1000
  CHECK(g[0].bytes == 800);
  CHECK(g[1].members == std::vector<size_t>{1});        // f64
  CHECK(g[2].members == std::vector<size_t>{2});        // broadcast
  CHECK(g[3].members == std::vector<size_t>{4, 6});     // a new f32 group
  CHECK(g[4].members == std::vector<size_t>{5});        // larger than the threshold: alone
  CHECK(PlanFusion(list, 0, 4).size() == list.size());  // threshold 0: no fusion
  TensorParams ag = Ar(100);
  ag.kind = CollKind::kAllgather;
  auto a = PlanFusion({ag, ag, ag}, 3200, 4);  // 1600 bytes each with 4 ranks' parts
  REQUIRE(a.size() == 2);
  CHECK(a[0].bytes == 3200);
  CHECK_FALSE(CanFuse(Ar(1), Ar(1, DType::kF32, ReduceOp::kMax)));
  // Submitted unfused (a bucket of its own): alone however small, and its neighbours fuse around it.
  TensorParams bucket = Ar(10);
  bucket.unfused = true;
  auto u = PlanFusion({Ar(10), bucket, Ar(10), bucket}, 1000, 4);
  REQUIRE(u.size() == 3);
  CHECK(u[0].members == std::vector<size_t>{0, 2});
  CHECK(u[1].members == std::vector<size_t>{1});
  CHECK(u[2].members == std::vector<size_t>{3});
  CHECK(DescribeParams(bucket).find("unfused") != std::string::npos);
}

TEST_CASE("scaled copies scale floats in their own precision and copy the rest", "[fusion]") {
  float f[3] = {1, -3, 0.5f}, fo[3];
  ScaledCopy(DType::kF32, fo, f, 3, 0.5);
  CHECK(fo[0] == 0.5f);
  CHECK(fo[1] == -1.5f);
  double d[2] = {1e300, 3}, dout[2];
  ScaledCopy(DType::kF64, dout, d, 2, 4);
  CHECK(dout[0] == 4e300);  // in f64, not f32
  uint16_t h[2] = {FloatToHalf(3.0f), FloatToHalf(-0.25f)}, ho[2];
  ScaledCopy(DType::kF16, ho, h, 2, 2);
  CHECK(HalfToFloat(ho[0]) == 6.0f);
  CHECK(HalfToFloat(ho[1]) == -0.5f);
  uint16_t bf[1] = {FloatToBF16(1.5f)};
  ScaledCopy(DType::kBF16, bf, bf, 1, 3);  // in place
  CHECK(BF16ToFloat(bf[0]) == 4.5f);
  int32_t i[2] = {7, -9}, io[2];
  ScaledCopy(DType::kI32, io, i, 2, 1);
  CHECK((io[0] == 7 && io[1] == -9));
}

TEST_CASE("the timeline writes a Chrome trace with one row per tensor, names escaped", "[fusion]") {
  std::string path = "/tmp/hoop-timeline-" + std::to_string(::getpid()) + ".json";
  {
    Timeline t;
    REQUIRE(t.Open(path, 0).ok());
    auto now = Timeline::Clock::now();
    t.Span("grad/\"odd\"\\name", "NEGOTIATE", now, now + std::chrono::microseconds(5));
    t.Span("b", "ALLREDUCE", now, now + std::chrono::microseconds(7), "\"tensors\":2");
    t.Span("grad/\"odd\"\\name", "QUEUE", now, now);
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  std::remove(path.c_str());
  CHECK(s.rfind("[\n", 0) == 0);
  CHECK(s.substr(s.size() - 3) == "\n]\n");
  CHECK(s.find("\"args\":{\"name\":\"grad/\\\"odd\\\"\\\\name\"}") != std::string::npos);
  CHECK(s.find("\"name\":\"ALLREDUCE\",\"ph\":\"X\",\"pid\":0,\"tid\":2") != std::string::npos);
  CHECK(s.find("\"args\":{\"tensors\":2}") != std::string::npos);
  // Two thread_name rows, three spans.
  size_t rows = 0, spans = 0;
  for (size_t p = 0; (p = s.find("thread_name", p)) != std::string::npos; ++p) ++rows;
  for (size_t p = 0; (p = s.find("\"ph\":\"X\"", p)) != std::string::npos; ++p) ++spans;
  CHECK(rows == 2);
  CHECK(spans == 3);
  Timeline other;
  CHECK(other.Open(path, 1).ok());  // only rank 0 writes
  CHECK_FALSE(other.on());
  CHECK_FALSE(other.Open("/nonexistent-dir/x.json", 0).ok());
  // Reopened with cycles marked: a new, complete file with CYCLE_START instants.
  {
    Timeline t;
    REQUIRE(t.Open(path, 0, true).ok());
    t.MarkCycle(Timeline::Clock::now());
    t.Span("a", "ALLREDUCE", Timeline::Clock::now(), Timeline::Clock::now());
    t.MarkCycle(Timeline::Clock::now());
    std::string second = path + ".2";
    REQUIRE(t.Open(second, 0, false).ok());  // closes the first
    t.MarkCycle(Timeline::Clock::now());     // not asked for: nothing
    t.Close();
    std::ifstream in2(second);
    std::stringstream s2;
    s2 << in2.rdbuf();
    CHECK(s2.str() == "[\n\n]\n");
    std::remove(second.c_str());
  }
  std::ifstream in3(path);
  std::stringstream s3;
  s3 << in3.rdbuf();
  std::string marked = s3.str();
  std::remove(path.c_str());
  CHECK(marked.rfind("[\n{\"name\":\"CYCLE_START\",\"ph\":\"i\",\"s\":\"g\"", 0) == 0);
  CHECK(marked.substr(marked.size() - 3) == "\n]\n");
  size_t marks = 0;
  for (size_t p = 0; (p = marked.find("CYCLE_START", p)) != std::string::npos; ++p) ++marks;
  CHECK(marks == 2);
}

TEST_CASE("Config reads the tensor fusion settings and refuses bad ones", "[fusion][common]") {
  auto c = Config::FromEnv({{"HOOP_CYCLE_TIME_MS", "0.5"},
                            {"HOOP_FUSION_THRESHOLD", "16M"},
                            {"HOOP_CACHE_CAPACITY", "0"},
                            {"HOOP_STALL_WARNING_S", "0"},
                            {"HOOP_TIMELINE", "/tmp/t.json"},
                            {"HOOP_TIMELINE_MARK_CYCLES", "1"}});
  REQUIRE(c.ok());
  CHECK(c->cycle_time_ms == 0.5);
  CHECK(c->fusion_threshold == 16u << 20);
  CHECK(c->cache_capacity == 0);
  CHECK(c->stall_warning_s == 0);
  CHECK(c->timeline == "/tmp/t.json");
  CHECK(c->timeline_mark_cycles);
  auto d = Config::FromEnv({});
  REQUIRE(d.ok());
  CHECK(d->cycle_time_ms == 1);
  CHECK(d->fusion_threshold == 64u << 20);
  CHECK(d->cache_capacity == 1024);
  CHECK(d->stall_warning_s == 60);
  CHECK(Config::FromEnv({{"HOOP_CYCLE_TIME_MS", "-1"}}).status().message().find("HOOP_CYCLE_TIME_MS") !=
        std::string::npos);
  CHECK_FALSE(Config::FromEnv({{"HOOP_FUSION_THRESHOLD", "lots"}}).ok());
  CHECK_FALSE(Config::FromEnv({{"HOOP_CACHE_CAPACITY", "-3"}}).ok());
  CHECK_FALSE(Config::FromEnv({{"HOOP_STALL_WARNING_S", "soon"}}).ok());
  CHECK(Config::FromEnv({{"HOOP_TIMELINE_MARK_CYCLES", "yes"}}).status().message() ==
        "HOOP_TIMELINE_MARK_CYCLES='yes': expected 1 (mark each negotiation cycle) or 0");
  CHECK_FALSE(d->timeline_mark_cycles);
}

TEST_CASE("a handle's callback has finished when Wait returns; OnComplete after completion runs at once", "[fusion]") {
  std::vector<std::pair<std::shared_ptr<HandleState>, Status>> batch;
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    auto h = std::make_shared<HandleState>("t" + std::to_string(i), [&ran](const Status& s) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a slow callback
      if (s.ok()) ++ran;
    });
    batch.emplace_back(h, Status::Ok());
  }
  Handle first(batch[0].first), last(batch[2].first);
  CHECK_FALSE(first.Test());
  CHECK(first.Wait(Deadline::After(std::chrono::milliseconds(1))).code() == Code::kDeadlineExceeded);
  std::thread completer([&] { CompleteAll(batch); });
  CHECK(first.Wait().ok());
  CHECK(ran.load() == 3);  // every callback of the batch ran before any handle showed done
  CHECK(last.Test());
  completer.join();
  int late = 0;
  last.OnComplete([&](const Status& s) { late += s.ok(); });
  CHECK(late == 1);
  Complete(*batch[0].first, Aborted("again"));  // a second completion changes nothing
  CHECK(first.Wait().ok());
}
