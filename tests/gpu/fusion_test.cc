// The tensor fusion runtime with CUDA device tensors (tensorfusion/execute.cc: staged through the
// host fusion buffer), ranks as threads sharing one GPU: allreduces of device tensors, fused with
// each other and with a host tensor, with and without pre- and postscale, a broadcast and an
// allgather of device tensors; and the refusal where there is no device (runs without a GPU).
#include "tests/gpu/gpu_support.h"

#include "tensorfusion/runtime.h"
#include "tests/support/thread_ranks.h"

using namespace hoop;

namespace {

struct Dev {
  void* p = nullptr;
  ~Dev() { CudaFree(p, MemKind::kCuda); }
};

StatusOr<std::vector<float>> Down(const void* d, size_t n) {
  std::vector<float> v(n);
  HOOP_RETURN_IF_ERROR(CopyMem(v.data(), MemKind::kHost, d, MemKind::kCuda, n * 4, nullptr));
  HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
  return v;
}

}  // namespace

TEST_CASE("gpu: the fusion runtime reduces, broadcasts and gathers device tensors", "[gpu][fusion]") {
  if (!test::HaveGpu()) return;
  const int n = 3;
  auto ranks = test::ThreadRanks::Start(n, "shm");
  REQUIRE(ranks.ok());
  Status s = (*ranks)->Run([&](int rank, Communicator& c) -> Status {
    HOOP_RETURN_IF_ERROR(CudaSetDevice(0));
    HOOP_ASSIGN_OR_RETURN(auto rt, fusion::Runtime::Start(c, fusion::FusionOptions{}));
    const size_t counts[] = {1, 7, 1000, 100003};
    std::vector<Dev> dev(4), gathered(1), bcast(1);
    std::vector<fusion::Handle> handles;
    for (size_t k = 0; k < 4; ++k) {
      std::vector<float> v(counts[k], static_cast<float>(rank + 1));
      HOOP_ASSIGN_OR_RETURN(dev[k].p, CudaAlloc(0, counts[k] * 4));
      HOOP_RETURN_IF_ERROR(CopyMem(dev[k].p, MemKind::kCuda, v.data(), MemKind::kHost, counts[k] * 4, nullptr));
    }
    HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
    std::vector<float> host(50, static_cast<float>(rank + 1));
    fusion::TensorOptions scaled;
    scaled.prescale = 2;
    scaled.postscale = 0.5;
    for (size_t k = 0; k < 4; ++k) {
      Buffer b{dev[k].p, counts[k], DType::kF32, MemKind::kCuda};
      handles.push_back(
          rt->Allreduce("t" + std::to_string(k), b, b, ReduceOp::kSum, k % 2 ? scaled : fusion::TensorOptions{}));
    }
    Buffer hb{host.data(), host.size(), DType::kF32, MemKind::kHost};
    handles.push_back(rt->Allreduce("host", hb, hb, ReduceOp::kSum));
    // Broadcast from rank 1 and allgather, both on device tensors.
    std::vector<float> mine(5, static_cast<float>(10 * (rank + 1)));
    HOOP_ASSIGN_OR_RETURN(bcast[0].p, CudaAlloc(0, 5 * 4));
    HOOP_RETURN_IF_ERROR(CopyMem(bcast[0].p, MemKind::kCuda, mine.data(), MemKind::kHost, 20, nullptr));
    HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
    Buffer bb{bcast[0].p, 5, DType::kF32, MemKind::kCuda};
    handles.push_back(rt->Broadcast("b", bb, bb, 1));
    Dev gin;
    HOOP_ASSIGN_OR_RETURN(gin.p, CudaAlloc(0, 2 * 4));
    HOOP_RETURN_IF_ERROR(CopyMem(gin.p, MemKind::kCuda, mine.data(), MemKind::kHost, 8, nullptr));
    HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
    HOOP_ASSIGN_OR_RETURN(gathered[0].p, CudaAlloc(0, 2 * n * 4));
    handles.push_back(rt->Allgather("g", Buffer{gin.p, 2, DType::kF32, MemKind::kCuda},
                                    Buffer{gathered[0].p, 2 * static_cast<size_t>(n), DType::kF32, MemKind::kCuda}));
    for (auto& h : handles) HOOP_RETURN_IF_ERROR(h.Wait());
    const float sum = static_cast<float>(n * (n + 1) / 2);
    for (size_t k = 0; k < 4; ++k) {
      HOOP_ASSIGN_OR_RETURN(auto got, Down(dev[k].p, counts[k]));
      for (float x : got)  // scaled: (2 * sum) * 0.5, exact in f32
        if (x != sum) return Internal("tensor t" + std::to_string(k) + ": " + std::to_string(x));
    }
    for (float x : host)
      if (x != sum) return Internal("host tensor: " + std::to_string(x));
    HOOP_ASSIGN_OR_RETURN(auto b, Down(bcast[0].p, 5));
    for (float x : b)
      if (x != 20.0f) return Internal("broadcast: " + std::to_string(x));
    HOOP_ASSIGN_OR_RETURN(auto g, Down(gathered[0].p, 2 * static_cast<size_t>(n)));
    for (int r = 0; r < n; ++r)
      if (g[2 * static_cast<size_t>(r)] != 10.0f * (r + 1)) return Internal("allgather block " + std::to_string(r));
    return rt->Shutdown();
  });
  INFO(s.message());
  CHECK(s.ok());
}

TEST_CASE("cuda: a device tensor where there is no device is refused, naming the reason", "[gpu][nodevice][fusion]") {
  auto n = CudaDeviceCount();
  if (n.ok()) return;
  auto ranks = test::ThreadRanks::Start(1, "shm");
  REQUIRE(ranks.ok());
  auto rt = fusion::Runtime::Start((*ranks)->comm(0), fusion::FusionOptions{});
  REQUIRE(rt.ok());
  std::vector<float> a(8, 1.0f);
  Buffer dev{a.data(), a.size(), DType::kF32, MemKind::kCuda};  // claims to be device memory
  Status s = (*rt)->Allreduce("grad", dev, dev, ReduceOp::kSum).Wait();
  INFO(s.ToString());
  CHECK_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("the tensor is CUDA device memory, but: " + n.status().message()));
  CHECK(a == std::vector<float>(8, 1.0f));
  CHECK((*rt)->Shutdown().ok());
}
