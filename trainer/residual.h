// A residual block (He et al.'s "basic block"): y = relu(body(x) + shortcut(x)), where body is
// conv3x3-BN-ReLU-conv3x3-BN and the shortcut is the identity, or a strided 1x1 conv + BN when
// the block changes width or resolution. Backward sends dy (through the final ReLU) down both
// paths and adds their input gradients. Elementwise, so any layout (tensor.h): the output takes
// the body's, and a shortcut in another layout is converted to it. The sum, the ReLU and their
// gradients are the layer back end's (tensor_math.h), in its memory.
#pragma once
#include "trainer/chain.h"
#include "trainer/layer_factory.h"
#include "trainer/tensor_math.h"

namespace hoop::train {

class Residual : public Layer {
 public:
  Residual(std::string name, int in, int out, int stride, std::mt19937& rng, const LayerFactory& make);
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  std::vector<Param*> Params() override;
  std::vector<std::pair<std::string, Tensor*>> Buffers() override;
  bool TakesBlocked() const override { return true; }

 private:
  std::shared_ptr<TensorMath> math_;  // the sum, the ReLU and their gradients, on the back end's memory
  Chain body_, shortcut_;
  Tensor dsum_, dshort_;
  Tensor moved_, dmoved_;  // the shortcut's output, and dsum_, in the other branch's layout
  int short_block_ = 0;    // the shortcut's output layout in the last Forward
};

}  // namespace hoop::train
