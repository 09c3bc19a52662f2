// ReLU: y = max(0, x); dx = dy where y > 0.
#pragma once
#include "trainer/layer.h"

namespace hoop::train {

class Relu : public Layer {
 public:
  explicit Relu(std::string name) : Layer(std::move(name)) {}
  Shape OutShape(const Shape& in) const override { return in; }
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  bool TakesBlocked() const override { return true; }
};

}  // namespace hoop::train
