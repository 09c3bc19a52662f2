// A residual block (He et al.'s "basic block"): y = relu(body(x) + shortcut(x)), where body is
// conv3x3-BN-ReLU-conv3x3-BN and the shortcut is the identity, or a strided 1x1 conv + BN when
// the block changes width or resolution. Backward sends dy (through the final ReLU) down both
// paths and adds their input gradients.
#pragma once
#include "trainer/chain.h"
#include "trainer/conv2d.h"

namespace hoop::train {

class Residual : public Layer {
 public:
  Residual(std::string name, int in, int out, int stride, std::mt19937& rng, const ConvFactory& conv);
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  std::vector<Param*> Params() override;
  std::vector<std::pair<std::string, Tensor*>> Buffers() override;

 private:
  Chain body_, shortcut_;
  Tensor dsum_, dshort_;
};

}  // namespace hoop::train
