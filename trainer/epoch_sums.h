// What every strategy's ranks add up over an epoch (each rank its part, summed over the ranks by
// one collective or, with parameter servers, by server 0), and the epoch's metrics made from
// them. The order is also that of a mid-epoch checkpoint's partial sums (checkpoint.h).
#pragma once
#include <vector>

#include "trainer/metrics.h"

namespace hoop::train {

enum EpochSum {
  kLoss,
  kCorrect,
  kImages,
  kTestLoss,
  kTestCorrect,
  kTestImages,
  kData,
  kForward,
  kBackward,
  kComm,
  kOpt,
  kTrainS,
  kSums
};

// The metrics of epoch `epoch` (0-based) from the sums over `ranks` contributors: the losses and
// accuracies per image, the times per contributor (their mean), images/s over that mean time.
EpochMetrics MetricsFromSums(const std::vector<double>& sums, double ranks, int epoch, double wall_s, double lr);

}  // namespace hoop::train
