// Pipelined staging on a GPU (collectives/pipelined_staging.h): allreduces whose ranks place
// their buffers differently in one call (device in and out, in place on the device, device input
// with host output, host input with device output, all host) give the reference's exact values,
// 2-4 ranks sharing one GPU over shm, at counts that make one chunk, a few, and many. The upload
// of the input is not waited for: the plain call orders itself after the legacy stream's work.
#include "tests/gpu/gpu_support.h"

#include "collectives/reference.h"
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
    Status s = (*ranks)->Run([&](int rank, Communicator& comm) -> Status {
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
            HOOP_RETURN_IF_ERROR(OneCall(comm, place, d, ReduceOp::kSum, inputs[static_cast<size_t>(rank)], want, count, what));
          }
        }
      return Status::Ok();
    }, std::chrono::seconds(240));
    INFO(n << " ranks: " << s.message());
    CHECK(s.ok());
  }
}
