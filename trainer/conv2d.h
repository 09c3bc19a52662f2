// 2-D convolution (NCHW, square kernel, stride, zero padding, optional bias) as im2col + GEMM.
//
// Per image: im2col lays the input patches out as a (C*K*K) x (OH*OW) matrix, so the forward is
// one GEMM, W (OC x C*K*K) times the patches. Backward per image: dW += dY * patches^T, and
// d(patches) = W^T * dY scattered back by col2im into dX. Images are split across the pool's
// threads; each thread keeps its own patch matrix and weight-gradient accumulator, summed at the
// end, so the result does not depend on timing.
#pragma once
#include <functional>
#include <memory>

#include "trainer/layer.h"

namespace hoop::train {

struct ConvSpec {
  int in = 1, out = 1, kernel = 3, stride = 1, pad = 0;
  bool bias = true;
};

class Conv2d : public Layer {
 public:
  Conv2d(std::string name, ConvSpec spec, std::mt19937& rng);
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  std::vector<Param*> Params() override;

 protected:
  ConvSpec s_;
  Param weight_, bias_;

 private:
  void Im2Col(const float* x, int h, int w, float* col) const;
  void Col2Im(const float* col, int h, int w, float* x) const;
  std::vector<std::vector<float>> col_, dw_, db_;  // per thread
};

// Makes a convolution layer: the models take one, so the layers' back end is chosen once
// (model.h: Conv2d, or DnnlConv2d on oneDNN).
using ConvFactory = std::function<std::unique_ptr<Layer>(std::string name, ConvSpec spec, std::mt19937& rng)>;

}  // namespace hoop::train
