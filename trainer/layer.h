// The layer interface every part of a model implements, forward and backward.
//
// A layer owns its parameters (each with its gradient) and whatever it saves between forward and
// backward; the model (model.h) owns the activations between layers and hands each layer its
// input, output and their gradients. Backward *adds nothing* to earlier calls: it overwrites the
// parameter gradients with this batch's, so the trainer can hand them to the communicator as soon
// as a layer's backward returns while earlier layers are still computing.
//
// Host f32 kernels here (im2col + OpenBLAS GEMM for the heavy parts, chosen by measurement: see
// docs/PERF.md); a cuDNN/cuBLAS back end would implement the same interface over device tensors.
#pragma once
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "trainer/parallel.h"
#include "trainer/tensor.h"

namespace hoop::train {

struct Param {
  std::string name;  // unique in the model, e.g. "conv2.weight": the tensor's name across ranks
  Tensor value, grad;
};

enum class Mode { kTrain, kEval };

class Layer {
 public:
  virtual ~Layer() = default;
  const std::string& name() const { return name_; }
  // The output shape for an input shape, or an empty shape (n = 0 with c = 0) when the input
  // cannot feed this layer.
  virtual Shape OutShape(const Shape& in) const = 0;
  virtual void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) = 0;
  // dout: gradient of the loss with respect to `out`. Writes every parameter's gradient and, when
  // din is not null, the gradient with respect to `in`.
  virtual void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) = 0;
  virtual std::vector<Param*> Params() { return {}; }
  // Whether Forward and Backward take an input in a blocked layout (Tensor::block). Such a layer
  // writes `out` in a layout of its choice (recorded in out.block), reads `dout` in out's
  // layout and writes `din` in in's. Others get plain tensors: the chain converts.
  virtual bool TakesBlocked() const { return false; }
  // State that is not learned but must match across ranks and survive a checkpoint (batch
  // norm's running statistics).
  virtual std::vector<std::pair<std::string, Tensor*>> Buffers() { return {}; }

 protected:
  explicit Layer(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// He (Kaiming) normal initialisation for a weight with `fan_in` inputs per output, as PyTorch's
// reference models use for ReLU networks.
void HeInit(Tensor& w, int fan_in, std::mt19937& rng);

}  // namespace hoop::train
