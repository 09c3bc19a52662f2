// The device probe and memory operations (common/device.h). The first case runs everywhere: on a
// machine without a driver (or a build without CUDA) every question gets the same clear answer,
// at once, and host memory still works; the others need a device.
#include "tests/gpu/gpu_support.h"

#include <algorithm>
#include <numeric>

using namespace hoop;

TEST_CASE("cuda: without a device, every question says why, and host memory still works", "[gpu][nodevice]") {
  auto n = CudaDeviceCount();
  if (n.ok()) {
    CHECK(*n > 0);
    return;  // a device is here: the cases below cover it
  }
  const std::string why = n.status().message();
  INFO(why);
  if (BuiltWithCuda()) {
    // The runtime's own words and code, from the call that asked.
    CHECK(n.status().code() == Code::kUnavailable);
    CHECK_THAT(why, Catch::StartsWith("cudaGetDeviceCount: ") && Catch::Contains("(error "));
  } else {
    CHECK(n.status().code() == Code::kUnimplemented);
    CHECK_THAT(why, Catch::Contains("built without CUDA"));
  }
  // The same reason from everything that needs a device.
  CHECK(CudaAlloc(0, 64).status().message().find(BuiltWithCuda() ? why : "built without CUDA") != std::string::npos);
  CHECK_FALSE(CudaStreamCreate(0).ok());
  CHECK_FALSE(CudaDevices().ok());
  // Host memory: a plain host pointer, copied host to host.
  std::vector<int> src(100), dst(100, 0);
  std::iota(src.begin(), src.end(), 0);
  MemInfo info = QueryMemory(src.data());
  CHECK(info.kind == MemKind::kHost);
  CHECK(info.device == -1);
  REQUIRE(CopyMem(dst.data(), MemKind::kHost, src.data(), MemKind::kHost, 400, nullptr).ok());
  CHECK(dst == src);
  // Device memory named where there is none: refused, not touched.
  CHECK_FALSE(CopyMem(dst.data(), MemKind::kCuda, src.data(), MemKind::kHost, 400, nullptr).ok());
}

TEST_CASE("gpu: pointers are told apart: device (with its ordinal), pinned, plain host", "[gpu]") {
  if (!test::HaveGpu()) return;
  test::DeviceBuf d(4096);
  MemInfo di = QueryMemory(d.get() + 100);
  CHECK(di.kind == MemKind::kCuda);
  CHECK(di.device == 0);
  auto pinned = CudaAllocPinned(4096);
  REQUIRE(pinned.ok());
  CHECK(QueryMemory(*pinned).kind == MemKind::kCudaPinned);
  CudaFree(*pinned, MemKind::kCudaPinned);
  std::vector<char> host(4096);
  CHECK(QueryMemory(host.data()).kind == MemKind::kHost);
  CHECK(QueryMemory(nullptr).kind == MemKind::kHost);
  auto devices = CudaDevices();
  REQUIRE(devices.ok());
  REQUIRE(!devices->empty());
  CHECK((*devices)[0].pci_bus_id.size() >= 12);  // "0000:18:00.0"
  CHECK((*devices)[0].memory_bytes > 0);
  auto self = CudaPeerAccess(0, 0);
  REQUIRE(self.ok());
  CHECK(*self);
}

TEST_CASE("gpu: copies between every pair of kinds, queued on a stream", "[gpu]") {
  if (!test::HaveGpu()) return;
  auto stream = CudaStreamCreate(0);
  REQUIRE(stream.ok());
  const size_t n = (1 << 20) + 7;
  std::vector<char> src = test::RandomBytes(n, 7), back(n, 0);
  auto pinned = CudaAllocPinned(n);
  REQUIRE(pinned.ok());
  test::DeviceBuf d1(n), d2(n);
  // host -> device -> device -> pinned -> host, all on one stream, one wait at the end.
  REQUIRE(CopyMem(d1.get(), MemKind::kCuda, src.data(), MemKind::kHost, n, *stream).ok());
  REQUIRE(CopyMem(d2.get(), MemKind::kCuda, d1.get(), MemKind::kCuda, n, *stream).ok());
  REQUIRE(CopyMem(*pinned, MemKind::kCudaPinned, d2.get(), MemKind::kCuda, n, *stream).ok());
  REQUIRE(CudaStreamSync(*stream).ok());
  REQUIRE(CopyMem(back.data(), MemKind::kHost, *pinned, MemKind::kCudaPinned, n, *stream).ok());
  REQUIRE(CudaStreamSync(*stream).ok());
  CHECK(back == src);
  CudaFree(*pinned, MemKind::kCudaPinned);
  CudaStreamDestroy(*stream);
}
