#include "trainer/conv2d.h"

#include <algorithm>

#include "trainer/gemm.h"

namespace hoop::train {

Conv2d::Conv2d(std::string name, ConvSpec spec, std::mt19937& rng) : Layer(std::move(name)), s_(spec) {
  weight_.name = this->name() + ".weight";
  weight_.value.Resize({s_.out, s_.in, s_.kernel, s_.kernel});
  weight_.grad.Resize(weight_.value.shape, true);
  HeInit(weight_.value, s_.in * s_.kernel * s_.kernel, rng);
  if (s_.bias) {
    bias_.name = this->name() + ".bias";
    bias_.value.Resize({s_.out}, true);
    bias_.grad.Resize({s_.out}, true);
  }
}

Shape Conv2d::OutShape(const Shape& in) const {
  int oh = (in.h + 2 * s_.pad - s_.kernel) / s_.stride + 1;
  int ow = (in.w + 2 * s_.pad - s_.kernel) / s_.stride + 1;
  if (in.c != s_.in || oh <= 0 || ow <= 0) return {0, 0, 0, 0};
  return {in.n, s_.out, oh, ow};
}

std::vector<Param*> Conv2d::Params() {
  if (s_.bias) return {&weight_, &bias_};
  return {&weight_};
}

// The output columns [lo, hi) whose input column ox * stride - pad + kx lies inside [0, w).
static void ValidColumns(int ow, int w, int stride, int pad, int kx, int* lo, int* hi) {
  int first = pad - kx;  // input column 0 is output column first / stride
  *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  int last = w - 1 + pad - kx;  // the last input column
  *hi = last < 0 ? 0 : std::min(ow, last / stride + 1);
  if (*lo > *hi) *lo = *hi;
}

void Conv2d::Im2Col(const float* x, int h, int w, float* col) const {
  const int k = s_.kernel, st = s_.stride, oh = (h + 2 * s_.pad - k) / st + 1, ow = (w + 2 * s_.pad - k) / st + 1;
  for (int c = 0; c < s_.in; ++c)
    for (int ky = 0; ky < k; ++ky)
      for (int kx = 0; kx < k; ++kx) {
        float* __restrict row = col + ((c * k + ky) * k + kx) * oh * ow;
        int lo, hi;
        ValidColumns(ow, w, st, s_.pad, kx, &lo, &hi);
        for (int oy = 0; oy < oh; ++oy) {
          int iy = oy * st - s_.pad + ky;
          float* __restrict r = row + oy * ow;
          if (iy < 0 || iy >= h) {
            std::fill(r, r + ow, 0.0f);
            continue;
          }
          const float* __restrict xr = x + (c * h + iy) * w;
          const int off = kx - s_.pad;  // input column of output column 0
          std::fill(r, r + lo, 0.0f);
          if (st == 1) {
            std::copy(xr + lo + off, xr + hi + off, r + lo);
          } else {
            for (int ox = lo; ox < hi; ++ox) r[ox] = xr[ox * st + off];
          }
          std::fill(r + hi, r + ow, 0.0f);
        }
      }
}

void Conv2d::Col2Im(const float* col, int h, int w, float* x) const {
  const int k = s_.kernel, st = s_.stride, oh = (h + 2 * s_.pad - k) / st + 1, ow = (w + 2 * s_.pad - k) / st + 1;
  std::fill(x, x + s_.in * h * w, 0.0f);
  for (int c = 0; c < s_.in; ++c)
    for (int ky = 0; ky < k; ++ky)
      for (int kx = 0; kx < k; ++kx) {
        const float* __restrict row = col + ((c * k + ky) * k + kx) * oh * ow;
        int lo, hi;
        ValidColumns(ow, w, st, s_.pad, kx, &lo, &hi);
        for (int oy = 0; oy < oh; ++oy) {
          int iy = oy * st - s_.pad + ky;
          if (iy < 0 || iy >= h) continue;
          float* __restrict xr = x + (c * h + iy) * w;
          const int off = kx - s_.pad;
          const float* __restrict r = row + oy * ow;
          for (int ox = lo; ox < hi; ++ox) xr[ox * st + off] += r[ox];
        }
      }
}

void Conv2d::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool& pool) {
  out.Resize(OutShape(in.shape));
  const int ckk = s_.in * s_.kernel * s_.kernel, ohw = out.shape.h * out.shape.w;
  col_.resize(pool.threads());
  pool.For(in.shape.n, [&](int b, int e, int t) {
    auto& col = col_[t];
    col.resize(static_cast<size_t>(ckk) * ohw);
    for (int i = b; i < e; ++i) {
      float* y = out.item(i);
      if (s_.bias) {
        for (int o = 0; o < s_.out; ++o) std::fill(y + o * ohw, y + (o + 1) * ohw, bias_.value.data[o]);
      }
      Im2Col(in.item(i), in.shape.h, in.shape.w, col.data());
      Gemm(false, false, s_.out, ohw, ckk, 1.0f, weight_.value.ptr(), ckk, col.data(), ohw, s_.bias ? 1.0f : 0.0f, y,
           ohw);
    }
  });
}

void Conv2d::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  const int ckk = s_.in * s_.kernel * s_.kernel, ohw = out.shape.h * out.shape.w;
  const int threads = pool.threads();
  col_.resize(threads);
  dw_.resize(threads);
  db_.resize(threads);
  if (din) din->Resize(in.shape);
  pool.For(in.shape.n, [&](int b, int e, int t) {
    auto& col = col_[t];
    auto& dw = dw_[t];
    auto& db = db_[t];
    col.resize(static_cast<size_t>(ckk) * ohw);
    dw.assign(weight_.value.size(), 0.0f);
    db.assign(s_.out, 0.0f);
    for (int i = b; i < e; ++i) {
      const float* dy = dout.item(i);
      Im2Col(in.item(i), in.shape.h, in.shape.w, col.data());
      Gemm(false, true, s_.out, ckk, ohw, 1.0f, dy, ohw, col.data(), ohw, 1.0f, dw.data(), ckk);
      if (s_.bias)
        for (int o = 0; o < s_.out; ++o) {
          float sum = 0;
          for (int p = 0; p < ohw; ++p) sum += dy[o * ohw + p];
          db[o] += sum;
        }
      if (din) {
        Gemm(true, false, ckk, ohw, s_.out, 1.0f, weight_.value.ptr(), ckk, dy, ohw, 0.0f, col.data(), ohw);
        Col2Im(col.data(), in.shape.h, in.shape.w, din->item(i));
      }
    }
  });
  // Sum the threads' partial gradients in thread order (deterministic for a fixed --threads).
  int used = std::min(threads, std::max(1, in.shape.n));
  weight_.grad.Zero();
  if (s_.bias) bias_.grad.Zero();
  for (int t = 0; t < used && in.shape.n > 0; ++t) {
    for (size_t j = 0; j < weight_.grad.size(); ++j) weight_.grad.ptr()[j] += dw_[t][j];
    if (s_.bias)
      for (int o = 0; o < s_.out; ++o) bias_.grad.ptr()[o] += db_[t][o];
  }
}

}  // namespace hoop::train
