#include "trainer/relu.h"

namespace hoop::train {

void Relu::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool& pool) {
  out.Resize(in.shape);
  const size_t per = in.shape.per_item();
  pool.For(in.shape.n, [&](int b, int e, int) {
    for (size_t j = b * per; j < e * per; ++j) out.data[j] = in.data[j] > 0 ? in.data[j] : 0.0f;
  });
}

void Relu::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  if (!din) return;
  din->Resize(in.shape);
  const size_t per = in.shape.per_item();
  pool.For(in.shape.n, [&](int b, int e, int) {
    for (size_t j = b * per; j < e * per; ++j) din->data[j] = out.data[j] > 0 ? dout.data[j] : 0.0f;
  });
}

}  // namespace hoop::train
