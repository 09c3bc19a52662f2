#include "trainer/pool.h"

namespace hoop::train {

Shape MaxPool::OutShape(const Shape& in) const {
  if (in.h < k_ || in.w < k_) return {0, 0, 0, 0};
  return {in.n, in.c, in.h / k_, in.w / k_};
}

void MaxPool::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool& pool) {
  out.Resize(OutShape(in.shape));
  argmax_.resize(out.size());
  const int c = in.shape.c, h = in.shape.h, w = in.shape.w, oh = out.shape.h, ow = out.shape.w;
  pool.For(in.shape.n, [&](int b, int e, int) {
    for (int i = b; i < e; ++i) {
      const float* x = in.item(i);
      float* y = out.item(i);
      int* am = argmax_.data() + i * out.shape.per_item();
      for (int ch = 0; ch < c; ++ch)
        for (int oy = 0; oy < oh; ++oy) {
          const int row0 = (ch * h + oy * k_) * w;
          float* __restrict yr = y + (ch * oh + oy) * ow;
          int* __restrict ar = am + (ch * oh + oy) * ow;
          for (int ox = 0; ox < ow; ++ox) {
            int best = row0 + ox * k_;
            float v = x[best];
            for (int ky = 0; ky < k_; ++ky)
              for (int kx = 0; kx < k_; ++kx) {
                int at = row0 + ky * w + ox * k_ + kx;
                if (x[at] > v) {
                  v = x[at];
                  best = at;
                }
              }
            yr[ox] = v;
            ar[ox] = best;
          }
        }
    }
  });
}

void MaxPool::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  if (!din) return;
  din->Resize(in.shape, true);
  const size_t per = out.shape.per_item();
  pool.For(in.shape.n, [&](int b, int e, int) {
    for (int i = b; i < e; ++i) {
      const float* dy = dout.item(i);
      const int* am = argmax_.data() + i * per;
      float* dx = din->item(i);
      for (size_t o = 0; o < per; ++o) dx[am[o]] += dy[o];
    }
  });
}

void GlobalAvgPool::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool& pool) {
  out.Resize(OutShape(in.shape));
  const int c = in.shape.c, hw = in.shape.h * in.shape.w;
  pool.For(in.shape.n, [&](int b, int e, int) {
    for (int i = b; i < e; ++i)
      for (int ch = 0; ch < c; ++ch) {
        const float* x = in.item(i) + ch * hw;
        float sum = 0;
        for (int p = 0; p < hw; ++p) sum += x[p];
        out.item(i)[ch] = sum / hw;
      }
  });
}

void GlobalAvgPool::Backward(const Tensor& in, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  if (!din) return;
  din->Resize(in.shape);
  const int c = in.shape.c, hw = in.shape.h * in.shape.w;
  pool.For(in.shape.n, [&](int b, int e, int) {
    for (int i = b; i < e; ++i)
      for (int ch = 0; ch < c; ++ch) {
        float g = dout.item(i)[ch] / hw;
        float* dx = din->item(i) + ch * hw;
        for (int p = 0; p < hw; ++p) dx[p] = g;
      }
  });
}

}  // namespace hoop::train
