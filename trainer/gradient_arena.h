// The model's gradients as one array (PyTorch DDP's gradient buckets, as views): every
// parameter's gradient becomes a view (Tensor::external) into one allocation, host or on the
// model's device, laid out in the order backward produces them (the layers last to first), and
// cut at layer boundaries into buckets of at least `bucket_bytes`. A bucket is one contiguous
// range of floats, so the data-parallel strategy hands each to the fusion runtime as one tensor,
// once its last layer's backward returns, reduced in place: no copy into a fusion buffer and
// back. The layers write their gradients through ptr() as before and never see the difference.
#pragma once
#include <cstddef>
#include <unordered_map>
#include <vector>

#include "trainer/layer.h"
#include "trainer/tensor.h"

namespace hoop::train {

class GradientArena {
 public:
  struct Bucket {
    size_t offset = 0, count = 0;  // floats into the arena
    int layers = 0;                // layers with parameters whose gradients it holds
  };
  // DDP's default cap: small enough that the first buckets travel while backward goes on.
  static constexpr size_t kBucketBytes = 25u << 20;

  GradientArena() = default;
  GradientArena(const GradientArena&) = delete;
  GradientArena& operator=(const GradientArena&) = delete;

  // `layers` in backward's order; their parameters' gradients move into the arena (values kept).
  // Once only: the gradients stay views of this arena for its lifetime.
  void Bind(const std::vector<Layer*>& layers, size_t bucket_bytes = kBucketBytes);
  bool bound() const { return bound_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // The bucket holding `layer`'s gradients, or -1 (a layer without parameters, or not bound).
  int BucketOf(const Layer* layer) const;
  // The bucket's floats, in the arena's memory (kind(), device()).
  float* BucketData(int b) { return base() + buckets_[static_cast<size_t>(b)].offset; }
  MemKind kind() const { return storage_.kind; }
  int device() const { return storage_.device(); }
  size_t floats() const { return storage_.size(); }

 private:
  float* base() { return storage_.ptr(); }
  Tensor storage_;  // the arena itself: host `data`, or device memory
  std::vector<Bucket> buckets_;
  std::unordered_map<const Layer*, int> bucket_of_;
  bool bound_ = false;
};

}  // namespace hoop::train
