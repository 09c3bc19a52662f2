// The oneDNN back end's factory (layer_factory.h) and its thread count.
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "trainer/batchnorm_dnnl.h"
#include "trainer/conv2d_dnnl.h"
#include "trainer/layer_factory.h"
#include "trainer/pool_dnnl.h"
#include "trainer/relu_dnnl.h"

namespace hoop::train {

namespace {

class OneDnnFactory : public LayerFactory {
 public:
  explicit OneDnnFactory(bool bf16) : bf16_(bf16) {}
  std::unique_ptr<Layer> Conv(std::string name, ConvSpec spec, std::mt19937& rng) const override {
    return std::make_unique<DnnlConv2d>(std::move(name), spec, rng, bf16_);
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

 private:
  bool bf16_;
};

const char* IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    default: return "another";
  }
}

}  // namespace

std::unique_ptr<LayerFactory> OneDnnLayerFactory(bool bf16) { return std::make_unique<OneDnnFactory>(bf16); }

std::string OneDnnBf16Missing() {
  // oneDNN's ISA values are bit sets, each containing the ones below it.
  const auto isa = dnnl::get_effective_cpu_isa();
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  if ((static_cast<unsigned>(isa) & bf16) == bf16) return "";
  return std::string("this CPU has no AVX512-BF16 or AMX instructions (oneDNN's: ") + IsaName(isa) +
         "; DNNL_MAX_CPU_ISA may lower it): bf16 would be emulated, slower than f32";
}

bool HaveOneDnn() { return true; }

void SetOneDnnThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace hoop::train
