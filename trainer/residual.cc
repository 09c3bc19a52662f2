#include "trainer/residual.h"

#include "trainer/layout.h"

namespace hoop::train {

Residual::Residual(std::string name, int in, int out, int stride, std::mt19937& rng, const LayerFactory& make)
    : Layer(std::move(name)), math_(make.Math()) {
  const std::string& n = this->name();
  body_.Add(make.Conv(n + ".conv1", ConvSpec{in, out, 3, stride, 1, false}, rng));
  make.AddBatchNorm(body_, n + ".bn1", out, n + ".relu1");
  body_.Add(make.Conv(n + ".conv2", ConvSpec{out, out, 3, 1, 1, false}, rng));
  make.AddBatchNorm(body_, n + ".bn2", out, "");
  if (in != out || stride != 1) {
    shortcut_.Add(make.Conv(n + ".shortcut.conv", ConvSpec{in, out, 1, stride, 0, false}, rng));
    make.AddBatchNorm(shortcut_, n + ".shortcut.bn", out, "");
  }
}

Shape Residual::OutShape(const Shape& in) const {
  Shape a = body_.OutShape(in), b = shortcut_.OutShape(in);
  if (a.c == 0 || !(a == b)) return {0, 0, 0, 0};
  return a;
}

void Residual::Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) {
  const Tensor& a = body_.Forward(in, mode, pool);
  const Tensor* s = &shortcut_.Forward(in, mode, pool);
  short_block_ = s->block;
  if (s->block != a.block) {
    Relayout(*s, a.block, moved_);
    s = &moved_;
  }
  const Tensor& b = *s;
  math_->AddRelu(a, b, out);
  out.block = a.block;
}

void Residual::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  math_->ReluMask(out, dout, dsum_);
  dsum_.block = out.block;
  body_.Backward(in, dsum_, din, pool);
  // The shortcut's gradient in its own output's layout (for an identity shortcut, the input's).
  const Tensor* ds = &dsum_;
  if (short_block_ != dsum_.block) {
    Relayout(dsum_, short_block_, dmoved_);
    ds = &dmoved_;
  }
  if (shortcut_.empty()) {
    if (din) math_->Accumulate(*ds, *din);
    return;
  }
  shortcut_.Backward(in, *ds, din ? &dshort_ : nullptr, pool);
  if (din) math_->Accumulate(dshort_, *din);
}

std::vector<Param*> Residual::Params() {
  auto ps = body_.Params();
  for (Param* p : shortcut_.Params()) ps.push_back(p);
  return ps;
}

std::vector<std::pair<std::string, Tensor*>> Residual::Buffers() {
  auto bs = body_.Buffers();
  for (auto& b : shortcut_.Buffers()) bs.push_back(b);
  return bs;
}

}  // namespace hoop::train
