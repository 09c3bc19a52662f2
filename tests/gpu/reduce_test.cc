// The GPU reduction kernels (collectives/kernels/device_reduce.h) against the host kernels, bit
// for bit: every dtype x op, counts 0, 1, 7, 1000 and a large odd count, the average's divisor,
// in place and out of place, aligned and misaligned pointers. Inputs are random bits, so
// infinities, subnormals and NaNs all occur; a NaN matches any NaN (their payloads after
// arithmetic are the hardware's), every other value matches exactly.
#include "tests/gpu/gpu_support.h"

#include <algorithm>
#include <array>

#include "collectives/kernels/device_reduce.h"
#include "collectives/kernels/reduce.h"

using namespace hoop;

namespace {

bool IsNaN(DType t, const char* p) { return IsFloat(t) && std::isnan(LoadAsDouble(t, p, 0)); }

// The index of the first element that differs, or -1.
long FirstMismatch(DType t, const std::vector<char>& want, const std::vector<char>& got, size_t n) {
  const size_t es = DTypeSize(t);
  for (size_t i = 0; i < n; ++i) {
    const char* w = want.data() + i * es;
    const char* g = got.data() + i * es;
    if (std::memcmp(w, g, es) == 0) continue;
    if (IsNaN(t, w) && IsNaN(t, g)) continue;
    return static_cast<long>(i);
  }
  return -1;
}

std::vector<char> Elements(DType t, size_t n, uint64_t seed) {
  std::vector<char> v = test::RandomBytes(n * DTypeSize(t), seed);
  if (t == DType::kBool)
    for (char& c : v) c &= 1;  // bool elements are 0 or 1
  return v;
}

}  // namespace

TEST_CASE("gpu: the reduction kernels give the host kernels' bits", "[gpu]") {
  if (!test::HaveGpu()) return;
  const size_t kLarge = (size_t{1} << 20) + 3;
  for (DType t : kAllDTypes) {
    const size_t es = DTypeSize(t);
    for (ReduceOp op : kAllReduceOps) {
      DeviceReduceFn dev = LookupDeviceReduce(t, op);
      ReduceFn host = LookupReduce(t, op, MemKind::kHost);
      if (!OpApplies(t, op)) {
        CHECK(dev == nullptr);
        continue;
      }
      REQUIRE(dev != nullptr);
      REQUIRE(host != nullptr);
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, kLarge}) {
        for (int divisor : op == ReduceOp::kAvg ? std::vector<int>{1, 3} : std::vector<int>{1}) {
          // Offsets in elements of a, b and dst within their buffers: aligned, equally
          // misaligned (a head and a tail done one by one), and unequally (all one by one).
          for (auto [oa, ob, od] : {std::array<size_t, 3>{0, 0, 0}, {1, 1, 1}, {1, 2, 3}}) {
            INFO(DTypeName(t) << " " << ReduceOpName(op) << " n=" << n << " divisor=" << divisor << " offsets " << oa
                              << "," << ob << "," << od);
            const uint64_t seed = n * 131 + static_cast<uint64_t>(op) * 17 + static_cast<uint64_t>(t);
            std::vector<char> a = Elements(t, n, seed), b = Elements(t, n, seed + 1);
            std::vector<char> want(n * es);
            host(want.data(), a.data(), b.data(), n, divisor);
            const size_t room = (n + 4) * es;
            test::DeviceBuf da(room), db(room), dd(room);
            da.Upload(a.data(), n * es, oa * es);
            db.Upload(b.data(), n * es, ob * es);
            REQUIRE(dev(dd.get() + od * es, da.get() + oa * es, db.get() + ob * es, n, divisor, nullptr).ok());
            CHECK(FirstMismatch(t, want, dd.Download(n * es, od * es), n) == -1);
            // In place: the result over the first input.
            REQUIRE(dev(da.get() + oa * es, da.get() + oa * es, db.get() + ob * es, n, divisor, nullptr).ok());
            CHECK(FirstMismatch(t, want, da.Download(n * es, oa * es), n) == -1);
          }
        }
      }
    }
  }
}

TEST_CASE("gpu: a kernel is queued on the caller's stream and ordered with its copies", "[gpu]") {
  if (!test::HaveGpu()) return;
  auto stream = CudaStreamCreate(0);
  REQUIRE(stream.ok());
  const size_t n = 1 << 22;
  std::vector<float> a(n, 1.5f), b(n, 2.0f), got(n, 0.0f);
  test::DeviceBuf da(n * 4), db(n * 4);
  // Upload, reduce and download all queued on one stream, then one wait: the kernel must start
  // after the uploads and finish before the download.
  REQUIRE(CopyMem(da.get(), MemKind::kCuda, a.data(), MemKind::kHost, n * 4, *stream).ok());
  REQUIRE(CopyMem(db.get(), MemKind::kCuda, b.data(), MemKind::kHost, n * 4, *stream).ok());
  REQUIRE(LookupDeviceReduce(DType::kF32, ReduceOp::kSum)(da.get(), da.get(), db.get(), n, 1, *stream).ok());
  REQUIRE(CopyMem(got.data(), MemKind::kHost, da.get(), MemKind::kCuda, n * 4, *stream).ok());
  REQUIRE(CudaStreamSync(*stream).ok());
  CudaStreamDestroy(*stream);
  CHECK(std::all_of(got.begin(), got.end(), [](float v) { return v == 3.5f; }));
}
