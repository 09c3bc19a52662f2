#include "trainer/layer_factory.h"

#include "trainer/batchnorm.h"
#include "trainer/linear.h"
#include "trainer/pool.h"
#include "trainer/relu.h"

namespace hoop::train {

const char* LayersName(Layers l) {
  switch (l) {
    case Layers::kOneDnn: return "onednn";
    case Layers::kCuda: return "cuda";
    default: return "native";
  }
}

std::unique_ptr<Layer> LayerFactory::Conv(std::string name, ConvSpec spec, std::mt19937& rng) const {
  return std::make_unique<Conv2d>(std::move(name), spec, rng);
}

std::unique_ptr<Layer> LayerFactory::MaxPool(std::string name, int k) const {
  return std::make_unique<hoop::train::MaxPool>(std::move(name), k);
}

std::unique_ptr<Layer> LayerFactory::GlobalAvgPool(std::string name) const {
  return std::make_unique<hoop::train::GlobalAvgPool>(std::move(name));
}

std::unique_ptr<Layer> LayerFactory::Relu(std::string name) const {
  return std::make_unique<hoop::train::Relu>(std::move(name));
}

std::unique_ptr<Layer> LayerFactory::Linear(std::string name, int in, int out, std::mt19937& rng) const {
  return std::make_unique<hoop::train::Linear>(std::move(name), in, out, rng);
}

void LayerFactory::AddBatchNorm(Chain& chain, const std::string& name, int channels,
                                const std::string& relu_name) const {
  chain.Add(std::make_unique<BatchNorm>(name, channels));
  if (!relu_name.empty()) chain.Add(Relu(relu_name));
}

std::unique_ptr<LayerFactory> MakeLayerFactory(Layers layers) {
  if (layers == Layers::kOneDnn) return OneDnnLayerFactory();
  if (layers == Layers::kCuda) return nullptr;  // needs a device: CudaLayerFactory
  return std::make_unique<LayerFactory>();
}

}  // namespace hoop::train
