// 2-D convolution on oneDNN (Debian's libdnnl-dev): the same layer as Conv2d (its parameters,
// initialisation and shapes, so models and checkpoints are the same), with forward, backward
// data and backward weights (and bias) as oneDNN's convolution primitives, which pick the
// fastest implementation this CPU has (JIT kernels for its instruction set). Primitives are made
// once per input shape and kept. Tensors stay NCHW and weights OIHW (plain layouts: no reorders).
// oneDNN runs on its own OpenMP threads (LayerBackend's thread count), not the layer's pool.
#pragma once
#include <memory>

#include "trainer/conv2d.h"

namespace hoop::train {

class DnnlConv2d : public Conv2d {
 public:
  DnnlConv2d(std::string name, ConvSpec spec, std::mt19937& rng);
  ~DnnlConv2d() override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;

 private:
  struct Primitives;  // oneDNN's objects, for one input shape
  Primitives& For(const Shape& in);
  std::unique_ptr<Primitives> p_;
};

// Whether this build has oneDNN (HOOP_WITH_ONEDNN), and sets the threads it uses.
bool HaveOneDnn();
void SetOneDnnThreads(int threads);

}  // namespace hoop::train
