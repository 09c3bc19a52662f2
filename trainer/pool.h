// Pooling: max over k x k windows with stride k (LeNet's 2x2), and the global average over each
// channel's whole plane (ResNet's head).
//
// Max pooling remembers which input won each window and routes the gradient there alone; the
// global average spreads each channel's gradient evenly over its H*W inputs.
#pragma once
#include "trainer/layer.h"

namespace hoop::train {

class MaxPool : public Layer {
 public:
  MaxPool(std::string name, int k) : Layer(std::move(name)), k_(k) {}
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;

 private:
  int k_;
  std::vector<int> argmax_;  // per output element: the winning input's offset in its image
};

class GlobalAvgPool : public Layer {
 public:
  explicit GlobalAvgPool(std::string name) : Layer(std::move(name)) {}
  Shape OutShape(const Shape& in) const override { return {in.n, in.c, 1, 1}; }
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
};

}  // namespace hoop::train
