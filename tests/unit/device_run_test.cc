// Device runs and the shm back end's CUDA IPC protocol without a GPU: ranks as threads over real
// shm, with a fake device (tests/support/fake_device.h) whose queue does its work late (a job is
// done once it has waited and a mark is asked about), and which names every job queued to read
// or write what another rank's queue has still to write or read, and every host access after a
// call to memory a queue still works on: the hazards the protocol's marks and acknowledgements
// must order. Every result is compared with the reference, bit for bit: allreduce of every dtype
// with sum and every op on f32 and i32, odd counts across several chunks, in and out of place,
// 2 to 4 ranks; ranks that mix host and device buffers in one call (bytes to device memory,
// descriptors to host memory); broadcast, allgather, reduce-scatter, reduce, gather, scatter,
// alltoall (in place too) and the v-collectives; sends and receives of every size class, device
// to device, device to host and back, to self, from any source, held until posted. That the runs
// went by descriptors is checked too. On a GPU the same protocol runs with CUDA's queue and IPC
// (tests/gpu/ipc_test.cc).
#include <catch2/catch.hpp>

#include <cstring>

#include "collectives/testing/reference.h"
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
      FillInput(k.dtype, k.op, inputs[static_cast<size_t>(r)].data(), k.count,
                1000 * static_cast<uint64_t>(r) + k.count);
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
  // Small calls: the host rank walks their plans on its thread (blocking.cc; on 3 ranks
  // as the extra that folds into rank 1), the device ranks through the executor; the messages
  // must be the same.
  for (int n : {2, 3, 4}) {
    Allreduces(n, Place::kRankZeroOnHost,
               {{DType::kF32, ReduceOp::kSum, 100003, false},
                {DType::kI64, ReduceOp::kMax, 7, false},
                {DType::kF32, ReduceOp::kAvg, 1, false},
                {DType::kF16, ReduceOp::kSum, 1000, true},
                {DType::kI32, ReduceOp::kBxor, 1023, false},
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
                                       Buffer{out, count, DType::kI32, MemKind::kCuda}, 1)
                               .Wait());
      dev.Touch(in, count * es);
      dev.Touch(out, count * es);
      for (size_t i = 0; i < count; ++i)
        if (at(out, i) != static_cast<int32_t>(3 * i + 1)) return Internal("broadcast: element " + std::to_string(i));
      // Allgather.
      char* all = dev.Alloc(count * n * es);
      for (size_t i = 0; i < count; ++i) set(in, i, static_cast<int32_t>(rank * 100000 + i));
      HOOP_RETURN_IF_ERROR(c.Allgather(Buffer{in, count, DType::kI32, MemKind::kCuda},
                                       Buffer{all, count * n, DType::kI32, MemKind::kCuda})
                               .Wait());
      dev.Touch(in, count * es);
      dev.Touch(all, count * n * es);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i)
          if (at(all, static_cast<size_t>(r) * count + i) != static_cast<int32_t>(r * 100000 + i))
            return Internal("allgather: rank " + std::to_string(r) + "'s element " + std::to_string(i));
      // Reduce-scatter of what was gathered, each rank adding its rank + 1.
      for (size_t i = 0; i < count * n; ++i) set(all, i, static_cast<int32_t>(i) + rank + 1);
      HOOP_RETURN_IF_ERROR(c.ReduceScatter(Buffer{all, count * n, DType::kI32, MemKind::kCuda},
                                           Buffer{out, count, DType::kI32, MemKind::kCuda}, ReduceOp::kSum)
                               .Wait());
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

namespace {

int32_t At(const char* p, size_t i) {
  int32_t v;
  std::memcpy(&v, p + i * sizeof v, sizeof v);
  return v;
}
void Set(char* p, size_t i, int32_t v) { std::memcpy(p + i * sizeof v, &v, sizeof v); }
Buffer Dev(char* p, size_t count) { return Buffer{p, count, DType::kI32, MemKind::kCuda}; }
Status Differs(const char* what, size_t i) { return Internal(std::string(what) + ": element " + std::to_string(i)); }

// Reduce, gather, scatter, alltoall (in and out of place) and the v-collectives on device
// buffers, rank r's values made from r and the index, each checked where it lands.
Status OtherCollectives(int rank, int n, Communicator& c, FakeDevice& dev, size_t count) {
  const size_t es = sizeof(int32_t), all = count * static_cast<size_t>(n);
  char* in = dev.Alloc(all * es);
  char* out = dev.Alloc(all * es);
  // Reduce to rank 1: sum over ranks of (r + i).
  for (size_t i = 0; i < count; ++i) Set(in, i, static_cast<int32_t>(rank + i));
  HOOP_RETURN_IF_ERROR(c.Reduce(Dev(in, count), Dev(out, count), ReduceOp::kSum, 1).Wait());
  if (rank == 1)
    for (size_t i = 0; i < count; ++i)
      if (At(out, i) != static_cast<int32_t>(n * i) + n * (n - 1) / 2) return Differs("reduce", i);
  // Gather to the last rank: block r is r * 1000003 + i.
  for (size_t i = 0; i < count; ++i) Set(in, i, static_cast<int32_t>(rank * 1000003 + i));
  HOOP_RETURN_IF_ERROR(c.Gather(Dev(in, count), Dev(out, all), n - 1).Wait());
  if (rank == n - 1)
    for (size_t i = 0; i < all; ++i)
      if (At(out, i) != static_cast<int32_t>((i / count) * 1000003 + i % count)) return Differs("gather", i);
  // Scatter from rank 1: block r of its input to rank r.
  for (size_t i = 0; i < all; ++i) Set(in, i, rank == 1 ? static_cast<int32_t>(7 * i + 1) : -1);
  HOOP_RETURN_IF_ERROR(c.Scatter(Dev(in, all), Dev(out, count), 1).Wait());
  for (size_t i = 0; i < count; ++i)
    if (At(out, i) != static_cast<int32_t>(7 * (static_cast<size_t>(rank) * count + i) + 1))
      return Differs("scatter", i);
  // Alltoall, out of place then in place: block d of rank s's input is s * 1000 + d * 100000 + i.
  for (bool in_place : {false, true}) {
    for (size_t i = 0; i < all; ++i) Set(in, i, static_cast<int32_t>(rank * 1000 + (i / count) * 100000 + i % count));
    char* dst = in_place ? in : out;
    HOOP_RETURN_IF_ERROR(c.Alltoall(Dev(in, all), Dev(dst, all)).Wait());
    for (size_t i = 0; i < all; ++i)
      if (At(dst, i) != static_cast<int32_t>((i / count) * 1000 + rank * 100000 + i % count))
        return Differs(in_place ? "alltoall in place" : "alltoall", i);
  }
  // Allgatherv with rank r's block count + r long.
  std::vector<size_t> counts;
  for (int r = 0; r < n; ++r) counts.push_back(count + static_cast<size_t>(r));
  const Blocks packed = PackedBlocks(counts);
  size_t total = 0;
  for (size_t k : counts) total += k;
  char* vin = dev.Alloc(total * es);
  char* vout = dev.Alloc(total * es);
  for (size_t i = 0; i < counts[static_cast<size_t>(rank)]; ++i) Set(in, i, static_cast<int32_t>(rank * 1000003 + i));
  HOOP_RETURN_IF_ERROR(c.Allgatherv(Dev(in, counts[static_cast<size_t>(rank)]), Dev(vout, total), packed).Wait());
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < counts[static_cast<size_t>(r)]; ++i)
      if (At(vout, packed.displs[static_cast<size_t>(r)] + i) != static_cast<int32_t>(r * 1000003 + i))
        return Differs("allgatherv", i);
  // Reduce-scatterv: every rank adds (its rank + the index) over the whole input.
  for (size_t i = 0; i < total; ++i) Set(vin, i, static_cast<int32_t>(rank + i));
  HOOP_RETURN_IF_ERROR(
      c.ReduceScatterv(Dev(vin, total), Dev(out, counts[static_cast<size_t>(rank)]), counts, ReduceOp::kSum).Wait());
  for (size_t i = 0; i < counts[static_cast<size_t>(rank)]; ++i)
    if (At(out, i) != static_cast<int32_t>(n * (packed.displs[static_cast<size_t>(rank)] + i)) + n * (n - 1) / 2)
      return Differs("reduce_scatterv", i);
  // Alltoallv: rank s sends count + s + d elements to rank d.
  std::vector<size_t> scounts, rcounts;
  for (int d = 0; d < n; ++d) scounts.push_back(count + static_cast<size_t>(rank + d));
  for (int s = 0; s < n; ++s) rcounts.push_back(count + static_cast<size_t>(s + rank));
  const Blocks send = PackedBlocks(scounts), recv = PackedBlocks(rcounts);
  char* ain = dev.Alloc((all + 3 * static_cast<size_t>(n) * n) * es);
  char* aout = dev.Alloc((all + 3 * static_cast<size_t>(n) * n) * es);
  for (int d = 0; d < n; ++d)
    for (size_t i = 0; i < scounts[static_cast<size_t>(d)]; ++i)
      Set(ain, send.displs[static_cast<size_t>(d)] + i, static_cast<int32_t>(rank * 1000 + d * 100000 + i));
  size_t send_total = 0, recv_total = 0;
  for (size_t k : scounts) send_total += k;
  for (size_t k : rcounts) recv_total += k;
  HOOP_RETURN_IF_ERROR(c.Alltoallv(Dev(ain, send_total), send, Dev(aout, recv_total), recv).Wait());
  for (int s = 0; s < n; ++s)
    for (size_t i = 0; i < rcounts[static_cast<size_t>(s)]; ++i)
      if (At(aout, recv.displs[static_cast<size_t>(s)] + i) != static_cast<int32_t>(s * 1000 + rank * 100000 + i))
        return Differs("alltoallv", i);
  for (const char* p : {in, out, vin, vout, ain, aout}) dev.Touch(p, 1);
  return Status::Ok();
}

}  // namespace

TEST_CASE("device runs: reduce, gather, scatter, alltoall and the v-collectives through CUDA IPC descriptors",
          "[device]") {
  for (int n : {2, 3, 4}) {
    FakeDevice dev;
    auto ranks = Ranks(n, dev);
    for (size_t count : {size_t{1}, size_t{3001}, size_t{50001}}) {
      Status s = ranks->Run([&](int rank, Communicator& c) { return OtherCollectives(rank, n, c, dev, count); });
      INFO(n << " ranks, count " << count << ": " << s.message());
      REQUIRE(s.ok());
    }
    CHECK(dev.descriptors() > 0);
    CHECK(dev.hazard() == "");
  }
}

TEST_CASE("device runs: sends and receives of device memory through CUDA IPC descriptors", "[device]") {
  FakeDevice dev;
  auto ranks = Ranks(3, dev);
  // Sizes around the mailbox's inline (24 B) and eager (64 KiB) limits and its 128 KiB pieces.
  const std::vector<size_t> counts{0, 1, 5, 7, 1000, 16385, 70001, 300007};
  Status s = ranks->Run([&](int rank, Communicator& c) -> Status {
    auto fill = [](char* p, size_t n, int seed) {
      for (size_t i = 0; i < n; ++i) Set(p, i, static_cast<int32_t>(seed * 1000003 + static_cast<int>(i)));
    };
    auto check = [](const char* p, size_t n, int seed, const std::string& what) -> Status {
      for (size_t i = 0; i < n; ++i)
        if (At(p, i) != static_cast<int32_t>(seed * 1000003 + static_cast<int>(i))) return Differs(what.c_str(), i);
      return Status::Ok();
    };
    for (size_t n : counts) {
      const std::string at = " of " + std::to_string(n);
      if (rank == 0) {
        // To rank 1 (device to device, by Work and by the blocking form) and rank 2 (whose
        // receive is host memory), and a message rank 1 sends back from host memory.
        char* a = dev.Alloc(n * 4);
        char* b = dev.Alloc(n * 4);
        fill(a, n, 1);
        fill(b, n, 2);
        Work w = c.Send(Dev(a, n), 1, 10);
        HOOP_RETURN_IF_ERROR(c.SendNow(Dev(b, n), 1, 11));
        HOOP_RETURN_IF_ERROR(w.Wait());
        HOOP_RETURN_IF_ERROR(c.Send(Dev(a, n), 2, 12).Wait());
        char* back = dev.Alloc(n * 4);
        RecvInfo info;
        HOOP_RETURN_IF_ERROR(c.RecvNow(Dev(back, n), 1, 13, &info));
        if (info.count != n || info.source != 1) return Internal("info" + at);
        HOOP_RETURN_IF_ERROR(check(back, n, 3, "host to device" + at));
        // To itself, device to device and device to host.
        char* self = dev.Alloc(n * 4);
        std::vector<int32_t> host(n);
        Work r1 = c.Recv(Dev(self, n), 0, 14);
        HOOP_RETURN_IF_ERROR(c.Send(Dev(a, n), 0, 14).Wait());
        HOOP_RETURN_IF_ERROR(r1.Wait());
        HOOP_RETURN_IF_ERROR(check(self, n, 1, "self" + at));
        Work s2 = c.Send(Dev(b, n), 0, 15);
        HOOP_RETURN_IF_ERROR(c.Recv(Buffer{host.data(), n, DType::kI32, MemKind::kHost}, 0, 15).Wait());
        HOOP_RETURN_IF_ERROR(s2.Wait());
        HOOP_RETURN_IF_ERROR(check(reinterpret_cast<const char*>(host.data()), n, 2, "self to host" + at));
        for (const char* p : {a, b, back, self}) dev.Touch(p, n * 4 + 1);
      } else if (rank == 1) {
        // Posted late and in reverse: the second message is held until its receive comes.
        char* x = dev.Alloc(n * 4);
        char* y = dev.Alloc(n * 4);
        auto info = std::make_shared<RecvInfo>();
        Work second = c.Recv(Dev(y, n), 0, 11, info);
        HOOP_RETURN_IF_ERROR(c.RecvNow(Dev(x, n), kAnySource, 10));
        HOOP_RETURN_IF_ERROR(second.Wait());
        HOOP_RETURN_IF_ERROR(check(x, n, 1, "device to device" + at));
        HOOP_RETURN_IF_ERROR(check(y, n, 2, "device to device, blocking send" + at));
        std::vector<int32_t> reply(n);
        fill(reinterpret_cast<char*>(reply.data()), n, 3);
        HOOP_RETURN_IF_ERROR(c.Send(Buffer{reply.data(), n, DType::kI32, MemKind::kHost}, 0, 13).Wait());
        for (const char* p : {x, y}) dev.Touch(p, n * 4 + 1);
      } else {
        std::vector<int32_t> host(n);
        HOOP_RETURN_IF_ERROR(c.Recv(Buffer{host.data(), n, DType::kI32, MemKind::kHost}, 0, 12).Wait());
        HOOP_RETURN_IF_ERROR(check(reinterpret_cast<const char*>(host.data()), n, 1, "device to host" + at));
      }
    }
    return Status::Ok();
  });
  INFO(s.message());
  REQUIRE(s.ok());
  CHECK(dev.descriptors() > 0);
  CHECK(dev.hazard() == "");
}

TEST_CASE("device runs: a device copy that fails ends the calls that need it with an error, no hang", "[device]") {
  FakeDevice dev;
  auto ranks = ThreadRanks::Start(3, "shm", 10s, [&](CommOptions& o) { o.device_access = dev.access(); });
  REQUIRE(ranks.ok());
  const size_t count = 200003;
  std::vector<Status> got(3);
  std::vector<char*> outs(3);
  Status s = (*ranks)->Run([&](int rank, Communicator& c) -> Status {
    char* in = dev.Alloc(count * 4);
    char* out = dev.Alloc(count * 4);
    outs[static_cast<size_t>(rank)] = out;
    std::vector<int32_t> v(count, rank + 1);
    std::memcpy(in, v.data(), count * 4);
    std::memset(out, 0x7f, count * 4);
    if (rank == 0) dev.FailCopiesAfter(5);  // a few copies in, on whichever rank makes them
    got[static_cast<size_t>(rank)] = c.Allreduce(Dev(in, count), Dev(out, count), ReduceOp::kSum).Wait();
    return Status::Ok();
  });
  INFO(s.message());
  REQUIRE(s.ok());  // every rank returned, none hung
  int injected = 0, failed = 0;
  for (int r = 0; r < 3; ++r) {
    const Status& g = got[static_cast<size_t>(r)];
    INFO("rank " << r << ": " << g.ToString());
    if (g.message().find("a copy failed (injected)") != std::string::npos) ++injected;
    if (!g.ok()) {
      ++failed;
      continue;
    }
    // Which copy fails depends on the ranks' timing: one failing late in the allgather can leave
    // a rank that had received everything it needed. Its call succeeds, and then its result is
    // whole: nothing lost, nothing half-written.
    std::vector<int32_t> o(count);
    std::memcpy(o.data(), outs[static_cast<size_t>(r)], count * 4);
    CHECK(std::count(o.begin(), o.end(), 6) == static_cast<std::ptrdiff_t>(count));
  }
  CHECK(failed >= 1);
  CHECK(injected >= 1);  // the rank whose copy failed says why; the others name it or its abort
}

TEST_CASE("device runs: a call below HOOP_CUDA_IPC_MIN_BYTES stages instead of going by CUDA IPC", "[device]") {
  // 1024 int32 (4 KiB, at the bar) go by descriptors; 1023 (below it) stage through pinned host
  // memory and open none: with no CUDA here that fails, naming the staging; on a GPU it sums.
  FakeDevice dev;
  auto ranks = ThreadRanks::Start(2, "shm", 10s, [&](CommOptions& o) {
    o.device_access = dev.access();
    o.cuda_ipc_min_bytes = 4096;
  });
  REQUIRE(ranks.ok());
  for (size_t count : {size_t{1024}, size_t{1023}}) {
    const uint64_t before = dev.descriptors();
    std::vector<Status> got(2);
    std::vector<std::vector<int32_t>> results(2, std::vector<int32_t>(count));
    Status s = (*ranks)->Run([&](int rank, Communicator& c) -> Status {
      char* buf = dev.Alloc(count * 4);
      std::vector<int32_t> v(count, rank + 1);
      std::memcpy(buf, v.data(), count * 4);
      got[static_cast<size_t>(rank)] = c.Allreduce(Dev(buf, count), Dev(buf, count), ReduceOp::kSum).Wait();
      dev.Touch(buf, count * 4);
      std::memcpy(results[static_cast<size_t>(rank)].data(), buf, count * 4);
      return Status::Ok();
    });
    INFO(count << " int32: " << s.message());
    REQUIRE(s.ok());  // every rank returned, none hung
    for (int r = 0; r < 2; ++r) {
      const Status& g = got[static_cast<size_t>(r)];
      INFO("rank " << r << ": " << g.ToString());
      if (count == 1024 || g.ok()) {
        REQUIRE(g.ok());
        const auto& o = results[static_cast<size_t>(r)];
        CHECK(std::count(o.begin(), o.end(), 3) == static_cast<std::ptrdiff_t>(count));
      } else {
        CHECK(g.message().find("staging device memory") != std::string::npos);
      }
    }
    if (count == 1024)
      CHECK(dev.descriptors() > before);
    else
      CHECK(dev.descriptors() == before);
  }
  CHECK(dev.hazard() == "");
}
