#include "trainer/residual.h"

#include "trainer/batchnorm.h"
#include "trainer/relu.h"

namespace hoop::train {

Residual::Residual(std::string name, int in, int out, int stride, std::mt19937& rng, const ConvFactory& conv)
    : Layer(std::move(name)) {
  const std::string& n = this->name();
  body_.Add(conv(n + ".conv1", ConvSpec{in, out, 3, stride, 1, false}, rng));
  body_.Add(std::make_unique<BatchNorm>(n + ".bn1", out));
  body_.Add(std::make_unique<Relu>(n + ".relu1"));
  body_.Add(conv(n + ".conv2", ConvSpec{out, out, 3, 1, 1, false}, rng));
  body_.Add(std::make_unique<BatchNorm>(n + ".bn2", out));
  if (in != out || stride != 1) {
    shortcut_.Add(conv(n + ".shortcut.conv", ConvSpec{in, out, 1, stride, 0, false}, rng));
    shortcut_.Add(std::make_unique<BatchNorm>(n + ".shortcut.bn", out));
  }
}

Shape Residual::OutShape(const Shape& in) const {
  Shape a = body_.OutShape(in), b = shortcut_.OutShape(in);
  if (a.c == 0 || !(a == b)) return {0, 0, 0, 0};
  return a;
}

void Residual::Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) {
  const Tensor& a = body_.Forward(in, mode, pool);
  const Tensor& b = shortcut_.Forward(in, mode, pool);
  out.Resize(a.shape);
  for (size_t j = 0; j < out.size(); ++j) {
    float v = a.data[j] + b.data[j];
    out.data[j] = v > 0 ? v : 0.0f;
  }
}

void Residual::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  dsum_.Resize(out.shape);
  for (size_t j = 0; j < out.size(); ++j) dsum_.data[j] = out.data[j] > 0 ? dout.data[j] : 0.0f;
  body_.Backward(in, dsum_, din, pool);
  if (shortcut_.empty()) {
    if (din)
      for (size_t j = 0; j < din->size(); ++j) din->data[j] += dsum_.data[j];
    return;
  }
  shortcut_.Backward(in, dsum_, din ? &dshort_ : nullptr, pool);
  if (din)
    for (size_t j = 0; j < din->size(); ++j) din->data[j] += dshort_.data[j];
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
