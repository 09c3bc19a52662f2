// ReLU on oneDNN's eltwise primitives: forward max(x, 0), backward from the output (oneDNN's
// relu_use_dst_for_bwd, as Relu does: the gradient passes where the output is positive). Takes
// and keeps any layout a Tensor can carry. Where a batch norm precedes it, oneDNN fuses the two
// instead (batchnorm_dnnl.h); this is the ReLU that follows pooling or a linear layer.
#pragma once
#include <memory>
#include <vector>

#include "trainer/relu.h"

namespace hoop::train {

class DnnlRelu : public Relu {
 public:
  explicit DnnlRelu(std::string name);
  ~DnnlRelu() override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;

 private:
  struct Primitives;  // for one shape and layout
  Primitives& For(const Shape& shape, int block);
  std::vector<std::unique_ptr<Primitives>> cache_;
};

}  // namespace hoop::train
