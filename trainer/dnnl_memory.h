// What the oneDNN layers (conv2d_dnnl, batchnorm_dnnl, pool_dnnl) share: the descriptor of a
// trainer tensor in its layout (plain NCHW or blocked nChw8c / nChw16c, tensor.h), which of
// those layouts a primitive chose, and a Slot that stands between a tensor and a primitive that
// wants another layout (a buffer of its own, filled or emptied by reorders). Internal to the
// oneDNN back end: only its .cc files include oneDNN's headers.
#pragma once
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "trainer/layer.h"
#include "trainer/tensor.h"

namespace hoop::train {

// A tensor of `shape` in layout `block` (0, 8 or 16 channels per block).
dnnl::memory::desc DescOf(const Shape& shape, int block);
// The `block` for which DescOf(shape, block) is `desc`, or -1 when desc is another layout.
int BlockOf(const dnnl::memory::desc& desc, const Shape& shape);

// A primitive's view of one tensor whose own layout is `user`: the layout the primitive chose
// and, where that differs, a buffer of its own.
struct Slot {
  dnnl::memory::desc user, want;
  dnnl::memory own;  // empty when `want` is `user`
  void Make(const dnnl::memory::desc& chosen, const dnnl::memory::desc& user_desc, const dnnl::engine& eng);
  // The memory the primitive reads: the tensor's, or `own` filled from it.
  dnnl::memory In(const float* data, const dnnl::engine& eng, dnnl::stream& s);
  // The memory the primitive writes; Out() then moves it into the tensor where it is not the tensor.
  dnnl::memory Target(float* data, const dnnl::engine& eng);
  void Out(float* data, const dnnl::engine& eng, dnnl::stream& s);
};

// What a layer's primitives are made for: the input's shape and layout, and the mode where the
// forward pass differs between training and evaluation (kTrain where it does not).
struct PrimitiveKey {
  Shape in;
  int block = 0;
  Mode mode = Mode::kTrain;
  bool operator==(const PrimitiveKey&) const = default;
};

// The part every layer's set of primitives has: its key, and the engine and stream it runs on.
struct PrimitivesBase {
  PrimitiveKey key;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};

// A layer's primitives, made for the few keys it meets (a training batch, the last short one,
// evaluation's chunks): the entry for `key`, else a new one (key set, then `make` fills it in),
// dropping the oldest beyond four.
template <class P, class Make>
P& Cached(std::vector<std::unique_ptr<P>>& cache, const PrimitiveKey& key, const Make& make) {
  for (auto& p : cache)
    if (p->key == key) return *p;
  if (cache.size() >= 4) cache.erase(cache.begin());
  auto p = std::make_unique<P>();
  p->key = key;
  make(*p);
  cache.push_back(std::move(p));
  return *cache.back();
}

}  // namespace hoop::train
