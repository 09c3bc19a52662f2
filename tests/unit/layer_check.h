// Checking a trainer layer against numerical gradients: a random input and random weights, a
// loss L = sum(out * R) for a fixed random R, and backward's gradients for the input and every
// parameter compared with central differences (L(x + e) - L(x - e)) / 2e at sampled positions.
// Inputs of ReLU and max pooling are spaced apart so that no perturbation crosses a kink or
// changes a window's winner. The loss is a sum over the raw data, so it holds in any layout.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>

#include "trainer/layer.h"

namespace hoop::train {

inline void Fill(Tensor& t, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  for (float& v : t.data) v = d(rng);
}

// Distinct values at least 0.05 apart, in random order, none within 0.025 of 0.
inline void FillSpaced(Tensor& t, std::mt19937& rng) {
  std::vector<int> order(t.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < t.size(); ++i) t.data[i] = (static_cast<float>(order[i]) - t.size() / 2.0f) * 0.05f + 0.025f;
}

inline double Loss(Layer& l, const Tensor& x, const Tensor& r, ThreadPool& pool) {
  Tensor y;
  l.Forward(x, y, Mode::kTrain, pool);
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y.data[i]) * r.data[i];
  return s;
}

// Compares analytic against numerical gradients at up to `samples` positions of `value`. A
// position passes when the central difference agrees at one of the step sizes eps, eps/10,
// eps/30: in f32 a large step may cross a ReLU kink somewhere inside a block, a small one is
// noisy, and a wrong backward agrees at none of them.
inline void CheckPositions(const char* what, Tensor& value, const Tensor& grad, const std::function<double()>& loss,
                           float eps, std::mt19937& rng, int samples = 24) {
  std::uniform_int_distribution<size_t> pick(0, value.size() - 1);
  for (int k = 0; k < samples; ++k) {
    size_t j = pick(rng);
    const float keep = value.data[j];
    const double analytic = grad.data[j];
    std::string tried;
    bool agrees = false;
    for (float step : {eps, eps / 10, eps / 30}) {
      value.data[j] = keep + step;
      double up = loss();
      value.data[j] = keep - step;
      double down = loss();
      value.data[j] = keep;
      double numeric = (up - down) / (2.0 * step);
      tried += " " + std::to_string(numeric);
      if (std::abs(analytic - numeric) <= 2e-3 + 2e-2 * std::max(std::abs(analytic), std::abs(numeric))) {
        agrees = true;
        break;
      }
    }
    INFO(what << "[" << j << "]: analytic " << analytic << ", numerical" << tried);
    REQUIRE(agrees);
  }
}

inline void CheckLayer(Layer& l, Tensor x, float eps = 1e-2f, int threads = 2) {
  std::mt19937 rng(7);
  ThreadPool pool(threads);
  Tensor y, dx;
  l.Forward(x, y, Mode::kTrain, pool);
  Tensor r(y.shape);
  Fill(r, rng);
  l.Backward(x, y, r, &dx, pool);
  REQUIRE(dx.shape == x.shape);
  // Backward overwrote the gradients; copy them before perturbing anything.
  std::vector<Tensor> grads;
  for (Param* p : l.Params()) grads.push_back(p->grad);
  auto loss = [&] { return Loss(l, x, r, pool); };
  CheckPositions("input", x, dx, loss, eps, rng);
  auto params = l.Params();
  for (size_t i = 0; i < params.size(); ++i)
    CheckPositions(params[i]->name.c_str(), params[i]->value, grads[i], loss, eps, rng);
}

inline Tensor Random(Shape s, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(s);
  Fill(t, rng);
  return t;
}

}  // namespace hoop::train
