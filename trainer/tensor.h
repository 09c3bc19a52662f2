// A trainer tensor: an owned, contiguous f32 array with a shape (N, C, H, W; missing trailing
// dimensions are 1, so a linear layer's N x F is {N, F, 1, 1}). The memory kind travels with it
// as it does with hoop's Buffers: every layer here runs on host memory; a cuDNN/cuBLAS back end
// would add device tensors behind the same Layer interface (layer.h) without changing callers.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace hoop::train {

struct Shape {
  int n = 0, c = 1, h = 1, w = 1;
  size_t size() const { return static_cast<size_t>(n) * c * h * w; }
  size_t per_item() const { return static_cast<size_t>(c) * h * w; }
  bool operator==(const Shape&) const = default;
  std::string str() const;
};

struct Tensor {
  Shape shape;
  std::vector<float> data;
  MemKind kind = MemKind::kHost;
  // Channels per block when the data is in oneDNN's blocked layout nChw{block}c (N, C/block,
  // H, W, block; C a multiple of block), which its fastest kernels read and write; 0 for plain
  // NCHW. Only layers that say they take blocked tensors (Layer::TakesBlocked) ever see one;
  // the chain converts for the others (layout.h). Resize makes a tensor plain.
  int block = 0;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(s), data(s.size()) {}
  // Reshapes (plain layout), reusing the allocation; contents are unspecified unless `zero`.
  void Resize(Shape s, bool zero = false);
  void Zero();
  float* ptr() { return data.data(); }
  const float* ptr() const { return data.data(); }
  float* item(int i) { return data.data() + i * shape.per_item(); }
  const float* item(int i) const { return data.data() + i * shape.per_item(); }
  size_t size() const { return data.size(); }
};

}  // namespace hoop::train
