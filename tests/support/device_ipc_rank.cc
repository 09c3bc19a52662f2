// hoop-test-rank device_ipc: device buffers between processes on one host, which is what CUDA IPC
// is for (tests/gpu/ipc_test.cc runs it under hooprun; ranks as threads of one process use the
// pointers as they are and never open a handle). Allreduces of four dtype x op pairs at counts
// 1, 7, 1000 and 262147, in and out of place, with every rank's buffers on the device and with
// rank 0's on the host (the others then send it descriptors and receive its bytes); broadcast,
// allgather, reduce-scatter, reduce, gather, scatter and alltoall; sends and receives; two
// communicators created separately over the same buffers. Every case allocates its buffers anew and frees them after,
// so
// addresses are reused by new allocations, which a mapping cache keyed on the address alone
// would get wrong. Results are compared with the reference, bit for bit.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/testing/reference.h"
#include "common/device.h"

namespace hoop {
namespace {

// A device copy of `bytes` (at least one byte), freed on scope exit.
struct DevBuf {
  void* p = nullptr;
  Status status;
  explicit DevBuf(size_t bytes) {
    auto a = CudaAlloc(0, bytes == 0 ? 1 : bytes);
    status = a.status();
    if (a.ok()) p = *a;
  }
  ~DevBuf() { CudaFree(p, MemKind::kCuda); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

Status Up(void* dev, const void* host, size_t bytes) {
  HOOP_RETURN_IF_ERROR(CopyMem(dev, MemKind::kCuda, host, MemKind::kHost, bytes, nullptr));
  return CudaStreamSync(nullptr);
}
Status Down(void* host, const void* dev, size_t bytes) {
  HOOP_RETURN_IF_ERROR(CopyMem(host, MemKind::kHost, dev, MemKind::kCuda, bytes, nullptr));
  return CudaStreamSync(nullptr);
}

Status OneAllreduce(Communicator& c, DType t, ReduceOp op, size_t count, bool in_place, bool host_zero) {
  const size_t es = DTypeSize(t), bytes = count * es;
  const int n = c.size(), rank = c.rank();
  std::vector<std::vector<char>> inputs(static_cast<size_t>(n), std::vector<char>(bytes));
  std::vector<const void*> ins;
  for (int r = 0; r < n; ++r) {
    FillInput(t, op, inputs[static_cast<size_t>(r)].data(), count, 77 * static_cast<uint64_t>(r) + count);
    ins.push_back(inputs[static_cast<size_t>(r)].data());
  }
  std::vector<char> want(bytes), got(bytes);
  ReferenceReduce(t, op, ins, want.data(), count);
  const std::vector<char>& mine = inputs[static_cast<size_t>(rank)];
  if (host_zero && rank == 0) {
    std::vector<char> in = mine, out(bytes);
    char* o = in_place ? in.data() : out.data();
    HOOP_RETURN_IF_ERROR(c.Allreduce({in.data(), count, t, MemKind::kHost}, {o, count, t, MemKind::kHost}, op).Wait());
    std::memcpy(got.data(), o, bytes);
  } else {
    DevBuf in(bytes), out(in_place ? 0 : bytes);
    HOOP_RETURN_IF_ERROR(in.status);
    HOOP_RETURN_IF_ERROR(out.status);
    HOOP_RETURN_IF_ERROR(Up(in.p, mine.data(), bytes));
    void* o = in_place ? in.p : out.p;
    HOOP_RETURN_IF_ERROR(c.Allreduce({in.p, count, t, MemKind::kCuda}, {o, count, t, MemKind::kCuda}, op).Wait());
    HOOP_RETURN_IF_ERROR(Down(got.data(), o, bytes));
  }
  const size_t bad = CountMismatches(t, got.data(), want.data(), count);
  if (bad == 0) return Status::Ok();
  return Internal(std::to_string(bad) + " elements differ");
}

Status BlockCollectives(Communicator& c, size_t count) {
  const int n = c.size(), rank = c.rank();
  const size_t es = sizeof(int32_t);
  std::vector<int32_t> h(count * static_cast<size_t>(n));
  DevBuf in(count * es), out(count * es), all(count * es * static_cast<size_t>(n));
  HOOP_RETURN_IF_ERROR(in.status);
  HOOP_RETURN_IF_ERROR(out.status);
  HOOP_RETURN_IF_ERROR(all.status);
  for (size_t i = 0; i < count; ++i) h[i] = rank == n - 1 ? static_cast<int32_t>(5 * i + 3) : -1;
  HOOP_RETURN_IF_ERROR(Up(in.p, h.data(), count * es));
  HOOP_RETURN_IF_ERROR(
      c.Broadcast({in.p, count, DType::kI32, MemKind::kCuda}, {out.p, count, DType::kI32, MemKind::kCuda}, n - 1)
          .Wait());
  HOOP_RETURN_IF_ERROR(Down(h.data(), out.p, count * es));
  for (size_t i = 0; i < count; ++i)
    if (h[i] != static_cast<int32_t>(5 * i + 3)) return Internal("broadcast: element " + std::to_string(i));
  for (size_t i = 0; i < count; ++i) h[i] = static_cast<int32_t>(rank * 1000003 + static_cast<int>(i));
  HOOP_RETURN_IF_ERROR(Up(in.p, h.data(), count * es));
  HOOP_RETURN_IF_ERROR(c.Allgather({in.p, count, DType::kI32, MemKind::kCuda},
                                   {all.p, count * static_cast<size_t>(n), DType::kI32, MemKind::kCuda})
                           .Wait());
  HOOP_RETURN_IF_ERROR(Down(h.data(), all.p, h.size() * es));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      if (h[static_cast<size_t>(r) * count + i] != static_cast<int32_t>(r * 1000003 + static_cast<int>(i)))
        return Internal("allgather: rank " + std::to_string(r) + "'s element " + std::to_string(i));
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<int32_t>(i) + rank;
  HOOP_RETURN_IF_ERROR(Up(all.p, h.data(), h.size() * es));
  HOOP_RETURN_IF_ERROR(c.ReduceScatter({all.p, h.size(), DType::kI32, MemKind::kCuda},
                                       {out.p, count, DType::kI32, MemKind::kCuda}, ReduceOp::kSum)
                           .Wait());
  HOOP_RETURN_IF_ERROR(Down(h.data(), out.p, count * es));
  for (size_t i = 0; i < count; ++i) {
    const auto g = static_cast<int32_t>(static_cast<size_t>(rank) * count + i);
    if (h[i] != n * g + n * (n - 1) / 2) return Internal("reduce-scatter: element " + std::to_string(i));
  }
  return Status::Ok();
}

// Reduce, gather, scatter and alltoall: rank r's values made from r and the index.
Status RootedCollectives(Communicator& c, size_t count) {
  const int n = c.size(), rank = c.rank();
  const size_t es = sizeof(int32_t), all = count * static_cast<size_t>(n);
  std::vector<int32_t> h(all);
  DevBuf in(all * es), out(all * es);
  HOOP_RETURN_IF_ERROR(in.status);
  HOOP_RETURN_IF_ERROR(out.status);
  auto dev = [](void* p, size_t k) { return Buffer{p, k, DType::kI32, MemKind::kCuda}; };
  for (size_t i = 0; i < count; ++i) h[i] = static_cast<int32_t>(rank + static_cast<int>(i));
  HOOP_RETURN_IF_ERROR(Up(in.p, h.data(), count * es));
  HOOP_RETURN_IF_ERROR(c.Reduce(dev(in.p, count), dev(out.p, count), ReduceOp::kSum, 1).Wait());
  if (rank == 1) {
    HOOP_RETURN_IF_ERROR(Down(h.data(), out.p, count * es));
    for (size_t i = 0; i < count; ++i)
      if (h[i] != static_cast<int32_t>(n * static_cast<int>(i) + n * (n - 1) / 2))
        return Internal("reduce: element " + std::to_string(i));
  }
  for (size_t i = 0; i < count; ++i) h[i] = static_cast<int32_t>(rank * 1000003 + static_cast<int>(i));
  HOOP_RETURN_IF_ERROR(Up(in.p, h.data(), count * es));
  HOOP_RETURN_IF_ERROR(c.Gather(dev(in.p, count), dev(out.p, all), n - 1).Wait());
  if (rank == n - 1) {
    HOOP_RETURN_IF_ERROR(Down(h.data(), out.p, all * es));
    for (size_t i = 0; i < all; ++i)
      if (h[i] != static_cast<int32_t>((i / count) * 1000003 + i % count))
        return Internal("gather: element " + std::to_string(i));
  }
  for (size_t i = 0; i < all; ++i) h[i] = rank == 0 ? static_cast<int32_t>(7 * i + 1) : -1;
  HOOP_RETURN_IF_ERROR(Up(in.p, h.data(), all * es));
  HOOP_RETURN_IF_ERROR(c.Scatter(dev(in.p, all), dev(out.p, count), 0).Wait());
  HOOP_RETURN_IF_ERROR(Down(h.data(), out.p, count * es));
  for (size_t i = 0; i < count; ++i)
    if (h[i] != static_cast<int32_t>(7 * (static_cast<size_t>(rank) * count + i) + 1))
      return Internal("scatter: element " + std::to_string(i));
  for (size_t i = 0; i < all; ++i) h[i] = static_cast<int32_t>(rank * 1000 + (i / count) * 100000 + i % count);
  HOOP_RETURN_IF_ERROR(Up(in.p, h.data(), all * es));
  HOOP_RETURN_IF_ERROR(c.Alltoall(dev(in.p, all), dev(out.p, all)).Wait());
  HOOP_RETURN_IF_ERROR(Down(h.data(), out.p, all * es));
  for (size_t i = 0; i < all; ++i)
    if (h[i] != static_cast<int32_t>((i / count) * 1000 + rank * 100000 + i % count))
      return Internal("alltoall: element " + std::to_string(i));
  return Status::Ok();
}

// Sends and receives: every rank sends `count` values to the next and receives from the one
// before, device to device, then rank 0 receives into host memory.
Status Exchange(Communicator& c, size_t count) {
  const int n = c.size(), rank = c.rank();
  const size_t bytes = count * sizeof(int32_t);
  std::vector<int32_t> h(count);
  DevBuf out(bytes), in(bytes);
  HOOP_RETURN_IF_ERROR(out.status);
  HOOP_RETURN_IF_ERROR(in.status);
  for (size_t i = 0; i < count; ++i) h[i] = static_cast<int32_t>(rank * 1000003 + static_cast<int>(i));
  HOOP_RETURN_IF_ERROR(Up(out.p, h.data(), bytes));
  const int to = (rank + 1) % n, from = (rank + n - 1) % n;
  Work r = c.Recv({in.p, count, DType::kI32, MemKind::kCuda}, from, 21);
  HOOP_RETURN_IF_ERROR(c.Send({out.p, count, DType::kI32, MemKind::kCuda}, to, 21).Wait());
  HOOP_RETURN_IF_ERROR(r.Wait());
  HOOP_RETURN_IF_ERROR(Down(h.data(), in.p, bytes));
  for (size_t i = 0; i < count; ++i)
    if (h[i] != static_cast<int32_t>(from * 1000003 + static_cast<int>(i)))
      return Internal("send/recv: element " + std::to_string(i));
  if (rank == 1) HOOP_RETURN_IF_ERROR(c.Send({out.p, count, DType::kI32, MemKind::kCuda}, 0, 22).Wait());
  if (rank == 0) {
    std::vector<int32_t> host(count);
    HOOP_RETURN_IF_ERROR(c.Recv({host.data(), count, DType::kI32, MemKind::kHost}, 1, 22).Wait());
    for (size_t i = 0; i < count; ++i)
      if (host[i] != static_cast<int32_t>(1000003 + static_cast<int>(i)))
        return Internal("send to host: element " + std::to_string(i));
  }
  return Status::Ok();
}

// Two communicators created separately over the same ranks, as two PyTorch process groups are,
// allreduce the same device buffers by turns: both map the peers' buffers, and the driver maps a
// block once per process, so the mappings are the process's (common/ipc_mappings.h). Each round
// allocates anew too: the second communicator then maps what the first already has.
Status TwoCommunicators(Communicator& c) {
  CommOptions o = c.options();
  o.name += "/second";
  auto second = Communicator::Create(c.store(), o);
  HOOP_RETURN_IF_ERROR(second.status().WithContext("creating a second communicator"));
  const int n = c.size(), rank = c.rank();
  const size_t count = 4097, es = sizeof(int32_t);
  std::vector<int32_t> h(count);
  for (int round = 0; round < 3; ++round) {
    DevBuf in(count * es), out(count * es);
    HOOP_RETURN_IF_ERROR(in.status);
    HOOP_RETURN_IF_ERROR(out.status);
    for (Communicator* k : {&c, second->get(), &c}) {
      for (size_t i = 0; i < count; ++i) h[i] = static_cast<int32_t>(rank * 7 + static_cast<int>(i) + round);
      HOOP_RETURN_IF_ERROR(Up(in.p, h.data(), count * es));
      HOOP_RETURN_IF_ERROR(k->Allreduce({in.p, count, DType::kI32, MemKind::kCuda},
                                        {out.p, count, DType::kI32, MemKind::kCuda}, ReduceOp::kSum)
                               .Wait()
                               .WithContext(k == &c ? "the first communicator" : "the second"));
      HOOP_RETURN_IF_ERROR(Down(h.data(), out.p, count * es));
      for (size_t i = 0; i < count; ++i)
        if (h[i] != static_cast<int32_t>(7 * n * (n - 1) / 2 + n * (static_cast<int>(i) + round)))
          return Internal("two communicators: round " + std::to_string(round) + ", element " + std::to_string(i));
    }
  }
  return Status::Ok();
}

}  // namespace

int RunDeviceIpc(Communicator& c) {
  struct Pair {
    DType t;
    ReduceOp op;
  };
  int cases = 0;
  for (bool host_zero : {false, true})
    for (Pair p : {Pair{DType::kF32, ReduceOp::kSum}, Pair{DType::kBF16, ReduceOp::kSum},
                   Pair{DType::kI64, ReduceOp::kMax}, Pair{DType::kF64, ReduceOp::kAvg}})
      for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{262147}})
        for (bool in_place : {false, true}) {
          Status s = OneAllreduce(c, p.t, p.op, count, in_place, host_zero);
          if (!s.ok()) {
            std::printf("rank %d: device ipc: allreduce %s %s x %zu%s%s: %s\n", c.rank(), DTypeName(p.t),
                        ReduceOpName(p.op), count, in_place ? " in place" : "",
                        host_zero ? " (rank 0 on the host)" : "", s.ToString().c_str());
            return 1;
          }
          ++cases;
        }
  for (size_t count : {size_t{1}, size_t{4097}, size_t{300001}}) {
    Status s = BlockCollectives(c, count);
    if (s.ok()) s = RootedCollectives(c, count);
    if (s.ok()) s = Exchange(c, count);
    if (!s.ok()) {
      std::printf("rank %d: device ipc: x %zu: %s\n", c.rank(), count, s.ToString().c_str());
      return 1;
    }
    cases += 8;
  }
  if (Status s = TwoCommunicators(c); !s.ok()) {
    std::printf("rank %d: device ipc: %s\n", c.rank(), s.ToString().c_str());
    return 1;
  }
  ++cases;
  std::printf("rank %d: device ipc: %d cases ok\n", c.rank(), cases);
  return 0;
}

}  // namespace hoop
