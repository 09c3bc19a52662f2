// The collective table (collectives/core/coll_table.h): every collective has one row, consistent with
// the names and roots the rest of hoop uses; and a collective's run, driven by a recording
// CallContext (a fake of the communicator beneath it: logic only, the real runs are the matrix
// tests'), asks for the placements and schedules its file says.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "collectives/core/coll_table.h"

using namespace hoop;

namespace {
constexpr CollKind kAll[] = {CollKind::kAllreduce,     CollKind::kBroadcast,      CollKind::kAllgather,
                             CollKind::kReduceScatter, CollKind::kBarrier,        CollKind::kReduce,
                             CollKind::kGather,        CollKind::kScatter,        CollKind::kAlltoall,
                             CollKind::kAllgatherv,    CollKind::kReduceScatterv, CollKind::kAlltoallv};

// Records what a run asks for; places on the host, schedules nothing.
struct Recorder final : CallContext {
  int r = 0, n = 1;
  Algo algo = Algo::kRing;
  std::vector<char> scratch;
  std::vector<std::string> log;
  int rank() const override { return r; }
  int size() const override { return n; }
  StatusOr<Algo> Resolve() const override { return algo; }
  StatusOr<Compression> Wire() override { return Compression::kNone; }
  Status Place(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
    log.push_back("place " + std::to_string(bytes));
    return Status::Ok();
  }
  Buffer Scratch(size_t count, DType dtype) override {
    scratch.resize(count * DTypeSize(dtype));
    log.push_back("scratch " + std::to_string(count));
    return Buffer{scratch.data(), count, dtype, MemKind::kHost};
  }
  Status RunSchedule(Algo a, size_t count, const Buffer& in, const Buffer& out, Compression) override {
    log.push_back(std::string("schedule ") + AlgoName(a) + " " + std::to_string(count) +
                  (in.data == out.data ? " in-place" : ""));
    return Status::Ok();
  }
};

CollCall Make(CollKind k, std::vector<float>& in, std::vector<float>& out, int root = -1) {
  CollCall c;
  c.kind = k;
  c.in = Buffer{in.data(), in.size(), DType::kF32, MemKind::kHost};
  c.out = Buffer{out.data(), out.size(), DType::kF32, MemKind::kHost};
  c.root = root;
  return c;
}
}  // namespace

TEST_CASE("every collective has one row, named and rooted as the wire says", "[coll_table]") {
  std::set<std::string> names;
  for (CollKind k : kAll) {
    const CollRow* row = FindColl(k);
    REQUIRE(row != nullptr);
    CHECK(row->kind == k);
    CHECK(std::string(CollKindName(k)) == row->name);
    CHECK(Rooted(k) == row->rooted);
    CHECK(Reduces(k) == row->reduces);
    CHECK(row->run != nullptr);
    CHECK(row->check != nullptr);
    CHECK(names.insert(row->name).second);
  }
  CHECK(FindColl(static_cast<CollKind>(0)) == nullptr);
  CHECK(std::string(CollKindName(static_cast<CollKind>(15))) == "?");
  CHECK(Reduces(CollKind::kReduceScatterv));
  CHECK_FALSE(Reduces(CollKind::kAlltoall));
}

TEST_CASE("a rooted row's uses: the root alone reads (writes) what the others may not pass", "[coll_table]") {
  std::vector<float> a(4), b(4);
  CollCall bc = Make(CollKind::kBroadcast, a, b, 1);
  CHECK(UsesIn(bc, 1));
  CHECK_FALSE(UsesIn(bc, 0));
  CHECK(UsesOut(bc, 0));
  CollCall g = Make(CollKind::kGather, a, b, 2);
  CHECK(UsesOut(g, 2));
  CHECK_FALSE(UsesOut(g, 0));
  CHECK(UsesIn(g, 0));
  CollCall bar = Make(CollKind::kBarrier, a, b);
  CHECK_FALSE(UsesIn(bar, 0));
  CHECK_FALSE(UsesOut(bar, 0));
  CHECK(DescCount(bc) == 4);
}

TEST_CASE("the rows' shape checks name what is wrong", "[coll_table]") {
  std::vector<float> a(6), b(3);
  CHECK(Row(CollKind::kAllgather).check(Make(CollKind::kAllgather, b, a), 0, 2) == "");
  CHECK(Row(CollKind::kAllgather).check(Make(CollKind::kAllgather, b, a), 0, 3).find("size x input count = 9") !=
        std::string::npos);
  CHECK(Row(CollKind::kReduceScatter).check(Make(CollKind::kReduceScatter, a, b), 1, 2) == "");
  CHECK(Row(CollKind::kAlltoall).check(Make(CollKind::kAlltoall, a, a), 0, 4).find("not a multiple") !=
        std::string::npos);
  // Only the root's counts must agree.
  CHECK(Row(CollKind::kGather).check(Make(CollKind::kGather, a, b, 0), 1, 2) == "");
  CHECK(Row(CollKind::kGather).check(Make(CollKind::kGather, a, b, 0), 0, 2) != "");
  // A count whose blocks for every rank pass 2^64 elements is refused, not wrapped.
  CollCall huge = Make(CollKind::kScatter, a, b, 0);
  huge.out.count = SIZE_MAX / 2 + 1;
  CHECK(Row(CollKind::kScatter).check(huge, 1, 2).find("2^64 elements or more") != std::string::npos);
  CollCall v = Make(CollKind::kAlltoallv, a, a);
  CHECK(Row(CollKind::kAlltoallv).check(v, 0, 2) == "no counts given");
}

TEST_CASE("a run asks its context for what its file says", "[coll_table]") {
  std::vector<float> in{1, 2, 3, 4}, out(2);
  Recorder ctx;
  ctx.n = 2;
  ctx.r = 1;
  SECTION("reduce-scatter: a working copy, the schedule, its own block placed") {
    REQUIRE(RunReduceScatter(ctx, Make(CollKind::kReduceScatter, in, out)).ok());
    CHECK(ctx.log == std::vector<std::string>{"scratch 4", "schedule ring 2", "place 8"});
  }
  SECTION("broadcast on a rank other than the root sends from what it receives") {
    REQUIRE(RunBroadcast(ctx, Make(CollKind::kBroadcast, in, out, 0)).ok());
    CHECK(ctx.log == std::vector<std::string>{"schedule ring 2 in-place"});
  }
  SECTION("one rank: a copy, no schedule") {
    ctx.n = 1;
    ctx.r = 0;
    std::vector<float> o(4);
    REQUIRE(RunAllreduce(ctx, Make(CollKind::kAllreduce, in, o)).ok());
    CHECK(ctx.log == std::vector<std::string>{"place 16"});
    CHECK(o == in);
  }
  SECTION("the barrier runs dissemination with no data") {
    REQUIRE(RunBarrier(ctx, Make(CollKind::kBarrier, in, out)).ok());
    CHECK(ctx.log == std::vector<std::string>{"schedule dissemination 0 in-place"});
  }
}
