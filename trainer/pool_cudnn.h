// Pooling and ReLU on cuDNN (the CUDA back end, layer_factory.h), as pool.h and relu.h define
// them: max over k x k windows with stride k, the global average of each channel's plane, and
// max(x, 0) with its gradient passed where the output is positive.
#pragma once
#include "trainer/cudnn_context.h"

namespace hoop::train {

class CudnnPool : public Layer {
 public:
  // k > 0: max pooling over k x k windows with stride k; k == 0: global average pooling.
  CudnnPool(std::string name, int k, std::shared_ptr<CudnnContext> ctx);
  ~CudnnPool() override;
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;

 private:
  void SetWindow(const Shape& in);
  int k_;
  std::shared_ptr<CudnnContext> ctx_;
  cudnnPoolingDescriptor_t desc_ = nullptr;
  Shape window_for_{-1, -1, -1, -1};
  TensorDesc x_, y_;
};

class CudnnRelu : public Layer {
 public:
  CudnnRelu(std::string name, std::shared_ptr<CudnnContext> ctx);
  ~CudnnRelu() override;
  Shape OutShape(const Shape& in) const override { return in; }
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;

 private:
  std::shared_ptr<CudnnContext> ctx_;
  cudnnActivationDescriptor_t act_ = nullptr;
  TensorDesc x_;
};

}  // namespace hoop::train
