// 2-D convolution on oneDNN (Debian's libdnnl-dev): the same layer as Conv2d (its parameters,
// initialisation and shapes, so models and checkpoints are the same), with forward, backward
// data and backward weights (and bias) as oneDNN's convolution primitives, which pick the
// fastest implementation this CPU has (JIT kernels for its instruction set) and the layouts
// those want. Its input may be blocked (tensor.h); its output is in the layout the primitive
// chose where that is one a Tensor can carry, so the next oneDNN layer reads it without a
// reorder. Weights stay OIHW for the optimizer and the communicator; primitives are made once
// per input shape and layout. oneDNN runs on its own OpenMP threads (SetOneDnnThreads).
#pragma once
#include <memory>
#include <vector>

#include "trainer/conv2d.h"

namespace hoop::train {

class DnnlConv2d : public Conv2d {
 public:
  DnnlConv2d(std::string name, ConvSpec spec, std::mt19937& rng);
  ~DnnlConv2d() override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  bool TakesBlocked() const override { return true; }

 private:
  struct Primitives;  // oneDNN's objects, for one input shape and layout
  Primitives& For(const Shape& in, int block);
  std::vector<std::unique_ptr<Primitives>> cache_;
};

}  // namespace hoop::train
