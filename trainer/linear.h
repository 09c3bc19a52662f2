// A fully connected layer: y = x W^T + b, x flattened to N x F (C*H*W per image).
// Backward: dW = dy^T x, db = sum over images of dy, dx = dy W. Rows of the batch are split
// across threads for y and dx; the weight gradient splits by output rows, so each thread writes
// its own part and no sum is needed.
#pragma once
#include "trainer/layer.h"

namespace hoop::train {

class Linear : public Layer {
 public:
  Linear(std::string name, int in, int out, std::mt19937& rng);
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  std::vector<Param*> Params() override { return {&weight_, &bias_}; }

 private:
  int in_, out_;
  Param weight_, bias_;
};

}  // namespace hoop::train
