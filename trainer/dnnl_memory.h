// What the oneDNN layers (conv2d_dnnl, batchnorm_dnnl, pool_dnnl) share: the descriptor of a
// trainer tensor in its layout (plain NCHW or blocked nChw8c / nChw16c, tensor.h), which of
// those layouts a primitive chose, and a Slot that stands between a tensor and a primitive that
// wants another layout (a buffer of its own, filled or emptied by reorders). Internal to the
// oneDNN back end: only its .cc files include oneDNN's headers.
#pragma once
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

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

// A layer's primitives, made for the few input shapes it meets (a training batch, the last short
// one, evaluation's chunks): the entry `match` accepts, else a new one from `make`, dropping the
// oldest beyond four.
template <class P, class Match, class Make>
P& Cached(std::vector<std::unique_ptr<P>>& cache, const Match& match, const Make& make) {
  for (auto& p : cache)
    if (match(*p)) return *p;
  if (cache.size() >= 4) cache.erase(cache.begin());
  cache.push_back(make());
  return *cache.back();
}

}  // namespace hoop::train
