// A chain of layers run in order: forward keeps every activation, backward walks them in reverse
// and reports each layer as soon as its parameter gradients are final (the trainer hands those to
// the tensor fusion runtime there, overlapping communication with the rest of backward).
// Between a layer that wrote a blocked tensor (oneDNN's layouts, tensor.h) and one that takes only
// plain ones, the chain converts, forward and back, so each layer sees what it takes.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "trainer/layer.h"

namespace hoop::train {

class Chain {
 public:
  void Add(std::unique_ptr<Layer> layer) { layers_.push_back(std::move(layer)); }
  bool empty() const { return layers_.empty(); }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // Hands the layers over, leaving the chain empty (a pipeline deals them out to its stages).
  std::vector<std::unique_ptr<Layer>> TakeLayers() {
    acts_.clear();
    grads_.clear();
    plain_.clear();
    std::vector<std::unique_ptr<Layer>> out = std::move(layers_);
    layers_.clear();
    return out;
  }
  Shape OutShape(Shape in) const;
  // The output of the last layer (the input itself for an empty chain); valid until the next call.
  const Tensor& Forward(const Tensor& in, Mode mode, ThreadPool& pool);
  // After Forward on the same input: din (when not null) gets the gradient for the input, in the
  // input's layout; dout must be in the layout of Forward's output.
  void Backward(const Tensor& in, const Tensor& dout, Tensor* din, ThreadPool& pool,
                const std::function<void(Layer&)>& done = nullptr);
  std::vector<Param*> Params() const;
  std::vector<std::pair<std::string, Tensor*>> Buffers() const;

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Tensor> acts_;   // acts_[i]: output of layer i
  std::vector<Tensor> grads_;  // grads_[i]: gradient for the input of layer i + 1
  std::vector<Tensor> plain_;  // plain_[i]: layer i's input made plain, where it needed that
  Tensor plain_grad_;          // a plain-only layer's input gradient, before going back to blocked
};

}  // namespace hoop::train
