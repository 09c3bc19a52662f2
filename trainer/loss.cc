#include "trainer/loss.h"

#include <algorithm>
#include <cmath>

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

void Softmax(const Tensor& logits, float* probs) {
  const int n = logits.shape.n, k = logits.shape.c;
  for (int i = 0; i < n; ++i) {
    const float* z = logits.item(i);
    const float mx = *std::max_element(z, z + k);
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += std::exp(static_cast<double>(z[j] - mx));
    for (int j = 0; j < k; ++j) probs[i * k + j] = static_cast<float>(std::exp(static_cast<double>(z[j] - mx)) / sum);
  }
}

}  // namespace hoop::train
