// Which implementation each kind of layer gets. The models (model.cc, residual.cc) build
// through a factory instead of naming classes, so one model definition serves every back end
// and gives the same parameters (names, shapes, initial values from the same seed) on each:
//  - native: the hand-written layers (im2col + OpenBLAS convolutions, plain loops);
//  - onednn: convolutions, batch norm (with ReLU fused into it where one follows), ReLU, max
//    and global average pooling on oneDNN primitives, passing oneDNN's blocked layouts between
//    them (tensor.h); linear layers stay on OpenBLAS's GEMM (linear.h).
#pragma once
#include <memory>
#include <random>
#include <string>

#include "trainer/chain.h"
#include "trainer/conv2d.h"

namespace hoop::train {

enum class Layers { kNative, kOneDnn };
const char* LayersName(Layers l);

class LayerFactory {
 public:
  virtual ~LayerFactory() = default;
  virtual std::unique_ptr<Layer> Conv(std::string name, ConvSpec spec, std::mt19937& rng) const;
  virtual std::unique_ptr<Layer> MaxPool(std::string name, int k) const;
  virtual std::unique_ptr<Layer> GlobalAvgPool(std::string name) const;
  virtual std::unique_ptr<Layer> Relu(std::string name) const;
  // Adds batch norm over `channels` to `chain`, then, when relu_name is not empty, a ReLU
  // (fused into the batch norm where the back end can).
  virtual void AddBatchNorm(Chain& chain, const std::string& name, int channels, const std::string& relu_name) const;
};

// The factory for `layers`, or null when this build lacks that back end (HaveOneDnn()).
std::unique_ptr<LayerFactory> MakeLayerFactory(Layers layers);

// oneDNN's factory, or null without oneDNN (layer_factory_dnnl.cc, layer_factory_dnnl_none.cc).
std::unique_ptr<LayerFactory> OneDnnLayerFactory();
// Whether this build has oneDNN, and the threads its primitives use.
bool HaveOneDnn();
void SetOneDnnThreads(int threads);

}  // namespace hoop::train
