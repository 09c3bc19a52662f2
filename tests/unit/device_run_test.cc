// Device runs and the shm back end's CUDA IPC protocol without a GPU: ranks as threads over real
// shm, with a fake device (tests/support/fake_device.h) whose queue does its work late, one step
// per look, so that reading memory before the queue has written it (or writing it again before a
// peer's queue has read it) shows as wrong bits. Every result is compared with the reference,
// bit for bit: every dtype with sum and every op on f32 and i32, odd counts across several
// chunks, in and out of place, 2 to 4 ranks; the other three collectives that run this way; and
// ranks that mix host and device buffers in one call (bytes to device memory, descriptors to
// host memory). That the runs went by descriptors is checked too. On a GPU the same protocol runs
// with CUDA's queue and IPC (tests/gpu/).
#include <catch2/catch.hpp>

#include <cstring>

#include "collectives/reference.h"
#include "tests/support/fake_device.h"
#include "tests/support/thread_ranks.h"

using namespace hoop;
using namespace std::chrono_literals;
using test::FakeDevice;
using test::ThreadRanks;

namespace {

std::unique_ptr<ThreadRanks> Ranks(int n, FakeDevice& dev) {
  auto t = ThreadRanks::Start(n, "shm", 20s, [&](CommOptions& o) { o.device_access = dev.access(); });
  INFO(t.status().message());
  REQUIRE(t.ok());
  return std::move(t).value();
}

// Which ranks' buffers are on the (fake) device.
enum class Place { kAll, kRankZeroOnHost };

struct Case {
  DType dtype;
  ReduceOp op;
  size_t count;
  bool in_place;
};

// One allreduce per case on n ranks; the first wrong result names rank, case and mismatches.
void Allreduces(int n, Place place, const std::vector<Case>& cases) {
  FakeDevice dev;
  auto ranks = Ranks(n, dev);
  for (const Case& k : cases) {
    const size_t es = DTypeSize(k.dtype), bytes = k.count * es;
    std::vector<std::vector<char>> inputs(static_cast<size_t>(n), std::vector<char>(std::max<size_t>(bytes, 1)));
    std::vector<const void*> ins;
    for (int r = 0; r < n; ++r) {
      FillInput(k.dtype, k.op, inputs[static_cast<size_t>(r)].data(), k.count, 1000 * static_cast<uint64_t>(r) + k.count);
      ins.push_back(inputs[static_cast<size_t>(r)].data());
    }
    std::vector<char> want(std::max<size_t>(bytes, 1));
    ReferenceReduce(k.dtype, k.op, ins, want.data(), k.count);
    Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
      const bool on_device = place == Place::kAll || rank != 0;
      std::vector<char> host_in, host_out;
      char *in, *out;
      if (on_device) {
        in = dev.Alloc(bytes);
        out = k.in_place ? in : dev.Alloc(bytes);
      } else {
        host_in.resize(std::max<size_t>(bytes, 1));
        host_out.resize(std::max<size_t>(bytes, 1));
        in = host_in.data();
        out = k.in_place ? in : host_out.data();
      }
      std::memcpy(in, inputs[static_cast<size_t>(rank)].data(), bytes);
      if (!k.in_place) std::memset(out, 0x5a, bytes);
      const MemKind kind = on_device ? MemKind::kCuda : MemKind::kHost;
      HOOP_RETURN_IF_ERROR(
          c.Allreduce(Buffer{in, k.count, k.dtype, kind}, Buffer{out, k.count, k.dtype, kind}, k.op).Wait());
      dev.Touch(in, bytes);
      dev.Touch(out, bytes);
      const size_t bad = CountMismatches(k.dtype, out, want.data(), k.count);
      if (bad > 0)
        return Internal(std::to_string(bad) + " of " + std::to_string(k.count) + " " + DTypeName(k.dtype) + " " +
                        ReduceOpName(k.op) + (k.in_place ? " in place" : "") + " elements differ");
      return Status::Ok();
    });
    INFO(n << " ranks, " << DTypeName(k.dtype) << " " << ReduceOpName(k.op) << " x " << k.count << ": " << s.message());
    REQUIRE(s.ok());
  }
  CHECK(dev.descriptors() > 0);  // the device ranks sent descriptors, not bytes
  CHECK(dev.jobs() > 0);
  CHECK(dev.hazard() == "");
}

}  // namespace

TEST_CASE("device runs: allreduce of every dtype and op through CUDA IPC descriptors", "[device]") {
  for (int n : {2, 3, 4}) {
    std::vector<Case> cases;
    for (DType t : kAllDTypes)
      if (OpApplies(t, ReduceOp::kSum)) cases.push_back({t, ReduceOp::kSum, 100003, n == 3});
    for (ReduceOp op : kAllReduceOps) {
      for (DType t : {DType::kF32, DType::kI32})
        if (OpApplies(t, op)) cases.push_back({t, op, 4099, false});
    }
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{(1u << 18) + 5}})
      cases.push_back({DType::kF32, ReduceOp::kSum, count, count == 1000});
    Allreduces(n, Place::kAll, cases);
  }
}

TEST_CASE("device runs: ranks that mix host and device buffers in one allreduce", "[device]") {
  for (int n : {2, 3}) {
    Allreduces(n, Place::kRankZeroOnHost,
               {{DType::kF32, ReduceOp::kSum, 100003, false},
                {DType::kI64, ReduceOp::kMax, 7, false},
                {DType::kBF16, ReduceOp::kSum, 65537, true},
                {DType::kF64, ReduceOp::kAvg, (1u << 17) + 1, false}});
  }
}

TEST_CASE("device runs: broadcast, allgather and reduce-scatter through CUDA IPC descriptors", "[device]") {
  const int n = 3;
  FakeDevice dev;
  auto ranks = Ranks(n, dev);
  for (size_t count : {size_t{1}, size_t{4097}, size_t{70001}}) {
    Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
      const size_t es = sizeof(int32_t);
      auto at = [](char* p, size_t i) {
        int32_t v;
        std::memcpy(&v, p + i * sizeof v, sizeof v);
        return v;
      };
      auto set = [](char* p, size_t i, int32_t v) { std::memcpy(p + i * sizeof v, &v, sizeof v); };
      // Broadcast from rank 1, out of place on the root.
      char* in = dev.Alloc(count * es);
      char* out = dev.Alloc(count * es);
      for (size_t i = 0; i < count; ++i) set(in, i, rank == 1 ? static_cast<int32_t>(3 * i + 1) : -1);
      HOOP_RETURN_IF_ERROR(c.Broadcast(Buffer{in, count, DType::kI32, MemKind::kCuda},
                                       Buffer{out, count, DType::kI32, MemKind::kCuda}, 1).Wait());
      dev.Touch(in, count * es);
      dev.Touch(out, count * es);
      for (size_t i = 0; i < count; ++i)
        if (at(out, i) != static_cast<int32_t>(3 * i + 1)) return Internal("broadcast: element " + std::to_string(i));
      // Allgather.
      char* all = dev.Alloc(count * n * es);
      for (size_t i = 0; i < count; ++i) set(in, i, static_cast<int32_t>(rank * 100000 + i));
      HOOP_RETURN_IF_ERROR(c.Allgather(Buffer{in, count, DType::kI32, MemKind::kCuda},
                                       Buffer{all, count * n, DType::kI32, MemKind::kCuda}).Wait());
      dev.Touch(in, count * es);
      dev.Touch(all, count * n * es);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i)
          if (at(all, static_cast<size_t>(r) * count + i) != static_cast<int32_t>(r * 100000 + i))
            return Internal("allgather: rank " + std::to_string(r) + "'s element " + std::to_string(i));
      // Reduce-scatter of what was gathered, each rank adding its rank + 1.
      for (size_t i = 0; i < count * n; ++i) set(all, i, static_cast<int32_t>(i) + rank + 1);
      HOOP_RETURN_IF_ERROR(c.ReduceScatter(Buffer{all, count * n, DType::kI32, MemKind::kCuda},
                                           Buffer{out, count, DType::kI32, MemKind::kCuda}, ReduceOp::kSum).Wait());
      dev.Touch(all, count * n * es);
      dev.Touch(out, count * es);
      for (size_t i = 0; i < count; ++i) {
        const auto g = static_cast<int32_t>(static_cast<size_t>(rank) * count + i);
        if (at(out, i) != n * g + n * (n + 1) / 2) return Internal("reduce-scatter: element " + std::to_string(i));
      }
      return Status::Ok();
    });
    INFO(count << ": " << s.message());
    REQUIRE(s.ok());
  }
  CHECK(dev.descriptors() > 0);
  CHECK(dev.hazard() == "");
}
