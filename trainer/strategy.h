// What a data-parallel strategy does differently, as hooks on one epoch loop (sync_epoch.cc):
//
//   Begin            once, after rank 0's model is on every rank (hogwild maps its shared copy)
//   BeginStep        before a step's computation; true: the strategy took the step without it
//                    (a backup worker that fell behind catches up with the others' mean)
//   GradientScale    the loss gradient's factor: 1 / the step's images over all ranks (sync's
//                    mean), over this rank's own (hogwild), or 1 (backup: rank 0 averages)
//   OnLayerGradients as each layer's backward returns (sync hands the gradients to the fusion
//                    runtime here, so they travel while earlier layers compute)
//   BeforeOptimizer  after backward: every gradient this rank steps with is in place
//   AfterStep        after the optimizer's step (hogwild adds its change to the shared copy)
//   EndEpoch         before evaluation, on every rank (a collective where a strategy needs one)
//   EpochNote        what rank 0's epoch line adds; End once, after the last epoch
//
// sync (Goyal et al.'s large-batch SGD over allreduce), hogwild (hogwild.h) and backup workers
// (backup.h) implement it; MakeStrategy picks one from the options, before the fusion runtime
// starts (backup workers duplicate the communicator, which must not interleave with the
// runtime's collectives). The ps and pipeline strategies move more than gradients and keep runs
// of their own (ps_run.h, pipeline_run.h).
#pragma once
#include <memory>
#include <string>

#include "collectives/api/communicator.h"
#include "common/status.h"
#include "trainer/data_parallel.h"
#include "trainer/layer.h"
#include "trainer/model.h"
#include "trainer/options.h"
#include "trainer/sampler.h"

namespace hoop::train {

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual Status Begin(DataParallel& dp) = 0;
  virtual StatusOr<bool> BeginStep(int64_t step) = 0;
  virtual float GradientScale(const Slice& s) const = 0;
  virtual void OnLayerGradients(Layer& layer) = 0;
  // `images`: this rank's images in the step; `computed`: false when BeginStep took the step.
  virtual Status BeforeOptimizer(int64_t step, int images, bool computed) = 0;
  virtual void AfterStep() = 0;
  virtual Status EndEpoch() = 0;
  virtual std::string EpochNote() const = 0;
  virtual Status End() = 0;
  // The learning rate each rank steps with, and the ranks it is scaled by (LrSchedule).
  virtual double Rate(double lr, int /*ranks*/) const { return lr; }
  virtual int RateRanks(int ranks) const { return ranks; }
};

// The strategy --strategy and --backup-workers name (sync, hogwild or backup workers), checked
// against the job: hogwild's ranks on one host, backup workers fewer than the ranks.
StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const Options& o, Communicator& comm, Model& model);

// The three, for MakeStrategy (strategy_*.cc). Sync binds the model's gradient arena at Begin
// and hands the fusion runtime its buckets (gradient_arena.h).
std::unique_ptr<Strategy> SyncStrategy(Model& model);
std::unique_ptr<Strategy> HogwildStrategy(Communicator& comm, std::vector<Param*> params);
StatusOr<std::unique_ptr<Strategy>> BackupStrategy(Communicator& comm, std::vector<Param*> params, int backups);

}  // namespace hoop::train
