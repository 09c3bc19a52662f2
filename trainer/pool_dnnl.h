// Pooling on oneDNN, taking and keeping any layout a Tensor can carry:
//  - max pooling (k x k windows, stride k): forward keeps the winners in oneDNN's workspace and
//    backward routes each gradient to its window's winner, as MaxPool does, so LeNet's
//    convolution-pool-ReLU-convolution runs in one blocked layout without reorders;
//  - global average pooling (ResNet's head): one window over each channel's whole plane.
#pragma once
#include <memory>
#include <vector>

#include "trainer/pool.h"

namespace hoop::train {

class DnnlMaxPool : public MaxPool {
 public:
  DnnlMaxPool(std::string name, int k);
  ~DnnlMaxPool() override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  bool TakesBlocked() const override { return true; }

 private:
  struct Primitives;  // for one input shape, layout and mode
  Primitives& For(const Shape& in, int block, Mode mode);
  int k_;
  std::vector<std::unique_ptr<Primitives>> cache_;
};

class DnnlGlobalAvgPool : public GlobalAvgPool {
 public:
  explicit DnnlGlobalAvgPool(std::string name);
  ~DnnlGlobalAvgPool() override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  bool TakesBlocked() const override { return true; }

 private:
  struct Primitives;  // for one input shape and layout
  Primitives& For(const Shape& in, int block);
  std::vector<std::unique_ptr<Primitives>> cache_;
};

}  // namespace hoop::train
