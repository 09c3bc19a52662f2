// The trainer's arithmetic that is not a layer: a residual block's sum and ReLU, and the
// optimizer's update. Each layer back end brings its own (layer_factory.h): HostMath() loops over
// host tensors; the CUDA back end's runs cuDNN's tensor operations and cuBLAS's vector calls on
// the device (layer_factory_cuda.cc), so a device tensor never comes back to the host for them.
#pragma once
#include <memory>

#include "trainer/tensor.h"

namespace hoop::train {

class TensorMath {
 public:
  virtual ~TensorMath() = default;
  // out = max(a + b, 0): out gets a's shape and memory (plain layout; the caller sets a layout).
  virtual void AddRelu(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // d = dout where out > 0, else 0: d gets out's shape and memory.
  virtual void ReluMask(const Tensor& out, const Tensor& dout, Tensor& d) = 0;
  // acc += x (same size and memory).
  virtual void Accumulate(const Tensor& x, Tensor& acc) = 0;
  // Momentum SGD with weight decay (sgd.h): v = momentum * v + g + weight_decay * w; w -= lr * v.
  virtual void SgdStep(Tensor& w, const Tensor& g, Tensor& v, float momentum, float weight_decay, float lr) = 0;
};

// Loops over host memory.
std::shared_ptr<TensorMath> HostMath();

}  // namespace hoop::train
