// hoop-bench-device: the CPU-against-GPU timing study of issue 23 (after the reference study's
// benchmark): square single-precision matrix products C = A x B of sizes n, and one training
// step (forward, backward data and weights, SGD update) of one convolution layer of 32 filters
// of 8x8 over a batch of random 1 x 128 x 128 images. The CPU side uses OpenBLAS (all threads
// asked for) and the trainer's convolution (oneDNN where built with it); the GPU side cuBLAS and
// cuDNN. Every case runs once to warm up, then `repeats` times; the mean is reported.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::bench {

inline constexpr int kFilters = 32, kKernel = 8, kImage = 128;  // the convolution case
inline constexpr float kLr = 0.01f;                             // its SGD step

// One training step's inputs and results, on the host: x (n x 1 x 128 x 128), dy (the loss's
// gradient for the output, n x 32 x 121 x 121), w (32 x 1 x 8 x 8) and b (32) before the step;
// y (the forward output) and w, b after it, for checking one device against the other.
struct ConvStep {
  int n = 0;
  std::vector<float> x, dy, w, b, y;
};

// The GPU side, where there is one (device_bench_cuda.cc).
class GpuBench {
 public:
  virtual ~GpuBench() = default;
  virtual std::string Describe() const = 0;  // "NVIDIA H100 80GB HBM3, cuBLAS 13.0, cuDNN 9.x"
  // Mean seconds of `repeats` products of n x n matrices a and b (row-major) after a warm-up;
  // c gets the product.
  virtual StatusOr<double> Gemm(int n, int repeats, const std::vector<float>& a, const std::vector<float>& b,
                                std::vector<float>& c) = 0;
  // Mean seconds of `repeats` training steps from the same start after a warm-up; fills step.y
  // and leaves step.w, step.b as one step updates them.
  virtual StatusOr<double> ConvTrain(ConvStep& step, int repeats) = 0;
};

// The GPU bench for device 0, or null with *why saying why not (no GPU, built without CUDA,
// cuDNN or cuBLAS missing at build time).
std::unique_ptr<GpuBench> OpenGpu(std::string* why);

}  // namespace hoop::bench
