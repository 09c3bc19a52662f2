#include "trainer/data_parallel.h"

namespace hoop::train {

namespace {
Buffer Of(Tensor& t) { return Buffer{t.ptr(), t.size(), DType::kF32, t.kind}; }

// Waits for all (a failed tensor does not stop the others from being waited for); the first error.
Status WaitAll(std::vector<fusion::Handle>& hs) {
  Status first;
  for (auto& h : hs)
    if (Status s = h.Wait(); !s.ok() && first.ok()) first = s;
  hs.clear();
  return first;
}
}  // namespace

Status DataParallel::Broadcast(const std::vector<std::pair<std::string, Tensor*>>& tensors) {
  std::vector<fusion::Handle> hs;
  for (auto& [name, t] : tensors) hs.push_back(rt_.Broadcast("bcast." + name, Of(*t), Of(*t), 0));
  return WaitAll(hs);
}

void DataParallel::UseArena(GradientArena& arena) {
  arena_ = &arena;
  left_.clear();
  for (const auto& b : arena.buckets()) left_.push_back(b.layers);
}

void DataParallel::GradientsReady(Layer& layer) {
  if (arena_) {
    const int b = arena_->BucketOf(&layer);
    if (b < 0 || --left_[static_cast<size_t>(b)] != 0) return;
    const auto& bucket = arena_->buckets()[static_cast<size_t>(b)];
    const Buffer view{arena_->BucketData(b), bucket.count, DType::kF32, arena_->kind()};
    fusion::TensorOptions o;
    o.fuse = false;  // a bucket already: reduced where it lies
    o.compression = grad_wire_;
    pending_.push_back(rt_.Allreduce("grad.bucket." + std::to_string(b), view, view, ReduceOp::kSum, o));
    return;
  }
  fusion::TensorOptions o;
  o.compression = grad_wire_;
  for (Param* p : layer.Params())
    pending_.push_back(rt_.Allreduce("grad." + p->name, Of(p->grad), Of(p->grad), ReduceOp::kSum, o));
}

Status DataParallel::Wait() {
  Status status = WaitAll(pending_);
  if (!arena_) return status;
  for (size_t b = 0; b < left_.size(); ++b) {
    if (left_[b] != 0 && status.ok())  // a layer's backward never reported: its bucket was not reduced
      status = Internal("gradient bucket " + std::to_string(b) + " was never complete this step (" +
                        std::to_string(left_[b]) + " of its layers did not report their gradients)");
    left_[b] = arena_->buckets()[b].layers;
  }
  return status;
}

Status DataParallel::Average(const std::vector<std::pair<std::string, Tensor*>>& tensors, double weight) {
  std::vector<fusion::Handle> hs;
  for (auto& [name, t] : tensors) {
    fusion::TensorOptions o;
    // The runtime scales a tensor alike on every rank, and weights differ where the ranks' shares
    // do (--shares, --balance speed, --elastic on fewer ranks): host tensors are scaled here.
    if (t->on_device()) {
      o.prescale = weight;
    } else {
      float* v = t->ptr();
      for (size_t i = 0; i < t->size(); ++i) v[i] = static_cast<float>(v[i] * weight);
    }
    hs.push_back(rt_.Allreduce("avg." + name, Of(*t), Of(*t), ReduceOp::kSum, o));
  }
  return WaitAll(hs);
}

Status DataParallel::SumDoubles(const std::string& name, std::vector<double>& values) {
  Buffer b{values.data(), values.size(), DType::kF64, MemKind::kHost};
  return rt_.Allreduce(name, b, b, ReduceOp::kSum).Wait();
}

}  // namespace hoop::train
