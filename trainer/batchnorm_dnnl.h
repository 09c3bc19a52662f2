// Batch norm on oneDNN, optionally with the ReLU after it fused in (oneDNN's fuse_norm_relu:
// one pass forward, and backward masks the gradient with a bitmask workspace instead of reading
// the activations again). The same parameters, running statistics (PyTorch's: momentum 0.1,
// the unbiased variance) and results as BatchNorm followed by Relu. Takes and keeps any layout
// a Tensor can carry, so it sits between oneDNN convolutions without reorders.
#pragma once
#include <memory>
#include <vector>

#include "trainer/batchnorm.h"

namespace hoop::train {

class DnnlBatchNorm : public BatchNorm {
 public:
  DnnlBatchNorm(std::string name, int channels, bool relu);
  ~DnnlBatchNorm() override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  bool TakesBlocked() const override { return true; }

 private:
  struct Primitives;  // for one input shape, layout and mode
  Primitives& For(const Shape& in, int block, Mode mode);
  bool relu_;
  std::vector<float> var_;  // the last training batch's (biased) variance, beside mean_
  Tensor scratch_;          // diff_src when the caller wants none
  std::vector<std::unique_ptr<Primitives>> cache_;
};

}  // namespace hoop::train
