// Data parallelism over the tensor fusion runtime: what makes N ranks train one model.
//
//  - Start: rank 0's parameters and buffers are broadcast, so every rank begins identical.
//  - Backward: as soon as a layer's backward returns, each of its parameter gradients is
//    submitted as a named sum-allreduce ("grad.<param>"); the runtime fuses whatever is ready
//    each cycle and reduces it while earlier layers are still computing. With the model's
//    gradient arena (UseArena, gradient_arena.h) a whole bucket goes instead, once its last
//    layer is done, as one unfused tensor ("grad.bucket.<i>") reduced in place: no packing.
//    The loss gradient is already scaled by 1 / (the step's images over all ranks), so the sum
//    is the exact mean.
//  - Before the optimizer: Wait() blocks until every gradient of the step has come back; that
//    time is what the metrics call waiting on communication.
//  - Batch norm's running statistics are averaged before evaluation and checkpoints.
// Every wait is bounded by the runtime (HOOP_TIMEOUT); a failure names the tensor and the cause.
#pragma once
#include <optional>
#include <vector>

#include "tensorfusion/runtime.h"
#include "trainer/gradient_arena.h"
#include "trainer/layer.h"

namespace hoop::train {

class DataParallel {
 public:
  // grad_wire: the gradient buckets' compression on the wire (--grad-wire), or none: f32.
  explicit DataParallel(fusion::Runtime& rt, std::optional<Compression> grad_wire = std::nullopt)
      : rt_(rt), grad_wire_(grad_wire) {}
  // Broadcasts each tensor from rank 0 (name-tagged; every rank passes the same list).
  Status Broadcast(const std::vector<std::pair<std::string, Tensor*>>& tensors);
  // From now on GradientsReady hands over the arena's buckets (bound; every rank alike).
  void UseArena(GradientArena& arena);
  // Submits the layer's gradients (with an arena: its bucket, once the bucket's layers are all
  // done); returns at once.
  void GradientsReady(Layer& layer);
  // Waits for everything GradientsReady submitted since the last Wait.
  Status Wait();
  // Replaces each tensor with the sum over the ranks of weight x tensor: the mean when every
  // rank's weight is 1 / ranks, a mean weighted by each rank's share of the batch otherwise.
  Status Average(const std::vector<std::pair<std::string, Tensor*>>& tensors, double weight);
  // Sums f64 values over the ranks in place (metrics and evaluation counts).
  Status SumDoubles(const std::string& name, std::vector<double>& values);

 private:
  fusion::Runtime& rt_;
  std::optional<Compression> grad_wire_;
  std::vector<fusion::Handle> pending_;
  GradientArena* arena_ = nullptr;
  std::vector<int> left_;  // per bucket: its layers whose gradients have not come this step
};

}  // namespace hoop::train
