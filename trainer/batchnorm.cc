#include "trainer/batchnorm.h"

#include <cmath>

namespace hoop::train {

BatchNorm::BatchNorm(std::string name, int channels) : Layer(std::move(name)), c_(channels) {
  gamma_.name = this->name() + ".weight";
  gamma_.value.Resize({c_});
  std::fill(gamma_.value.data.begin(), gamma_.value.data.end(), 1.0f);
  gamma_.grad.Resize({c_}, true);
  beta_.name = this->name() + ".bias";
  beta_.value.Resize({c_}, true);
  beta_.grad.Resize({c_}, true);
  running_mean_.Resize({c_}, true);
  running_var_.Resize({c_});
  std::fill(running_var_.data.begin(), running_var_.data.end(), 1.0f);
}

std::vector<std::pair<std::string, Tensor*>> BatchNorm::Buffers() {
  return {{name() + ".running_mean", &running_mean_}, {name() + ".running_var", &running_var_}};
}

Shape BatchNorm::OutShape(const Shape& in) const {
  if (in.c != c_) return {0, 0, 0, 0};
  return in;
}

void BatchNorm::Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) {
  out.Resize(in.shape);
  const int n = in.shape.n, hw = in.shape.h * in.shape.w;
  const size_t m = static_cast<size_t>(n) * hw;
  mean_.assign(c_, 0.0f);
  invstd_.assign(c_, 0.0f);
  pool.For(c_, [&](int b, int e, int) {
    for (int c = b; c < e; ++c) {
      float mean, invstd;
      if (mode == Mode::kTrain && m > 0) {
        double sum = 0, sq = 0;
        for (int i = 0; i < n; ++i) {
          const float* x = in.item(i) + c * hw;
          for (int p = 0; p < hw; ++p) sum += x[p];
        }
        double mu = sum / m;
        for (int i = 0; i < n; ++i) {
          const float* x = in.item(i) + c * hw;
          for (int p = 0; p < hw; ++p) sq += (x[p] - mu) * (x[p] - mu);
        }
        double var = sq / m;
        mean = static_cast<float>(mu);
        invstd = static_cast<float>(1.0 / std::sqrt(var + kEps));
        double unbiased = m > 1 ? sq / (m - 1) : var;
        running_mean_.data[c] = (1 - kMomentum) * running_mean_.data[c] + kMomentum * mean;
        running_var_.data[c] = (1 - kMomentum) * running_var_.data[c] + kMomentum * static_cast<float>(unbiased);
      } else {
        mean = running_mean_.data[c];
        invstd = 1.0f / std::sqrt(running_var_.data[c] + kEps);
      }
      mean_[c] = mean;
      invstd_[c] = invstd;
      const float g = gamma_.value.data[c] * invstd, sh = beta_.value.data[c] - mean * g;
      for (int i = 0; i < n; ++i) {
        const float* x = in.item(i) + c * hw;
        float* y = out.item(i) + c * hw;
        for (int p = 0; p < hw; ++p) y[p] = x[p] * g + sh;
      }
    }
  });
}

void BatchNorm::Backward(const Tensor& in, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool& pool) {
  const int n = in.shape.n, hw = in.shape.h * in.shape.w;
  const float m = static_cast<float>(static_cast<size_t>(n) * hw);
  if (din) din->Resize(in.shape);
  pool.For(c_, [&](int b, int e, int) {
    for (int c = b; c < e; ++c) {
      const float mean = mean_[c], invstd = invstd_[c];
      double sdy = 0, sdyx = 0;
      for (int i = 0; i < n; ++i) {
        const float* x = in.item(i) + c * hw;
        const float* dy = dout.item(i) + c * hw;
        for (int p = 0; p < hw; ++p) {
          sdy += dy[p];
          sdyx += dy[p] * (x[p] - mean) * invstd;
        }
      }
      gamma_.grad.ptr()[c] = static_cast<float>(sdyx);
      beta_.grad.ptr()[c] = static_cast<float>(sdy);
      if (!din || m == 0) continue;
      const float k = gamma_.value.data[c] * invstd / m, a = static_cast<float>(sdy), bx = static_cast<float>(sdyx);
      for (int i = 0; i < n; ++i) {
        const float* x = in.item(i) + c * hw;
        const float* dy = dout.item(i) + c * hw;
        float* dx = din->item(i) + c * hw;
        for (int p = 0; p < hw; ++p) dx[p] = k * (m * dy[p] - a - (x[p] - mean) * invstd * bx);
      }
    }
  });
}

}  // namespace hoop::train
