#include "trainer/chain.h"

#include "trainer/layout.h"

namespace hoop::train {

Shape Chain::OutShape(Shape in) const {
  for (const auto& l : layers_) {
    in = l->OutShape(in);
    if (in.c == 0) break;
  }
  return in;
}

const Tensor& Chain::Forward(const Tensor& in, Mode mode, ThreadPool& pool) {
  acts_.resize(layers_.size());
  plain_.resize(layers_.size());
  const Tensor* x = &in;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (x->block != 0 && !layers_[i]->TakesBlocked()) {
      Relayout(*x, 0, plain_[i]);
      x = &plain_[i];
    }
    layers_[i]->Forward(*x, acts_[i], mode, pool);
    x = &acts_[i];
  }
  return *x;
}

void Chain::Backward(const Tensor& in, const Tensor& dout, Tensor* din, ThreadPool& pool,
                     const std::function<void(Layer&)>& done) {
  grads_.resize(layers_.size());
  const Tensor* dy = &dout;
  for (size_t i = layers_.size(); i-- > 0;) {
    const Tensor& x = i == 0 ? in : acts_[i - 1];
    Tensor* dx = i == 0 ? din : &grads_[i - 1];
    if (x.block != 0 && !layers_[i]->TakesBlocked()) {  // it ran on plain_[i]: so does its backward
      layers_[i]->Backward(plain_[i], acts_[i], *dy, dx ? &plain_grad_ : nullptr, pool);
      if (dx) Relayout(plain_grad_, x.block, *dx);
    } else {
      layers_[i]->Backward(x, acts_[i], *dy, dx, pool);
    }
    if (done) done(*layers_[i]);
    dy = dx;
  }
  if (layers_.empty() && din) *din = dout;
}

std::vector<Param*> Chain::Params() const {
  std::vector<Param*> ps;
  for (const auto& l : layers_)
    for (Param* p : l->Params()) ps.push_back(p);
  return ps;
}

std::vector<std::pair<std::string, Tensor*>> Chain::Buffers() const {
  std::vector<std::pair<std::string, Tensor*>> bs;
  for (const auto& l : layers_)
    for (auto& b : l->Buffers()) bs.push_back(b);
  return bs;
}

}  // namespace hoop::train
