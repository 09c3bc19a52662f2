// Inter-model parallelism (issue 24, item 6): a hyper-parameter sweep trains one model per
// configuration, every combination of the --sweep axes, across the job's ranks. With C
// configurations on N ranks the ranks split into G = min(C, N) groups of contiguous ranks (a
// sub-communicator each, trained data-parallel as usual); group g trains configurations g,
// g + G, g + 2G, ... one after the other. Each run's lines carry its configuration; at the end
// rank 0 prints every configuration's test accuracy, time and speed, and with --ensemble the
// accuracy of the average of all the trained models' class probabilities on the test set.
// --metrics FILE and --checkpoint FILE become FILE.K for configuration K (a distillation's
// --teacher FILE then takes the K models as its ensemble).
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "common/config.h"
#include "common/status.h"
#include "trainer/mnist.h"
#include "trainer/options.h"

namespace hoop::train {

struct SweepAxis {
  std::string key;  // an option's name without "--": lr, batch, ...
  std::vector<std::string> values;
};

// "lr=0.01,0.02": the key must be one a sweep may vary, with at least one value.
StatusOr<SweepAxis> ParseSweep(const std::string& text);

struct SweepConfig {
  std::string label;  // "lr=0.01 batch=32"
  Options opts;
};

// Every combination of `sweeps` (Options::sweep), each parsed as a command line: `args` (the
// run's own, less --sweep and --ensemble) then --KEY VALUE for each axis, so each gets the same
// checks and per-model defaults as a command line would.
StatusOr<std::vector<SweepConfig>> SweepConfigs(const std::vector<std::string>& args,
                                                const std::vector<std::string>& sweeps);

// Trains the configurations across world's ranks; rank 0 prints the table. Returns the signal
// that interrupted it, or 0.
StatusOr<int> RunSweep(const std::vector<SweepConfig>& configs, bool ensemble, const Config& cfg, Communicator& world,
                       const Dataset& train, const Dataset& test, const std::atomic<int>* stop);

}  // namespace hoop::train
