// Collectives on CUDA device buffers (collectives/device/device_staging.h), 1 to 4 ranks sharing one
// GPU as threads of this process over the shm back end (tests/support/thread_ranks.h): every
// collective x dtype (x op where it reduces) x count {0, 1, 7, 1000, 100003}, out of place and
// in place, must give exactly the bytes the same call gives on host buffers, which the rest of
// the suite checks against the reference. A device pointer in a call with no device is refused
// (the case that runs without a GPU).
#include "tests/gpu/gpu_support.h"

#include "collectives/kernels/device_reduce.h"
#include "collectives/testing/reference.h"
#include "tests/support/thread_ranks.h"

using namespace hoop;

namespace {

enum class Coll { kAllreduce, kBroadcast, kAllgather, kReduceScatter, kReduce, kGather, kScatter, kAlltoall };
constexpr Coll kColls[] = {Coll::kAllreduce, Coll::kBroadcast, Coll::kAllgather, Coll::kReduceScatter,
                           Coll::kReduce,    Coll::kGather,    Coll::kScatter,   Coll::kAlltoall};
const char* Name(Coll c) {
  static const char* names[] = {"allreduce", "broadcast", "allgather", "reduce_scatter",
                                "reduce",    "gather",    "scatter",   "alltoall"};
  return names[static_cast<int>(c)];
}
bool Reduces(Coll c) { return c == Coll::kAllreduce || c == Coll::kReduceScatter || c == Coll::kReduce; }

Work Call(Communicator& comm, Coll c, const Buffer& in, const Buffer& out, ReduceOp op, int root) {
  switch (c) {
    case Coll::kAllreduce: return comm.Allreduce(in, out, op);
    case Coll::kBroadcast: return comm.Broadcast(in, out, root);
    case Coll::kAllgather: return comm.Allgather(in, out);
    case Coll::kReduceScatter: return comm.ReduceScatter(in, out, op);
    case Coll::kReduce: return comm.Reduce(in, out, op, root);
    case Coll::kGather: return comm.Gather(in, out, root);
    case Coll::kScatter: return comm.Scatter(in, out, root);
    case Coll::kAlltoall: return comm.Alltoall(in, out);
  }
  return comm.Barrier();
}

// Device memory freed on scope exit.
struct Dev {
  void* p = nullptr;
  MemKind kind = MemKind::kCuda;
  ~Dev() { CudaFree(p, kind); }
};

// One call on host buffers, then on device buffers; the outputs must be the same bytes.
Status Compare(Communicator& comm, int rank, int n, Coll c, DType d, ReduceOp op, size_t count, bool in_place) {
  const size_t es = DTypeSize(d), un = static_cast<size_t>(n);
  const bool wide_in = c == Coll::kReduceScatter || c == Coll::kScatter || c == Coll::kAlltoall;
  const bool wide_out = c == Coll::kAllgather || c == Coll::kGather || c == Coll::kAlltoall;
  const size_t in_count = wide_in ? count * un : count, out_count = wide_out ? count * un : count;
  const int root = n - 1;
  const bool rooted = c == Coll::kBroadcast || c == Coll::kReduce || c == Coll::kGather || c == Coll::kScatter;
  const bool writes_out = !(rooted && (c == Coll::kReduce || c == Coll::kGather) && rank != root);
  // In place: the input is the output (allgather: this rank's block of it).
  const size_t in_at = c == Coll::kAllgather ? static_cast<size_t>(rank) * count * es : 0;
  std::vector<char> input(in_count * es + 1);
  FillInput(d, op, input.data(), in_count, 7919 * count + static_cast<uint64_t>(rank));
  std::vector<char> host_out(out_count * es + 1, 0);
  if (in_place) std::memcpy(host_out.data() + in_at, input.data(), in_count * es);
  Buffer hin{in_place ? host_out.data() + in_at : input.data(), in_count, d, MemKind::kHost};
  Buffer hout{host_out.data(), out_count, d, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(Call(comm, c, hin, hout, op, root).Wait());

  // (No Catch assertion in here: this runs on the ranks' threads.)
  Dev din, dout;
  HOOP_ASSIGN_OR_RETURN(din.p, CudaAlloc(0, in_count * es + 16));
  HOOP_ASSIGN_OR_RETURN(dout.p, CudaAlloc(0, out_count * es + 16));
  HOOP_RETURN_IF_ERROR(CudaMemset(dout.p, 0, out_count * es + 16, nullptr));
  char* dst = in_place ? static_cast<char*>(dout.p) + in_at : static_cast<char*>(din.p);
  HOOP_RETURN_IF_ERROR(CopyMem(dst, MemKind::kCuda, input.data(), MemKind::kHost, in_count * es, nullptr));
  HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
  Buffer din_b{dst, in_count, d, MemKind::kCuda};
  Buffer dout_b{dout.p, out_count, d, MemKind::kCuda};
  HOOP_RETURN_IF_ERROR(Call(comm, c, din_b, dout_b, op, root).Wait());
  if (!writes_out) return Status::Ok();
  std::vector<char> got(out_count * es);
  HOOP_RETURN_IF_ERROR(CopyMem(got.data(), MemKind::kHost, dout.p, MemKind::kCuda, out_count * es, nullptr));
  HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
  if (std::memcmp(got.data(), host_out.data(), out_count * es) != 0)
    return Internal(std::string(Name(c)) + " " + DTypeName(d) + " " + ReduceOpName(op) + " count " +
                    std::to_string(count) + (in_place ? " in place" : "") + " rank " + std::to_string(rank) +
                    ": device result differs from host result");
  return Status::Ok();
}

}  // namespace

TEST_CASE("gpu: every collective on device buffers gives the host result, 1-4 ranks on one GPU", "[gpu]") {
  if (!test::HaveGpu()) return;
  for (int n : {1, 2, 3, 4}) {
    auto ranks = test::ThreadRanks::Start(n, "shm");
    REQUIRE(ranks.ok());
    Status s = (*ranks)->Run(
        [&](int rank, Communicator& comm) -> Status {
          HOOP_RETURN_IF_ERROR(CudaSetDevice(0));
          for (Coll c : kColls) {
            for (DType d : kAllDTypes) {
              for (ReduceOp op : kAllReduceOps) {
                if (Reduces(c) ? !OpApplies(d, op) : op != ReduceOp::kSum) continue;
                for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{100003}}) {
                  HOOP_RETURN_IF_ERROR(Compare(comm, rank, n, c, d, op, count, false));
                  const bool can_in_place =
                      c == Coll::kAllreduce || c == Coll::kBroadcast || c == Coll::kAllgather || c == Coll::kAlltoall;
                  if (can_in_place) HOOP_RETURN_IF_ERROR(Compare(comm, rank, n, c, d, op, count, true));
                }
              }
            }
          }
          return Status::Ok();
        },
        std::chrono::seconds(600));
    INFO(n << " ranks: " << s.message());
    CHECK(s.ok());
  }
}

// Deterministic mode (schedules/fold.cc): device buffers are staged whole and folded on the host,
// so ranks on the device and a rank on the host get the canonical fold's bits, in place and not,
// allreduce and reduce_scatter (issue 53's device half).
TEST_CASE("gpu: deterministic reductions on device buffers give the canonical fold's bits", "[gpu][deterministic]") {
  if (!test::HaveGpu()) return;
  const int n = 3;
  auto ranks =
      test::ThreadRanks::Start(n, "shm", std::chrono::seconds(60), [](CommOptions& o) { o.deterministic = true; });
  REQUIRE(ranks.ok());
  for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64})
    for (size_t count : {size_t{1}, size_t{1000}, size_t{100003}}) {
      const size_t es = DTypeSize(d), bytes = count * es;
      std::vector<std::vector<char>> inputs(n, std::vector<char>(bytes * n));
      std::vector<const void*> ins;
      for (int r = 0; r < n; ++r) {
        FillOrderSensitive(d, inputs[static_cast<size_t>(r)].data(), count * n, 77 * count + static_cast<uint64_t>(r));
        ins.push_back(inputs[static_cast<size_t>(r)].data());
      }
      std::vector<char> want(bytes * n);
      CanonicalReduce(d, ReduceOp::kSum, ins, want.data(), count * n);
      Status s = (*ranks)->Run([&](int rank, Communicator& comm) -> Status {
        HOOP_RETURN_IF_ERROR(CudaSetDevice(0));
        const bool on_device = rank != 0;  // rank 0's buffers on the host
        Dev buf, out;
        std::vector<char> host(bytes * n), host_out(bytes);
        if (on_device) {
          HOOP_ASSIGN_OR_RETURN(buf.p, CudaAlloc(0, bytes * n + 16));
          HOOP_ASSIGN_OR_RETURN(out.p, CudaAlloc(0, bytes + 16));
        }
        char* b = on_device ? static_cast<char*>(buf.p) : host.data();
        char* o = on_device ? static_cast<char*>(out.p) : host_out.data();
        const MemKind kind = on_device ? MemKind::kCuda : MemKind::kHost;
        HOOP_RETURN_IF_ERROR(
            CopyMem(b, kind, inputs[static_cast<size_t>(rank)].data(), MemKind::kHost, bytes * n, nullptr));
        HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
        // reduce_scatter first (it reads the whole input), then an in-place allreduce of it.
        HOOP_RETURN_IF_ERROR(
            comm.ReduceScatter(Buffer{b, count * n, d, kind}, Buffer{o, count, d, kind}, ReduceOp::kSum).Wait());
        HOOP_RETURN_IF_ERROR(
            comm.Allreduce(Buffer{b, count * n, d, kind}, Buffer{b, count * n, d, kind}, ReduceOp::kSum).Wait());
        std::vector<char> got(bytes * n), got_rs(bytes);
        HOOP_RETURN_IF_ERROR(CopyMem(got.data(), MemKind::kHost, b, kind, bytes * n, nullptr));
        HOOP_RETURN_IF_ERROR(CopyMem(got_rs.data(), MemKind::kHost, o, kind, bytes, nullptr));
        HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
        if (std::memcmp(got.data(), want.data(), bytes * n) != 0)
          return Internal("allreduce: bits differ from the canonical fold");
        if (std::memcmp(got_rs.data(), want.data() + static_cast<size_t>(rank) * bytes, bytes) != 0)
          return Internal("reduce_scatter: bits differ from the canonical fold");
        return Status::Ok();
      });
      INFO(DTypeName(d) << " x " << count << ": " << s.message());
      CHECK(s.ok());
    }
}

TEST_CASE("cuda: device memory in a collective where there is no device is refused, naming the reason",
          "[gpu][nodevice]") {
  auto n = CudaDeviceCount();
  if (n.ok()) return;  // a device is here: the case above covers device memory
  auto ranks = test::ThreadRanks::Start(1, "shm");
  REQUIRE(ranks.ok());
  std::vector<float> a(8, 1.0f), b(8, 0.0f);
  Buffer in{a.data(), a.size(), DType::kF32, MemKind::kCuda};  // claims to be device memory
  Buffer out{b.data(), b.size(), DType::kF32, MemKind::kHost};
  Status s = (*ranks)->comm(0).Allreduce(in, out, ReduceOp::kSum).Wait();
  INFO(s.ToString());
  CHECK(s.code() == n.status().code());
  CHECK_THAT(s.message(), Catch::StartsWith("rank 0: allreduce: input is CUDA device memory, but: ") &&
                              Catch::Contains(n.status().message()));
  CHECK(b == std::vector<float>(8, 0.0f));  // untouched
}

TEST_CASE("gpu: a collective on a CUDA stream is ordered with the stream's work, the host never waiting", "[gpu]") {
  if (!test::HaveGpu()) return;
  for (int n : {1, 2, 4}) {
    auto ranks = test::ThreadRanks::Start(n, "shm");
    REQUIRE(ranks.ok());
    Status s = (*ranks)->Run([&](int rank, Communicator& comm) -> Status {
      HOOP_RETURN_IF_ERROR(CudaSetDevice(0));
      HOOP_ASSIGN_OR_RETURN(void* stream, CudaStreamCreate(0));
      const size_t bytes = (size_t{8} << 20) + 5;
      Dev in, out, twice;
      HOOP_ASSIGN_OR_RETURN(in.p, CudaAlloc(0, bytes));
      HOOP_ASSIGN_OR_RETURN(out.p, CudaAlloc(0, bytes));
      HOOP_ASSIGN_OR_RETURN(twice.p, CudaAlloc(0, bytes));
      // One rank reads the result back into pageable memory, as tensor.cpu() does: that copy
      // waits inside the driver, holding a lock of its, until the stream goes on (the hang the
      // first GPU run found: hoop's worker then could not copy). Ranks on threads of one process
      // read into pinned memory: one thread's pageable copy would hold that lock while another
      // thread's call, which its hold waits for, is still to come.
      std::vector<uint8_t> pageable;
      Dev pinned;
      uint8_t* got = nullptr;
      if (n == 1) {
        pageable.assign(bytes, 0);
        got = pageable.data();
      } else {
        HOOP_ASSIGN_OR_RETURN(void* p, CudaAllocPinned(bytes));
        pinned.p = p;
        pinned.kind = MemKind::kCudaPinned;
        got = static_cast<uint8_t*>(p);
      }
      const int want = 2 * n * (n + 1) / 2;  // twice the sum of 1..n
      // Every rank's memory is allocated before any stream is held: allocating while another
      // thread's call on a stream is in flight may wait for that stream (as with NCCL).
      HOOP_RETURN_IF_ERROR(comm.Barrier().Wait());
      for (int round = 0; round < 3; ++round) {
        // Queued on the stream, in order, with no wait in between: the input written, the
        // allreduce, a kernel reading its output, the copy back. One wait at the end.
        HOOP_RETURN_IF_ERROR(CudaMemset(in.p, rank + 1, bytes, stream));
        CallOptions o;
        o.stream = stream;
        Work w = comm.Allreduce(Buffer{in.p, bytes, DType::kU8, MemKind::kCuda},
                                Buffer{out.p, bytes, DType::kU8, MemKind::kCuda}, ReduceOp::kSum, o);
        if (w.Refused()) return w.Wait();
        HOOP_RETURN_IF_ERROR(LookupDeviceReduce(DType::kU8, ReduceOp::kSum)(twice.p, out.p, out.p, bytes, 1, stream));
        HOOP_RETURN_IF_ERROR(
            CopyMem(got, n == 1 ? MemKind::kHost : MemKind::kCudaPinned, twice.p, MemKind::kCuda, bytes, stream));
        HOOP_RETURN_IF_ERROR(CudaStreamSync(stream));
        HOOP_RETURN_IF_ERROR(w.Wait());  // done by now, and it succeeded
        for (size_t i = 0; i < bytes; ++i)
          if (got[i] != want)
            return Internal("rank " + std::to_string(rank) + " round " + std::to_string(round) + ": byte " +
                            std::to_string(i) + " is " + std::to_string(got[i]) + ", not " + std::to_string(want));
      }
      CudaStreamDestroy(stream);
      return Status::Ok();
    });
    INFO(n << " ranks: " << s.message());
    CHECK(s.ok());
  }
}

TEST_CASE("cuda: a call on a stream where there is no device is refused at once, naming the reason",
          "[gpu][nodevice]") {
  auto n = CudaDeviceCount();
  if (n.ok()) return;
  auto ranks = test::ThreadRanks::Start(1, "shm");
  REQUIRE(ranks.ok());
  std::vector<float> a(8, 1.0f), b(8, 0.0f);
  CallOptions o;
  o.stream = nullptr;  // the legacy default stream
  Work w = (*ranks)->comm(0).Allreduce(Buffer{a.data(), 8, DType::kF32, MemKind::kHost},
                                       Buffer{b.data(), 8, DType::kF32, MemKind::kHost}, ReduceOp::kSum, o);
  CHECK(w.Refused());
  Status s = w.Wait();
  CHECK_THAT(s.message(), Catch::StartsWith("rank 0: allreduce: a CUDA stream was given, but: ") &&
                              Catch::Contains(n.status().message()));
  // So are a send and a receive on a stream.
  Work send = (*ranks)->comm(0).Send(Buffer{a.data(), 8, DType::kF32, MemKind::kHost}, 0, 1, o);
  CHECK(send.Refused());
  CHECK_THAT(send.Wait().message(), Catch::StartsWith("rank 0: send: a CUDA stream was given, but: "));
  Work recv = (*ranks)->comm(0).Recv(Buffer{b.data(), 8, DType::kF32, MemKind::kHost}, 0, 1, nullptr, o);
  CHECK(recv.Refused());
  CHECK_THAT(recv.Wait().message(), Catch::StartsWith("rank 0: receive: a CUDA stream was given, but: "));
  // The communicator is not poisoned by a refusal: a plain call still runs.
  REQUIRE((*ranks)
              ->comm(0)
              .Allreduce(Buffer{a.data(), 8, DType::kF32, MemKind::kHost},
                         Buffer{b.data(), 8, DType::kF32, MemKind::kHost}, ReduceOp::kSum)
              .Wait()
              .ok());
  CHECK(b == std::vector<float>(8, 1.0f));
}
