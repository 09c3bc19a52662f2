#include "trainer/relu.h"

namespace hoop::train {

void Relu::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool& pool) {
  out.Resize(in.shape);
  out.block = in.block;  // elementwise: any layout, kept
  const size_t per = in.shape.per_item();
  pool.For(in.shape.n, [&](int b, int e, int) {
    const float* __restrict x = in.ptr();
    float* __restrict y = out.ptr();
    for (size_t j = b * per; j < e * per; ++j) y[j] = x[j] > 0 ? x[j] : 0.0f;
  });
}

void Relu::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  if (!din) return;
  din->Resize(in.shape);
  din->block = in.block;
  const size_t per = in.shape.per_item();
  pool.For(in.shape.n, [&](int b, int e, int) {
    const float* __restrict y = out.ptr();
    const float* __restrict dy = dout.ptr();
    float* __restrict dx = din->ptr();
    for (size_t j = b * per; j < e * per; ++j) dx[j] = y[j] > 0 ? dy[j] : 0.0f;
  });
}

}  // namespace hoop::train
