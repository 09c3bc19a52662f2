// Pipelined staging on a GPU (collectives/device/pipelined_staging.h): allreduces whose ranks place
// their buffers differently in one call (device in and out, in place on the device, device input
// with host output, host input with device output, all host) give the reference's exact values,
// 2-4 ranks sharing one GPU over shm, at counts that make one chunk, a few, and many. The upload
// of the input is not waited for: the plain call orders itself after the legacy stream's work,
// as marked at the call: a call on the legacy stream made after it, whose hold the legacy stream
// then carries, does not hold it up.
#include "tests/gpu/gpu_support.h"

#include <chrono>
#include <thread>

#include "collectives/testing/reference.h"
#include "tests/support/thread_ranks.h"

using namespace hoop;
using namespace hoop::test;

namespace {

enum class Place { kDevice, kInPlace, kDeviceIn, kDeviceOut, kHost };
constexpr Place kPlaces[] = {Place::kDevice, Place::kInPlace, Place::kDeviceIn, Place::kDeviceOut, Place::kHost};

Status Check(bool ok, const std::string& what) { return ok ? Status::Ok() : Internal(what); }

// One rank's allreduce with its buffers placed by `place`; the output checked against `want`.
Status OneCall(Communicator& comm, Place place, DType d, ReduceOp op, const std::vector<char>& input,
               const std::vector<char>& want, size_t count, const std::string& what) {
  const size_t bytes = count * DTypeSize(d);
  DeviceBuf din(bytes + 1), dout(bytes + 1);
  std::vector<char> hout(bytes + 1, 0);
  Buffer in{const_cast<char*>(input.data()), count, d, MemKind::kHost};
  Buffer out{hout.data(), count, d, MemKind::kHost};
  if (place != Place::kHost && place != Place::kDeviceOut) {
    HOOP_RETURN_IF_ERROR(CopyMem(din.get(), MemKind::kCuda, input.data(), MemKind::kHost, bytes, nullptr));
    in = Buffer{din.get(), count, d, MemKind::kCuda};
  }
  if (place == Place::kDevice || place == Place::kDeviceOut) out = Buffer{dout.get(), count, d, MemKind::kCuda};
  if (place == Place::kInPlace) out = in;
  // No host synchronisation: the plain call orders itself after the legacy stream's copy.
  HOOP_RETURN_IF_ERROR(comm.Allreduce(in, out, op).Wait());
  std::vector<char> got = hout;
  if (out.kind == MemKind::kCuda) {
    HOOP_RETURN_IF_ERROR(CopyMem(got.data(), MemKind::kHost, out.data, MemKind::kCuda, bytes, nullptr));
    HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
  }
  return Check(CountMismatches(d, got.data(), want.data(), count) == 0, what + ": differs from the reference");
}

}  // namespace

TEST_CASE("gpu: allreduce with ranks placing buffers differently, staged piece by piece", "[gpu]") {
  if (!HaveGpu()) return;
  for (int n : {2, 3, 4}) {
    auto ranks = ThreadRanks::Start(n, "shm");
    REQUIRE(ranks.ok());
    Status s = (*ranks)->Run(
        [&](int rank, Communicator& comm) -> Status {
          for (DType d : {DType::kF32, DType::kBF16, DType::kI64})
            for (size_t count : {size_t{1}, size_t{1000}, size_t{100003}, size_t{3000001}}) {
              std::vector<std::vector<char>> inputs;
              std::vector<const void*> ptrs;
              for (int r = 0; r < n; ++r) {
                inputs.emplace_back(count * DTypeSize(d) + 1);
                FillInput(d, ReduceOp::kSum, inputs.back().data(), count, 31 * count + static_cast<uint64_t>(r));
              }
              for (auto& v : inputs) ptrs.push_back(v.data());
              std::vector<char> want(count * DTypeSize(d) + 1);
              ReferenceReduce(d, ReduceOp::kSum, ptrs, want.data(), count);
              // Each call, every rank places its buffers another way (rank + k).
              for (size_t k = 0; k < std::size(kPlaces); ++k) {
                const Place place = kPlaces[(static_cast<size_t>(rank) + k) % std::size(kPlaces)];
                const std::string what = std::string(DTypeName(d)) + " count " + std::to_string(count) + " rank " +
                                         std::to_string(rank) + " placement " + std::to_string(static_cast<int>(place));
                HOOP_RETURN_IF_ERROR(
                    OneCall(comm, place, d, ReduceOp::kSum, inputs[static_cast<size_t>(rank)], want, count, what));
              }
            }
          return Status::Ok();
        },
        std::chrono::seconds(240));
    INFO(n << " ranks: " << s.message());
    CHECK(s.ok());
  }
}

namespace {
void SleepOnStream(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }
}  // namespace

TEST_CASE("gpu: a plain call made before a call on the legacy stream does not wait behind that call's hold", "[gpu]") {
  if (!HaveGpu()) return;
  // The worker is kept busy by a call on a stream of its own whose input comes 300 ms late;
  // meanwhile a plain call on device memory is queued, then a call on the legacy default stream,
  // whose hold the legacy stream then carries. The plain call must start after the work before
  // it, not after that hold (which waits for the worker, which is to run the plain call first).
  auto ranks = ThreadRanks::Start(1, "shm", std::chrono::seconds(20));
  REQUIRE(ranks.ok());
  Communicator& c = (*ranks)->comm(0);
  const size_t count = 1 << 20, bytes = count * sizeof(float);
  std::vector<float> ones(count, 1.0f);
  DeviceBuf a(bytes), b(bytes), x(bytes);
  a.Upload(ones.data(), bytes);
  b.Upload(ones.data(), bytes);
  x.Upload(ones.data(), bytes);
  auto stream = CudaStreamCreate(0);
  REQUIRE(stream.ok());
  REQUIRE(CudaLaunchHostFunc(*stream, &SleepOnStream, nullptr).ok());
  CallOptions on_s, on_legacy;
  on_s.stream = *stream;
  on_legacy.stream = nullptr;
  auto dev = [&](const DeviceBuf& d) { return Buffer{d.get(), count, DType::kF32, MemKind::kCuda}; };
  Work w0 = c.Allreduce(dev(x), dev(x), ReduceOp::kSum, on_s);
  Work w1 = c.Allreduce(dev(a), dev(a), ReduceOp::kSum);
  Work w2 = c.Allreduce(dev(b), dev(b), ReduceOp::kSum, on_legacy);
  Status s1 = w1.Wait();
  INFO(s1.ToString());
  CHECK(s1.ok());
  REQUIRE(CudaStreamSync(nullptr).ok());
  REQUIRE(CudaStreamSync(*stream).ok());
  CHECK(w0.Wait().ok());
  CHECK(w2.Wait().ok());
  std::vector<char> got = a.Download(bytes);
  CHECK(std::memcmp(got.data(), ones.data(), bytes) == 0);  // one rank: the sum is the input
  CudaStreamDestroy(*stream);
}
