#include "trainer/epoch_sums.h"

#include <algorithm>

namespace hoop::train {

EpochMetrics MetricsFromSums(const std::vector<double>& sums, double ranks, int epoch, double wall_s, double lr) {
  EpochMetrics m;
  m.epoch = epoch + 1;
  m.wall_s = wall_s;
  m.train_s = sums[kTrainS] / ranks;
  m.images = static_cast<int64_t>(sums[kImages]);
  m.images_per_s = m.train_s > 0 ? sums[kImages] / m.train_s : 0;
  m.data_s = sums[kData] / ranks;
  m.forward_s = sums[kForward] / ranks;
  m.backward_s = sums[kBackward] / ranks;
  m.comm_wait_s = sums[kComm] / ranks;
  m.optimizer_s = sums[kOpt] / ranks;
  m.train_loss = sums[kLoss] / std::max(1.0, sums[kImages]);
  m.train_acc = sums[kCorrect] / std::max(1.0, sums[kImages]);
  m.test_loss = sums[kTestLoss] / std::max(1.0, sums[kTestImages]);
  m.test_acc = sums[kTestCorrect] / std::max(1.0, sums[kTestImages]);
  m.lr = lr;
  return m;
}

}  // namespace hoop::train
