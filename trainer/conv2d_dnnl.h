// 2-D convolution on oneDNN (Debian's libdnnl-dev): the same layer as Conv2d (its parameters,
// initialisation and shapes, so models and checkpoints are the same), with forward, backward
// data and backward weights (and bias) as oneDNN's convolution primitives, which pick the
// fastest implementation this CPU has (JIT kernels for its instruction set) and the layouts
// those want. Its input may be blocked (tensor.h); its output is in the layout the primitive
// chose where that is one a Tensor can carry, so the next oneDNN layer reads it without a
// reorder. Weights stay OIHW for the optimizer and the communicator; primitives are made once
// per input shape and layout. oneDNN runs on its own OpenMP threads (SetOneDnnThreads).
//
// bf16 (--precision bf16): the three products take their operands in bf16 (the input, the
// weights and the output's gradient, converted by the reorders in front of each primitive) and
// accumulate in f32; the output, the input's gradient and the weights' gradient come out f32,
// and the weights themselves stay f32 (the master copy the optimizer updates). Mixed precision
// as PyTorch's autocast runs a convolution, on the CPU's AVX512-BF16 (or AMX) instructions.
#pragma once
#include <memory>
#include <vector>

#include "trainer/conv2d.h"

namespace hoop::train {

class DnnlConv2d : public Conv2d {
 public:
  DnnlConv2d(std::string name, ConvSpec spec, std::mt19937& rng, bool bf16 = false);
  ~DnnlConv2d() override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  bool TakesBlocked() const override { return true; }

 private:
  struct Primitives;  // oneDNN's objects, for one input shape and layout
  Primitives& For(const Shape& in, int block);
  std::vector<std::unique_ptr<Primitives>> cache_;
  bool bf16_;
};

}  // namespace hoop::train
