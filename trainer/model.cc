#include "trainer/model.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "trainer/pool.h"
#include "trainer/relu.h"
#include "trainer/residual.h"

namespace hoop::train {

namespace {

// A rank's peak resident memory, measured with /usr/bin/time (docs/PERF.md, "hoop-train
// memory"): a fixed part (data sets, library, parameters with their gradients and momenta,
// rounded up) plus bytes per image of a batch (activations and their gradients), the larger of
// the two back ends' (the hand-written layers', each time), and the evaluation chunk, chosen so
// that evaluating costs no more than a training batch of that size.
struct Cost {
  const char* model;
  double fixed, per_image;
  int eval_chunk;
};
constexpr Cost kCosts[] = {
    {"lenet", 100e6, 306e3, 500},      // batch 500 and 4000
    {"resnet", 100e6, 1546e3, 500},    // batch 500 and 4000
    {"resnet18", 500e6, 14.5e6, 100},  // batch 100 and 300: 1.80 and 4.64 GB
    {"resnet34", 800e6, 24.4e6, 100},  // batch 100 and 300: 2.99 and 7.75 GB
};

const Cost& CostOf(const std::string& model) {
  for (const Cost& c : kCosts)
    if (model == c.model) return c;
  return kCosts[0];
}

void LeNet(Chain& c, std::mt19937& rng, const LayerFactory& make) {
  // Pooling before ReLU: max pooling and ReLU commute (both monotone), so this is the same
  // function with the same gradients as conv-ReLU-pool, and ReLU runs on a quarter of the data.
  c.Add(make.Conv("conv1", ConvSpec{1, 16, 5, 1, 2, true}, rng));
  c.Add(make.MaxPool("pool1", 2));
  c.Add(make.Relu("relu1"));
  c.Add(make.Conv("conv2", ConvSpec{16, 32, 5, 1, 0, true}, rng));
  c.Add(make.MaxPool("pool2", 2));
  c.Add(make.Relu("relu2"));
  c.Add(make.Linear("fc1", 32 * 5 * 5, 120, rng));
  c.Add(make.Relu("relu3"));
  c.Add(make.Linear("fc2", 120, 84, rng));
  c.Add(make.Relu("relu4"));
  c.Add(make.Linear("fc3", 84, 10, rng));
}

void ResNet(Chain& c, std::mt19937& rng, const LayerFactory& make) {
  c.Add(make.Conv("stem.conv", ConvSpec{1, 16, 3, 1, 1, false}, rng));
  make.AddBatchNorm(c, "stem.bn", 16, "stem.relu");
  c.Add(std::make_unique<Residual>("block1", 16, 16, 1, rng, make));
  c.Add(std::make_unique<Residual>("block2", 16, 32, 2, rng, make));
  c.Add(std::make_unique<Residual>("block3", 32, 64, 2, rng, make));
  c.Add(make.GlobalAvgPool("pool"));
  c.Add(make.Linear("fc", 64, 10, rng));
}

// ResNet-18 and ResNet-34 as trained on 32x32 images (the CIFAR-10 variant of He et al.'s
// networks: a 3x3 stem of 64 channels instead of ImageNet's 7x7 and max pooling), four stages of
// basic blocks with 64, 128, 256 and 512 channels (strides 1, 2, 2, 2), `blocks` per stage,
// global average pooling and a 512-10 linear layer.
void DeepResNet(Chain& c, std::mt19937& rng, const LayerFactory& make, int channels, const int (&blocks)[4]) {
  c.Add(make.Conv("stem.conv", ConvSpec{channels, 64, 3, 1, 1, false}, rng));
  make.AddBatchNorm(c, "stem.bn", 64, "stem.relu");
  int in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int out = 64 << stage;
    for (int b = 0; b < blocks[stage]; ++b) {
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      c.Add(std::make_unique<Residual>(name, in, out, b == 0 && stage > 0 ? 2 : 1, rng, make));
      in = out;
    }
  }
  c.Add(make.GlobalAvgPool("pool"));
  c.Add(make.Linear("fc", 512, 10, rng));
}

}  // namespace

size_t Model::ParamCount() const {
  size_t n = 0;
  for (const Param* p : net.Params()) n += p->value.size();
  return n;
}

StatusOr<std::unique_ptr<Model>> BuildModel(const std::string& name, uint64_t seed, Layers layers, int channels) {
  std::unique_ptr<LayerFactory> make = MakeLayerFactory(layers);
  if (!make && layers == Layers::kCuda)
    return InvalidArgument("the cuda layers need a device: build with CudaLayerFactory");
  if (!make)
    return InvalidArgument(
        "--layers onednn: this hoop-train was built without oneDNN (install libdnnl-dev and "
        "configure again)");
  return BuildModel(name, seed, *make, channels);
}

StatusOr<std::unique_ptr<Model>> BuildModel(const std::string& name, uint64_t seed, const LayerFactory& make,
                                            int channels) {
  auto m = std::make_unique<Model>();
  m->name = name;
  m->device = make.device();
  m->math = make.Math();
  const bool deep = name == "resnet18" || name == "resnet34";
  m->input = deep ? Shape{0, channels, 32, 32} : Shape{0, channels, 28, 28};
  std::mt19937 rng(static_cast<uint32_t>(seed));
  if (name == "lenet") {
    if (channels != 1)
      return InvalidArgument("lenet takes 1-channel 28x28 images (Fashion-MNIST); use resnet18 or resnet34");
    LeNet(m->net, rng, make);
  } else if (name == "resnet") {
    if (channels != 1)
      return InvalidArgument("resnet takes 1-channel 28x28 images (Fashion-MNIST); use resnet18 or resnet34");
    ResNet(m->net, rng, make);
  } else if (name == "resnet18") {
    DeepResNet(m->net, rng, make, channels, {2, 2, 2, 2});
  } else if (name == "resnet34") {
    DeepResNet(m->net, rng, make, channels, {3, 4, 6, 3});
  } else {
    return InvalidArgument("unknown model '" + name + "': expected " + std::string(kModelNames));
  }
  return m;
}

int EvalChunk(const std::string& model) { return CostOf(model).eval_chunk; }

std::string BatchTooLarge(const std::string& model, int batch, int local_ranks) {
  const Cost& cost = CostOf(model);
  const double fixed = cost.fixed, per_image = cost.per_image;
  const double need = fixed + per_image * std::max(batch, cost.eval_chunk);
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double share = memory / std::max(1, local_ranks);
  if (need <= share) return "";
  char text[256];
  std::snprintf(text, sizeof text,
                "--batch %d: %s needs about %.1f GB per rank (%.0f KB per image), more than this "
                "host's %.1f GB shared by %d rank(s) allows; the largest that fits is about %d",
                batch, model.c_str(), need / 1e9, per_image / 1e3, memory / 1e9, local_ranks,
                static_cast<int>(std::max(0.0, (share - fixed) / per_image)));
  return text;
}

}  // namespace hoop::train
