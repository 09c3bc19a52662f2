// Batch normalisation over (N, H, W) per channel, with a learned scale and shift.
//
// Training normalises with the batch's own mean and (biased) variance and folds them into running
// averages (momentum 0.1, unbiased variance, as PyTorch); evaluation uses the running averages.
// Backward, with xhat the normalised input and M = N*H*W:
//   dx = gamma / sqrt(var + eps) / M * (M*dy - sum(dy) - xhat * sum(dy * xhat)).
// In data-parallel training each rank normalises over its own images (as PyTorch's DDP does
// without SyncBatchNorm); the trainer averages the running statistics across ranks before every
// evaluation and checkpoint so all ranks evaluate one model.
#pragma once
#include "trainer/layer.h"

namespace hoop::train {

class BatchNorm : public Layer {
 public:
  BatchNorm(std::string name, int channels);
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  std::vector<Param*> Params() override { return {&gamma_, &beta_}; }
  std::vector<std::pair<std::string, Tensor*>> Buffers() override;

  static constexpr float kEps = 1e-5f, kMomentum = 0.1f;

 protected:
  int c_;
  Param gamma_, beta_;
  Tensor running_mean_, running_var_;
  std::vector<float> mean_, invstd_;  // of the last training batch
};

}  // namespace hoop::train
