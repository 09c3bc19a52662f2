// The start of the strategies that deal the whole model out (ps_run.h, strategy_pipeline.cc): their
// output checks, and --resume before they deal the model out: rank 0 reads the checkpoint into a whole model and
// its momentum, and the job's communicator (whole at the start) broadcasts the lot, with where
// the run stands, to every rank, which then takes its part (a server its shard, a stage its
// layers). A checkpoint of another rank count needs --force, as sync's. One written mid-epoch is
// refused unless the caller can start there (the pipeline can; ps starts at an epoch's beginning).
#pragma once
#include "collectives/api/communicator.h"
#include "trainer/model.h"
#include "trainer/options.h"
#include "trainer/sgd.h"
#include "trainer/trainer.h"

namespace hoop::train {

struct ResumedAt {
  int epochs_done = 0;
  double wall_s = 0;
  // A mid-epoch checkpoint's: steps done into the unfinished epoch, by a run of `ranks` x
  // `batch`, and the epoch's sums so far (epoch_sums.h's order; rank 0 adds them in).
  int64_t step = 0;
  int ranks = 0, batch = 0;
  std::vector<double> partial;
};

// Every rank calls it. `ranks`: what this run records as its rank count (ps: its workers,
// pipeline: its replicas). Fills `model` and `sgd`'s momentum on every rank; rank 0 also puts the
// checkpoint's finished epochs in `result`.
// Rank 0's verdict on its output paths (--metrics, --checkpoint), the same on every rank, before
// anything runs: a collective on the job's communicator.
Status CheckOutputs(const Options& o, Communicator& comm);

// Whether `at` holds every --epochs already: rank 0 says so, and `result` is marked.
bool NothingLeft(const Options& o, const Communicator& comm, const ResumedAt& at, RunResult* result);

StatusOr<ResumedAt> ResumeWhole(const Options& o, Communicator& comm, int ranks, Model& model, Sgd& sgd,
                                RunResult* result, bool mid_epoch = false);

}  // namespace hoop::train
