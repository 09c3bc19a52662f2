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
//   stop:   about four times a second (the same steps on every rank) the ranks agree whether a
//           stop signal arrived anywhere; if so they checkpoint that step and return.
//   mid-epoch checkpoints (--checkpoint-every, interrupts) carry the epoch's sums so far, so a
//   resumed run ends with the parameters and the metrics an unbroken one has.
#pragma once
#include <atomic>
#include <memory>

#include "collectives/api/communicator.h"
#include "common/config.h"
#include "trainer/metrics.h"
#include "trainer/mnist.h"
#include "trainer/options.h"

namespace hoop::train {

struct RunResult {
  std::vector<EpochMetrics> epochs;  // with --resume, the checkpoint's finished epochs first
  int interrupted = 0;               // the signal the run stopped for (after its checkpoint), or 0
  bool nothing_left = false;         // resumed with every --epochs done already
  // With Options::keep_predictions: the last evaluation's class probabilities, test image x 10,
  // filled for this rank's shard of the test set and 0 elsewhere.
  std::vector<float> test_probs;
};

// Runs the whole training on this rank. Errors carry the rank and what failed. stop (may be
// null): a signal number a handler stores; when it turns non-zero on any rank, the ranks agree
// on a step within about a quarter second, save a checkpoint there (with --checkpoint) and
// return `interrupted`.
StatusOr<RunResult> Train(const Options& opts, const Config& cfg, Communicator& comm, const Dataset& train,
                          const Dataset& test, const std::atomic<int>* stop = nullptr);

}  // namespace hoop::train
