// The oneDNN back end's factory (layer_factory.h) and its thread count.
#include <omp.h>

#include "trainer/batchnorm_dnnl.h"
#include "trainer/conv2d_dnnl.h"
#include "trainer/layer_factory.h"
#include "trainer/pool_dnnl.h"
#include "trainer/relu_dnnl.h"

namespace hoop::train {

namespace {

class OneDnnFactory : public LayerFactory {
 public:
  std::unique_ptr<Layer> Conv(std::string name, ConvSpec spec, std::mt19937& rng) const override {
    return std::make_unique<DnnlConv2d>(std::move(name), spec, rng);
  }
  std::unique_ptr<Layer> MaxPool(std::string name, int k) const override {
    return std::make_unique<DnnlMaxPool>(std::move(name), k);
  }
  std::unique_ptr<Layer> GlobalAvgPool(std::string name) const override {
    return std::make_unique<DnnlGlobalAvgPool>(std::move(name));
  }
  std::unique_ptr<Layer> Relu(std::string name) const override { return std::make_unique<DnnlRelu>(std::move(name)); }
  // One layer where a ReLU follows: its name is the batch norm's (the ReLU has no parameters).
  void AddBatchNorm(Chain& chain, const std::string& name, int channels, const std::string& relu_name) const override {
    chain.Add(std::make_unique<DnnlBatchNorm>(name, channels, !relu_name.empty()));
  }
};

}  // namespace

std::unique_ptr<LayerFactory> OneDnnLayerFactory() { return std::make_unique<OneDnnFactory>(); }

bool HaveOneDnn() { return true; }

void SetOneDnnThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace hoop::train
