#include "trainer/model.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "trainer/linear.h"
#include "trainer/pool.h"
#include "trainer/relu.h"
#include "trainer/residual.h"

namespace hoop::train {

namespace {

// Measured bytes per image of a rank's peak memory (BatchTooLarge).
constexpr double kLenetBytesPerImage = 306e3;   // 299 KiB
constexpr double kResnetBytesPerImage = 1546e3;  // 1510 KiB

void LeNet(Chain& c, std::mt19937& rng, const LayerFactory& make) {
  // Pooling before ReLU: max pooling and ReLU commute (both monotone), so this is the same
  // function with the same gradients as conv-ReLU-pool, and ReLU runs on a quarter of the data.
  c.Add(make.Conv("conv1", ConvSpec{1, 16, 5, 1, 2, true}, rng));
  c.Add(make.MaxPool("pool1", 2));
  c.Add(std::make_unique<Relu>("relu1"));
  c.Add(make.Conv("conv2", ConvSpec{16, 32, 5, 1, 0, true}, rng));
  c.Add(make.MaxPool("pool2", 2));
  c.Add(std::make_unique<Relu>("relu2"));
  c.Add(std::make_unique<Linear>("fc1", 32 * 5 * 5, 120, rng));
  c.Add(std::make_unique<Relu>("relu3"));
  c.Add(std::make_unique<Linear>("fc2", 120, 84, rng));
  c.Add(std::make_unique<Relu>("relu4"));
  c.Add(std::make_unique<Linear>("fc3", 84, 10, rng));
}

void ResNet(Chain& c, std::mt19937& rng, const LayerFactory& make) {
  c.Add(make.Conv("stem.conv", ConvSpec{1, 16, 3, 1, 1, false}, rng));
  make.AddBatchNorm(c, "stem.bn", 16, "stem.relu");
  c.Add(std::make_unique<Residual>("block1", 16, 16, 1, rng, make));
  c.Add(std::make_unique<Residual>("block2", 16, 32, 2, rng, make));
  c.Add(std::make_unique<Residual>("block3", 32, 64, 2, rng, make));
  c.Add(std::make_unique<GlobalAvgPool>("pool"));
  c.Add(std::make_unique<Linear>("fc", 64, 10, rng));
}

}  // namespace

size_t Model::ParamCount() const {
  size_t n = 0;
  for (const Param* p : net.Params()) n += p->value.size();
  return n;
}

StatusOr<std::unique_ptr<Model>> BuildModel(const std::string& name, uint64_t seed, Layers layers) {
  auto m = std::make_unique<Model>();
  m->name = name;
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::unique_ptr<LayerFactory> make = MakeLayerFactory(layers);
  if (!make)
    return InvalidArgument("--layers onednn: this hoop-train was built without oneDNN (install libdnnl-dev and "
                           "configure again)");
  if (name == "lenet") {
    LeNet(m->net, rng, *make);
  } else if (name == "resnet") {
    ResNet(m->net, rng, *make);
  } else {
    return InvalidArgument("unknown model '" + name + "': expected lenet or resnet");
  }
  return m;
}

std::string BatchTooLarge(const std::string& model, int batch, int local_ranks) {
  // Peak resident memory of one rank, measured with /usr/bin/time at --batch 500 and 4000:
  // the difference over 3500 images is the per-image cost, about 70 MB the rest, rounded up to
  // 100 MB (docs/PERF.md, "hoop-train memory").
  const double fixed = 100e6, per_image = model == "lenet" ? kLenetBytesPerImage : kResnetBytesPerImage;
  const double need = fixed + per_image * std::max(batch, 500);
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double share = memory / std::max(1, local_ranks);
  if (need <= share) return "";
  char text[256];
  std::snprintf(text, sizeof text, "--batch %d: %s needs about %.1f GB per rank (%.0f KB per image), more than this "
                "host's %.1f GB shared by %d rank(s) allows; the largest that fits is about %d",
                batch, model.c_str(), need / 1e9, per_image / 1e3, memory / 1e9, local_ranks,
                static_cast<int>(std::max(0.0, (share - fixed) / per_image)));
  return text;
}

}  // namespace hoop::train
