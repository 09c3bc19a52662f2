// hoop-bench-device's GPU side: cuBLAS's sgemm (full FP32: no TF32 tensor-core shortcut, so the
// products match the CPU's) and cuDNN's convolution forward, backward data, backward filter and
// bias, with the SGD update as cuBLAS axpy, all queued on one stream of hoop's and timed from
// the host around a stream synchronisation. Device memory and copies go through hoop's CUDA
// layer (common/device.h).
#include <cublas_v2.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>

#include "common/device.h"
#include "perf/device_bench.h"

namespace hoop::bench {
namespace {

Status Cublas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string(what) + ": cuBLAS error " + std::to_string(static_cast<int>(s)));
}

Status Cudnn(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string(what) + ": " + cudnnGetErrorString(s));
}

// Device memory freed on scope exit.
struct DeviceArray {
  void* p = nullptr;
  size_t bytes = 0;
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { CudaFree(p, MemKind::kCuda); }
  Status Alloc(size_t n) {
    bytes = n;
    if (n == 0) return Status::Ok();
    HOOP_ASSIGN_OR_RETURN(p, CudaAlloc(0, n));
    return Status::Ok();
  }
  float* f() const { return static_cast<float*>(p); }
};

class CudaBench : public GpuBench {
 public:
  ~CudaBench() override {
    if (cudnn_) cudnnDestroy(cudnn_);
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) CudaStreamDestroy(stream_);
  }

  Status Open() {
    HOOP_ASSIGN_OR_RETURN(auto devices, CudaDevices());
    if (devices.empty()) return Unavailable("no GPU");
    name_ = devices[0].name;
    HOOP_RETURN_IF_ERROR(CudaSetDevice(0));
    HOOP_ASSIGN_OR_RETURN(stream_, CudaStreamCreate(0));
    HOOP_RETURN_IF_ERROR(Cublas(cublasCreate(&cublas_), "cublasCreate"));
    HOOP_RETURN_IF_ERROR(Cublas(cublasSetStream(cublas_, static_cast<cudaStream_t>(stream_)), "cublasSetStream"));
    HOOP_RETURN_IF_ERROR(Cublas(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode"));
    HOOP_RETURN_IF_ERROR(Cudnn(cudnnCreate(&cudnn_), "cudnnCreate"));
    HOOP_RETURN_IF_ERROR(Cudnn(cudnnSetStream(cudnn_, static_cast<cudaStream_t>(stream_)), "cudnnSetStream"));
    int v = 0;
    (void)cublasGetVersion(cublas_, &v);
    name_ += ", cuBLAS " + std::to_string(v) + ", cuDNN " + std::to_string(cudnnGetVersion());
    return Status::Ok();
  }

  std::string Describe() const override { return name_; }

  StatusOr<double> Gemm(int n, int repeats, const std::vector<float>& a, const std::vector<float>& b,
                        std::vector<float>& c) override {
    const size_t bytes = sizeof(float) * static_cast<size_t>(n) * n;
    DeviceArray da, db, dc;
    HOOP_RETURN_IF_ERROR(da.Alloc(bytes));
    HOOP_RETURN_IF_ERROR(db.Alloc(bytes));
    HOOP_RETURN_IF_ERROR(dc.Alloc(bytes));
    HOOP_RETURN_IF_ERROR(CopyMem(da.p, MemKind::kCuda, a.data(), MemKind::kHost, bytes, stream_));
    HOOP_RETURN_IF_ERROR(CopyMem(db.p, MemKind::kCuda, b.data(), MemKind::kHost, bytes, stream_));
    const float one = 1.0f, zero = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T: the same call with A and B swapped.
    auto run = [&] {
      return Cublas(
          cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, db.f(), n, da.f(), n, &zero, dc.f(), n),
          "cublasSgemm");
    };
    HOOP_ASSIGN_OR_RETURN(double t, Mean(repeats, run));
    c.resize(static_cast<size_t>(n) * n);
    HOOP_RETURN_IF_ERROR(CopyMem(c.data(), MemKind::kHost, dc.p, MemKind::kCuda, bytes, stream_));
    HOOP_RETURN_IF_ERROR(CudaStreamSync(stream_));
    return t;
  }

  StatusOr<double> ConvTrain(ConvStep& s, int repeats) override {
    const int out = kImage - kKernel + 1;
    Descriptors d;
    HOOP_RETURN_IF_ERROR(d.Make(s.n, out));
    DeviceArray x, y, dy, dx, w, b, dw, db, w0, b0;
    const size_t xs = sizeof(float) * s.x.size(), ys = sizeof(float) * s.dy.size(), ws = sizeof(float) * s.w.size(),
                 bs = sizeof(float) * s.b.size();
    for (auto [arr, n] : {std::pair{&x, xs},
                          {&y, ys},
                          {&dy, ys},
                          {&dx, xs},
                          {&w, ws},
                          {&b, bs},
                          {&dw, ws},
                          {&db, bs},
                          {&w0, ws},
                          {&b0, bs}})
      HOOP_RETURN_IF_ERROR(arr->Alloc(n));
    HOOP_RETURN_IF_ERROR(CopyMem(x.p, MemKind::kCuda, s.x.data(), MemKind::kHost, xs, stream_));
    HOOP_RETURN_IF_ERROR(CopyMem(dy.p, MemKind::kCuda, s.dy.data(), MemKind::kHost, ys, stream_));
    HOOP_RETURN_IF_ERROR(CopyMem(w0.p, MemKind::kCuda, s.w.data(), MemKind::kHost, ws, stream_));
    HOOP_RETURN_IF_ERROR(CopyMem(b0.p, MemKind::kCuda, s.b.data(), MemKind::kHost, bs, stream_));

    // The fastest algorithm of each pass that cuDNN's heuristics rank first, and one workspace.
    cudnnConvolutionFwdAlgoPerf_t fp;
    cudnnConvolutionBwdDataAlgoPerf_t dp;
    cudnnConvolutionBwdFilterAlgoPerf_t wp;
    int got = 0;
    HOOP_RETURN_IF_ERROR(Cudnn(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, d.x, d.w, d.conv, d.y, 1, &got, &fp),
                               "forward algorithm"));
    HOOP_RETURN_IF_ERROR(Cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, d.w, d.y, d.conv, d.x, 1, &got, &dp),
                               "backward data algorithm"));
    HOOP_RETURN_IF_ERROR(
        Cudnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, d.x, d.y, d.conv, d.w, 1, &got, &wp),
              "backward filter algorithm"));
    size_t f_ws = 0, d_ws = 0, w_ws = 0;
    HOOP_RETURN_IF_ERROR(
        Cudnn(cudnnGetConvolutionForwardWorkspaceSize(cudnn_, d.x, d.w, d.conv, d.y, fp.algo, &f_ws), "workspace"));
    HOOP_RETURN_IF_ERROR(Cudnn(
        cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_, d.w, d.y, d.conv, d.x, dp.algo, &d_ws), "workspace"));
    HOOP_RETURN_IF_ERROR(Cudnn(
        cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn_, d.x, d.y, d.conv, d.w, wp.algo, &w_ws), "workspace"));
    DeviceArray work;
    HOOP_RETURN_IF_ERROR(work.Alloc(std::max({f_ws, d_ws, w_ws})));

    const float one = 1.0f, zero = 0.0f, minus_lr = -kLr;
    auto step = [&]() -> Status {
      HOOP_RETURN_IF_ERROR(CopyMem(w.p, MemKind::kCuda, w0.p, MemKind::kCuda, ws, stream_));  // the same start
      HOOP_RETURN_IF_ERROR(CopyMem(b.p, MemKind::kCuda, b0.p, MemKind::kCuda, bs, stream_));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnConvolutionForward(cudnn_, &one, d.x, x.p, d.w, w.p, d.conv, fp.algo, work.p,
                                                         work.bytes, &zero, d.y, y.p),
                                 "forward"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnAddTensor(cudnn_, &one, d.b, b.p, &one, d.y, y.p), "bias"));
      HOOP_RETURN_IF_ERROR(
          Cudnn(cudnnConvolutionBackwardBias(cudnn_, &one, d.y, dy.p, &zero, d.b, db.p), "backward bias"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnConvolutionBackwardFilter(cudnn_, &one, d.x, x.p, d.y, dy.p, d.conv, wp.algo,
                                                                work.p, work.bytes, &zero, d.w, dw.p),
                                 "backward filter"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnConvolutionBackwardData(cudnn_, &one, d.w, w.p, d.y, dy.p, d.conv, dp.algo,
                                                              work.p, work.bytes, &zero, d.x, dx.p),
                                 "backward data"));
      HOOP_RETURN_IF_ERROR(
          Cublas(cublasSaxpy(cublas_, static_cast<int>(s.w.size()), &minus_lr, dw.f(), 1, w.f(), 1), "update"));
      return Cublas(cublasSaxpy(cublas_, static_cast<int>(s.b.size()), &minus_lr, db.f(), 1, b.f(), 1), "update");
    };
    HOOP_ASSIGN_OR_RETURN(double t, Mean(repeats, step));
    s.y.resize(s.dy.size());
    HOOP_RETURN_IF_ERROR(CopyMem(s.y.data(), MemKind::kHost, y.p, MemKind::kCuda, ys, stream_));
    HOOP_RETURN_IF_ERROR(CopyMem(s.w.data(), MemKind::kHost, w.p, MemKind::kCuda, ws, stream_));
    HOOP_RETURN_IF_ERROR(CopyMem(s.b.data(), MemKind::kHost, b.p, MemKind::kCuda, bs, stream_));
    HOOP_RETURN_IF_ERROR(CudaStreamSync(stream_));
    return t;
  }

 private:
  // cuDNN's descriptors of the convolution case, destroyed on scope exit.
  struct Descriptors {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    ~Descriptors() {
      for (auto t : {x, y, b})
        if (t) cudnnDestroyTensorDescriptor(t);
      if (w) cudnnDestroyFilterDescriptor(w);
      if (conv) cudnnDestroyConvolutionDescriptor(conv);
    }
    Status Make(int n, int out) {
      const auto f32 = CUDNN_DATA_FLOAT;
      const auto nchw = CUDNN_TENSOR_NCHW;
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnCreateTensorDescriptor(&x), "descriptor"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnCreateTensorDescriptor(&y), "descriptor"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnCreateTensorDescriptor(&b), "descriptor"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnCreateFilterDescriptor(&w), "descriptor"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnCreateConvolutionDescriptor(&conv), "descriptor"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnSetTensor4dDescriptor(x, nchw, f32, n, 1, kImage, kImage), "input"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnSetTensor4dDescriptor(y, nchw, f32, n, kFilters, out, out), "output"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnSetTensor4dDescriptor(b, nchw, f32, 1, kFilters, 1, 1), "bias"));
      HOOP_RETURN_IF_ERROR(Cudnn(cudnnSetFilter4dDescriptor(w, f32, nchw, kFilters, 1, kKernel, kKernel), "filter"));
      HOOP_RETURN_IF_ERROR(
          Cudnn(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, f32), "convolution"));
      return Cudnn(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), "math type");  // FP32, no TF32
    }
  };

  // Mean seconds of `repeats` runs of `f` (which queues work on the stream) after a warm-up,
  // each timed on the host around a synchronisation.
  template <class F>
  StatusOr<double> Mean(int repeats, F&& f) {
    HOOP_RETURN_IF_ERROR(f());
    HOOP_RETURN_IF_ERROR(CudaStreamSync(stream_));
    double total = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto t = std::chrono::steady_clock::now();
      HOOP_RETURN_IF_ERROR(f());
      HOOP_RETURN_IF_ERROR(CudaStreamSync(stream_));
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    }
    return total / repeats;
  }

  std::string name_;
  void* stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
};

}  // namespace

std::unique_ptr<GpuBench> OpenGpu(std::string* why) {
  auto count = CudaDeviceCount();
  if (!count.ok()) {
    *why = count.status().message();
    return nullptr;
  }
  if (*count == 0) {
    *why = "no GPU";
    return nullptr;
  }
  auto b = std::make_unique<CudaBench>();
  if (Status s = b->Open(); !s.ok()) {
    *why = s.message();
    return nullptr;
  }
  return b;
}

}  // namespace hoop::bench
