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

// Knowledge distillation's loss (Hinton et al. 2015) on the student's logits z, against soft
// targets q (N x K: a teacher's softmax(v / T), or an ensemble's mean of them) and the labels:
//   alpha * T^2 * KL(q || softmax(z / T)) + (1 - alpha) * CE(softmax(z), y)
// (T^2 keeps the soft term's gradient on the hard term's scale as T changes). The gradient is
// scale * (alpha * T * (softmax(z / T) - q) + (1 - alpha) * (softmax(z) - onehot(y))); correct
// counts the student's argmax against the labels.
LossResult DistillLoss(const Tensor& logits, const float* soft, const std::vector<uint8_t>& labels, float temperature,
                       float alpha, float scale, Tensor* dlogits);

// The class probabilities, softmax of each row divided by `temperature`, into probs (N x K).
void Softmax(const Tensor& logits, float* probs, float temperature = 1.0f);

}  // namespace hoop::train
