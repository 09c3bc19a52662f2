#include "trainer/linear.h"

#include <algorithm>
#include <cmath>

#include "trainer/gemm.h"

namespace hoop::train {

Linear::Linear(std::string name, int in, int out, std::mt19937& rng) : Layer(std::move(name)), in_(in), out_(out) {
  weight_.name = this->name() + ".weight";
  weight_.value.Resize({out, in});
  weight_.grad.Resize({out, in}, true);
  HeInit(weight_.value, in, rng);
  bias_.name = this->name() + ".bias";
  bias_.value.Resize({out}, true);
  bias_.grad.Resize({out}, true);
}

Shape Linear::OutShape(const Shape& in) const {
  if (static_cast<int>(in.per_item()) != in_) return {0, 0, 0, 0};
  return {in.n, out_};
}

void Linear::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool& pool) {
  out.Resize(OutShape(in.shape));
  pool.For(in.shape.n, [&](int b, int e, int) {
    float* y = out.item(b);
    for (int i = b; i < e; ++i) std::copy(bias_.value.data.begin(), bias_.value.data.end(), out.item(i));
    Gemm(false, true, e - b, out_, in_, 1.0f, in.item(b), in_, weight_.value.ptr(), in_, 1.0f, y, out_);
  });
}

void Linear::Backward(const Tensor& in, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  const int n = in.shape.n;
  pool.For(out_, [&](int b, int e, int) {
    Gemm(true, false, e - b, in_, n, 1.0f, dout.ptr() + b, out_, in.ptr(), in_, 0.0f, weight_.grad.ptr() + b * in_,
         in_);
    for (int o = b; o < e; ++o) {
      float sum = 0;
      for (int i = 0; i < n; ++i) sum += dout.data[static_cast<size_t>(i) * out_ + o];
      bias_.grad.ptr()[o] = sum;
    }
  });
  if (!din) return;
  din->Resize(in.shape);
  pool.For(n, [&](int b, int e, int) {
    Gemm(false, false, e - b, in_, out_, 1.0f, dout.item(b), out_, weight_.value.ptr(), in_, 0.0f, din->item(b), in_);
  });
}

}  // namespace hoop::train
