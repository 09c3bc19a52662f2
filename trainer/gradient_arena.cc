#include "trainer/gradient_arena.h"

#include <limits>
#include <stdexcept>
#include <string>

namespace hoop::train {

void GradientArena::Bind(const std::vector<Layer*>& layers, size_t bucket_bytes) {
  if (bound()) throw std::logic_error("a gradient arena is bound once");
  // Where each layer's gradients go, and the buckets they make.
  size_t total = 0;
  int device = -1;
  for (Layer* layer : layers) {
    const auto params = layer->Params();
    if (params.empty()) continue;
    if (buckets_.empty() || buckets_.back().count * sizeof(float) >= bucket_bytes) buckets_.push_back({total, 0, 0});
    for (Param* p : params) {
      device = p->grad.device();
      total += p->grad.size();
      buckets_.back().count += p->grad.size();
    }
    ++buckets_.back().layers;
    bucket_of_[layer] = static_cast<int>(buckets_.size() - 1);
  }
  if (total > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw std::length_error("a gradient arena holds at most 2^31 - 1 floats; this model has " + std::to_string(total));
  bound_ = true;
  storage_.shape = Shape{static_cast<int>(total)};
  storage_.Place(device);
  storage_.Resize(storage_.shape, true);
  float* at = base();
  for (Layer* layer : layers)
    for (Param* p : layer->Params()) {
      const size_t n = p->grad.size();
      p->grad.BindExternal(at);
      at += n;
    }
}

int GradientArena::BucketOf(const Layer* layer) const {
  auto it = bucket_of_.find(layer);
  return it == bucket_of_.end() ? -1 : it->second;
}

}  // namespace hoop::train
