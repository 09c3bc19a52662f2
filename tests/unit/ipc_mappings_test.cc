// IpcMappings (common/ipc_mappings.h) over a fake driver that behaves as CUDA's does for IPC: a
// block is mapped at most once per process, and opening any handle into a mapped block fails
// with error 208 (kFailedPrecondition from CudaIpcOpen). The real driver's side runs in
// tests/gpu/ipc_test.cc.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "common/ipc_mappings.h"

namespace hoop {
namespace {

struct FakeDriver {
  std::map<uint64_t, int> block_of;  // buffer id -> the block it lies in
  std::set<int> mapped;              // blocks mapped in this "process"
  std::map<void*, int> by_ptr;
  int opens = 0, closes = 0;
  char mem[64] = {};

  IpcMappings::OpenFn Opener(uint64_t id) {
    return [this, id]() -> StatusOr<void*> {
      ++opens;
      const int block = block_of.at(id);
      if (mapped.count(block)) return FailedPrecondition("cudaIpcOpenMemHandle: mapped already (error 208)");
      mapped.insert(block);
      void* p = &mem[id];
      by_ptr[p] = block;
      return p;
    };
  }
  IpcMappings::CloseFn Closer() {
    return [this](void* p) {
      ++closes;
      mapped.erase(by_ptr.at(p));
      by_ptr.erase(p);
    };
  }
};

TEST_CASE("IPC mappings: two holders of one buffer share one mapping, counted", "[ipc]") {
  FakeDriver d;
  d.block_of = {{1, 10}, {2, 20}};
  IpcMappings t(d.Closer(), 4);
  auto a = t.Open({100, 1}, d.Opener(1));  // one communicator's queue
  auto b = t.Open({100, 1}, d.Opener(1));  // another's: before the table, error 208
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK(d.opens == 1);
  t.Release({100, 1});
  CHECK(t.referenced() == 1);
  t.Release({100, 1});
  CHECK(t.referenced() == 0);
  CHECK(t.mapped() == 1);  // cached for the next step
  CHECK(d.closes == 0);
  CHECK(t.Open({100, 1}, d.Opener(1)).ok());
  CHECK(d.opens == 1);
  t.Release({100, 1});
  t.Release({100, 1});  // one too many: ignored
  CHECK(t.mapped() == 1);
}

TEST_CASE("IPC mappings: another allocation in a mapped block unmaps the unheld ones and retries", "[ipc]") {
  FakeDriver d;
  d.block_of = {{1, 10}, {2, 10}, {3, 30}};  // buffers 1 and 2 share a block
  IpcMappings t(d.Closer(), 4);
  REQUIRE(t.Open({100, 1}, d.Opener(1)).ok());
  REQUIRE(t.Open({200, 3}, d.Opener(3)).ok());  // another exporter's: not touched

  SECTION("held: refused, naming why") {
    auto m = t.Open({100, 2}, d.Opener(2));
    REQUIRE(m.status().code() == Code::kFailedPrecondition);
    CHECK_THAT(m.status().message(), Catch::Contains("another communicator of this process holds"));
    CHECK(d.closes == 0);
  }
  SECTION("released: unmapped, then mapped") {
    t.Release({100, 1});
    t.Release({200, 3});
    auto m = t.Open({100, 2}, d.Opener(2));
    REQUIRE(m.ok());
    CHECK(d.closes == 1);    // buffer 1's mapping, not the other exporter's
    CHECK(t.mapped() == 2);  // buffer 2's and exporter 200's
    CHECK(t.referenced() == 1);
  }
}

TEST_CASE("IPC mappings: at most max_unused unheld mappings stay, the oldest go first", "[ipc]") {
  FakeDriver d;
  for (uint64_t id = 1; id <= 5; ++id) d.block_of[id] = static_cast<int>(id);
  IpcMappings t(d.Closer(), 2);
  for (uint64_t id = 1; id <= 5; ++id) REQUIRE(t.Open({7, id}, d.Opener(id)).ok());
  for (uint64_t id = 1; id <= 5; ++id) t.Release({7, id});
  CHECK(t.mapped() == 2);
  CHECK(d.closes == 3);
  // The newest two (4, 5) are the ones kept: opening them again maps nothing.
  const int opens = d.opens;
  CHECK(t.Open({7, 4}, d.Opener(4)).ok());
  CHECK(t.Open({7, 5}, d.Opener(5)).ok());
  CHECK(d.opens == opens);
}

TEST_CASE("IPC mappings: a failed open is passed on and leaves nothing", "[ipc]") {
  FakeDriver d;
  IpcMappings t(d.Closer(), 2);
  auto m = t.Open({1, 1}, [] { return StatusOr<void*>(Unavailable("cudaIpcOpenMemHandle: invalid handle")); });
  CHECK(m.status().code() == Code::kUnavailable);
  CHECK(t.mapped() == 0);
}

}  // namespace
}  // namespace hoop
