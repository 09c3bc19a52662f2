#include "trainer/loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hoop::train {

LossResult SoftmaxCrossEntropy(const Tensor& logits, const std::vector<uint8_t>& labels, float scale, Tensor* dlogits) {
  LossResult r;
  const int n = logits.shape.n, k = static_cast<int>(logits.shape.per_item());
  if (dlogits) dlogits->Resize(logits.shape);
  for (int i = 0; i < n; ++i) {
    const float* z = logits.item(i);
    int best = static_cast<int>(std::max_element(z, z + k) - z);
    float mx = z[best];
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += std::exp(static_cast<double>(z[j] - mx));
    double log_sum = std::log(sum);
    const int y = labels[i];
    r.loss_sum += log_sum - (z[y] - mx);
    if (best == y) ++r.correct;
    if (dlogits) {
      float* g = dlogits->item(i);
      for (int j = 0; j < k; ++j) {
        double p = std::exp(static_cast<double>(z[j] - mx) - log_sum);
        g[j] = static_cast<float>((p - (j == y ? 1.0 : 0.0)) * scale);
      }
    }
  }
  return r;
}

namespace {

// log softmax(z / t) of one row of k, into out.
void LogSoftmax(const float* z, int k, double t, double* out) {
  const double mx = *std::max_element(z, z + k) / t;
  double sum = 0;
  for (int j = 0; j < k; ++j) sum += std::exp(z[j] / t - mx);
  const double log_sum = std::log(sum) + mx;
  for (int j = 0; j < k; ++j) out[j] = z[j] / t - log_sum;
}

}  // namespace

LossResult DistillLoss(const Tensor& logits, const float* soft, const std::vector<uint8_t>& labels, float temperature,
                       float alpha, float scale, Tensor* dlogits) {
  LossResult r;
  const int n = logits.shape.n, k = static_cast<int>(logits.shape.per_item());
  const double t = temperature, a = alpha;
  if (dlogits) dlogits->Resize(logits.shape);
  std::vector<double> hard(k), warm(k);  // log softmax(z), log softmax(z / T)
  for (int i = 0; i < n; ++i) {
    const float* z = logits.item(i);
    const float* q = soft + static_cast<size_t>(i) * k;
    LogSoftmax(z, k, 1.0, hard.data());
    LogSoftmax(z, k, t, warm.data());
    const int y = labels[i];
    double kl = 0;
    for (int j = 0; j < k; ++j)
      if (q[j] > 0) kl += q[j] * (std::log(static_cast<double>(q[j])) - warm[j]);
    r.loss_sum += a * t * t * kl + (1 - a) * -hard[y];
    if (std::max_element(z, z + k) - z == y) ++r.correct;
    if (!dlogits) continue;
    float* g = dlogits->item(i);
    for (int j = 0; j < k; ++j)
      g[j] = static_cast<float>(
          (a * t * (std::exp(warm[j]) - q[j]) + (1 - a) * (std::exp(hard[j]) - (j == y ? 1.0 : 0.0))) * scale);
  }
  return r;
}

void Softmax(const Tensor& logits, float* probs, float temperature) {
  const int n = logits.shape.n, k = logits.shape.c;
  std::vector<double> lp(k);
  for (int i = 0; i < n; ++i) {
    LogSoftmax(logits.item(i), k, temperature, lp.data());
    for (int j = 0; j < k; ++j) probs[i * k + j] = static_cast<float>(std::exp(lp[j]));
  }
}

}  // namespace hoop::train
