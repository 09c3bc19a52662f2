// Batch normalisation on cuDNN (spatial mode: per channel over N, H, W), as BatchNorm
// (batchnorm.h) defines it: the batch's biased variance to normalise, running averages with
// momentum 0.1 of the mean and the unbiased variance, eps 1e-5; evaluation on the running
// averages. The batch's mean and inverse deviation are kept from forward for backward.
#pragma once
#include "trainer/batchnorm.h"
#include "trainer/cudnn_context.h"

namespace hoop::train {

class CudnnBatchNorm : public Layer {
 public:
  CudnnBatchNorm(std::string name, int channels, std::shared_ptr<CudnnContext> ctx);
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  std::vector<Param*> Params() override { return {&gamma_, &beta_}; }
  std::vector<std::pair<std::string, Tensor*>> Buffers() override;

 private:
  int c_;
  std::shared_ptr<CudnnContext> ctx_;
  Param gamma_, beta_;
  Tensor running_mean_, running_var_, saved_mean_, saved_invstd_, scratch_;
  TensorDesc x_, stats_;
};

}  // namespace hoop::train
