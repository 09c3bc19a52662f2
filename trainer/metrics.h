// What a training run measures, per epoch: time in each phase of a step (loading the batch,
// forward, backward, waiting for the gradients' allreduces after backward, the optimizer),
// images/s over all ranks, the training loss and accuracy, the test loss and accuracy, the
// wall-clock time since training began (for accuracy against time), and the energy used where
// the hosts expose it (empty in CSV, null in JSON where not).
//
// Phase times are each rank's own, averaged over the ranks. Rank 0 prints a line per epoch and
// a summary, and rewrites the --metrics file after every epoch (atomically), as JSON when its
// name ends in .json and as CSV otherwise, so a run that is stopped keeps its epochs so far.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::train {

struct EpochMetrics {
  int epoch = 0;            // 1-based
  double wall_s = 0;        // since training began, at the end of this epoch's evaluation
  double train_s = 0;       // this epoch's training steps
  int64_t images = 0;       // trained on, all ranks
  double images_per_s = 0;  // images / train_s
  double data_s = 0, forward_s = 0, backward_s = 0, comm_wait_s = 0, optimizer_s = 0;
  double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0;
  double lr = 0;  // at the epoch's last step
  // Energy of the epoch's training steps over all hosts (energy.h), NaN where not available;
  // images per joule of the sources that are.
  double cpu_joules = kNoValue, gpu_joules = kNoValue, images_per_joule = kNoValue;
  // Per rank: its images in each global batch this epoch, and its compute speed (images over
  // its loading, forward and backward time). In the files only (not in checkpoints' history).
  std::vector<int> shares = {};
  std::vector<double> rank_images_per_s = {};
  // hoop-train --elastic: which steps ran on how many ranks, as pairs (the first step of a
  // stretch, 1-based over the run; its ranks): one pair when nothing changed.
  std::vector<int64_t> ranks_by_step = {};

  static constexpr double kNoValue = __builtin_nan("");
};

struct RunInfo {
  std::string model;
  int ranks = 1, batch = 0, threads = 1;
  std::string transport;                                                 // the back ends the communicator uses
  std::string cpu_energy = "not measured", gpu_energy = "not measured";  // "measured", or why not
  std::vector<std::string> devices = {};                                 // per rank: "cpu"
};

// An epoch's metrics as numbers in the files' column order, and back (for checkpoints; `fields`:
// how many a checkpoint holds per epoch, fewer from older versions, the rest left unset).
std::vector<double> EpochValues(const EpochMetrics& m);
EpochMetrics EpochFromValues(const double* v, size_t fields);
size_t EpochFieldCount();

// One line for the log.
std::string FormatEpoch(const EpochMetrics& m, int epochs);
Status WriteMetrics(const std::string& path, const RunInfo& run, const std::vector<EpochMetrics>& epochs);

}  // namespace hoop::train
