// What the GPU tests share: the skip (a test case without a device returns at once, having
// said so in one line), device buffers that free themselves, and random bytes.
#pragma once

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/device.h"

namespace hoop::test {

// True when a CUDA device is here. Otherwise prints "SKIPPED: <case>: <why>" and gives false:
// the caller returns.
inline bool HaveGpu() {
  auto n = CudaDeviceCount();
  if (n.ok()) return true;
  std::printf("SKIPPED: %s: no CUDA device: %s\n", Catch::getResultCapture().getCurrentTestName().c_str(),
              n.status().message().c_str());
  std::fflush(stdout);
  return false;
}

// Device memory on device 0, freed on scope exit.
class DeviceBuf {
 public:
  explicit DeviceBuf(size_t bytes, int device = 0) {
    auto p = CudaAlloc(device, bytes);
    REQUIRE(p.ok());
    p_ = *p;
  }
  ~DeviceBuf() { CudaFree(p_, MemKind::kCuda); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
  char* get() const { return static_cast<char*>(p_); }
  void Upload(const void* src, size_t bytes, size_t at = 0) const {
    REQUIRE(CopyMem(get() + at, MemKind::kCuda, src, MemKind::kHost, bytes, nullptr).ok());
    REQUIRE(CudaStreamSync(nullptr).ok());
  }
  std::vector<char> Download(size_t bytes, size_t at = 0) const {
    std::vector<char> out(bytes);
    REQUIRE(CopyMem(out.data(), MemKind::kHost, get() + at, MemKind::kCuda, bytes, nullptr).ok());
    REQUIRE(CudaStreamSync(nullptr).ok());
    return out;
  }

 private:
  void* p_ = nullptr;
};

inline std::vector<char> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<char> v(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = rng();
    std::memcpy(v.data() + i, &r, std::min<size_t>(8, n - i));
  }
  return v;
}

}  // namespace hoop::test
