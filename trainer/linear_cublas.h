// A fully connected layer on cuBLAS (the CUDA back end, layer_factory.h), as Linear (linear.h)
// defines it: y = x W^T + b for x of N x in (any N x C x H x W, flattened), W of out x in,
// row-major. cuBLAS is column-major, so each row-major product is computed as its transpose:
//   forward  Y^T = W X^T          (gemm T, N), then the bias added by cuDNN
//   backward dW^T = X^T dY        (gemm N, T); db = the column sums of dY (cuDNN's bias gradient)
//            dX^T = W^T dY^T      (gemm N, N)
// f32 GEMMs (no TF32): cuBLAS's default math, as PyTorch's default for matrix products.
#pragma once
#include "trainer/cudnn_context.h"

namespace hoop::train {

class CublasLinear : public Layer {
 public:
  CublasLinear(std::string name, int in, int out, std::mt19937& rng, std::shared_ptr<CudnnContext> ctx);
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  std::vector<Param*> Params() override { return {&weight_, &bias_}; }

 private:
  int in_, out_;
  std::shared_ptr<CudnnContext> ctx_;
  Param weight_, bias_;
  TensorDesc y_, b_;
};

}  // namespace hoop::train
