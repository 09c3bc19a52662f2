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

void DataParallel::GradientsReady(Layer& layer) {
  for (Param* p : layer.Params())
    pending_.push_back(rt_.Allreduce("grad." + p->name, Of(p->grad), Of(p->grad), ReduceOp::kSum));
}

Status DataParallel::Wait() { return WaitAll(pending_); }

Status DataParallel::Average(const std::vector<std::pair<std::string, Tensor*>>& tensors, double weight) {
  std::vector<fusion::Handle> hs;
  for (auto& [name, t] : tensors) {
    fusion::TensorOptions o;
    o.prescale = weight;
    hs.push_back(rt_.Allreduce("avg." + name, Of(*t), Of(*t), ReduceOp::kSum, o));
  }
  return WaitAll(hs);
}

Status DataParallel::SumDoubles(const std::string& name, std::vector<double>& values) {
  Buffer b{values.data(), values.size(), DType::kF64, MemKind::kHost};
  return rt_.Allreduce(name, b, b, ReduceOp::kSum).Wait();
}

}  // namespace hoop::train
