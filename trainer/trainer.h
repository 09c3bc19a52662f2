// One rank's training run: the epoch loop that ties the pieces together.
//
//   start:  build the model from --seed; with --resume, rank 0 reads the checkpoint and tells
//           every rank whether it could; then rank 0's parameters, buffers and momentum are
//           broadcast, so all ranks hold one model.
//   step:   take this rank's slice of the global batch (sampler.h), forward, loss, backward
//           with each layer's gradients handed to the fusion runtime as the layer finishes
//           (data_parallel.h), wait for all of them, then one SGD step with the scheduled rate.
//   epoch:  average batch-norm statistics, evaluate on this rank's shard of the test set, sum
//           the counts and timings over ranks; rank 0 logs, writes metrics and the checkpoint.
#pragma once
#include <memory>

#include "collectives/communicator.h"
#include "common/config.h"
#include "trainer/metrics.h"
#include "trainer/mnist.h"
#include "trainer/options.h"

namespace hoop::train {

struct RunResult {
  std::vector<EpochMetrics> epochs;
};

// Runs the whole training on this rank. Errors carry the rank and what failed.
StatusOr<RunResult> Train(const Options& opts, const Config& cfg, Communicator& comm, const Dataset& train,
                          const Dataset& test);

}  // namespace hoop::train
