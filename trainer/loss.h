// Softmax cross-entropy on logits (N x K) against integer labels.
//
// Forward returns the summed loss and the number of correct argmax predictions. The gradient is
// (softmax - onehot) * scale: the trainer passes scale = 1 / (images in the whole step, over all
// ranks), so summing the ranks' gradients gives exactly the gradient of the step's mean loss,
// even when the last step leaves ranks with different numbers of images.
#pragma once
#include <cstdint>
#include <vector>

#include "trainer/tensor.h"

namespace hoop::train {

struct LossResult {
  double loss_sum = 0;
  int64_t correct = 0;
};

LossResult SoftmaxCrossEntropy(const Tensor& logits, const std::vector<uint8_t>& labels, float scale, Tensor* dlogits);

// The class probabilities, softmax of each row, into probs (N x K).
void Softmax(const Tensor& logits, float* probs);

}  // namespace hoop::train
