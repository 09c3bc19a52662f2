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
// sync (Goyal et al.'s large-batch SGD over allreduce), hogwild (hogwild.h), backup workers
// (backup.h), the pipeline (strategy_pipeline.cc) and distillation (strategy_distill.cc: sync's,
// its loss against a teacher's soft targets) implement it; MakeStrategy picks one from
// the options, before the fusion runtime starts (backup workers duplicate the communicator and
// the pipeline splits it, collectives that must not interleave with the runtime's own).
//
// A strategy that deals the model out (the pipeline: each rank a stage of it) also hands the
// run its ModelPart: the rank then computes, evaluates and checkpoints its part, and the
// sampler deals the batches among the replicas of the whole model instead of the ranks.
// The parameter servers (ps_run.h) are no epoch loop of steps and keep a run of their own.
#pragma once
#include <memory>
#include <string>

#include "collectives/api/communicator.h"
#include "common/status.h"
#include "trainer/data_parallel.h"
#include "trainer/layer.h"
#include "trainer/model.h"
#include "trainer/mnist.h"
#include "trainer/options.h"
#include "trainer/resume_whole.h"
#include "trainer/sampler.h"
#include "trainer/sgd.h"

namespace hoop::train {

struct CheckpointInfo;
struct Distillation;

// A rank's part of a model dealt out over the ranks, in place of the run's whole-model steps.
class ModelPart {
 public:
  virtual ~ModelPart() = default;
  // This rank's replica of the whole model, and how many there are (the sampler's rank and ranks).
  virtual int Replica() const = 0;
  virtual int Replicas() const = 0;
  // With --resume: where the checkpoint, read into the whole model before it was dealt out, left off.
  virtual const ResumedAt& Resumed() const = 0;
  // The optimizer over the part's parameters: it takes the checkpoint's momentum, and is saved.
  virtual void UseOptimizer(Sgd& sgd) = 0;
  // Rank 0's first line; `resuming` is where a resumed run starts (", resuming ..."), or "".
  virtual void Announce(int64_t steps, const std::string& resuming) const = 0;
  // One step's forward and backward of `s` (images perm[s.begin..]): the part's gradients, and the
  // epoch's sums (epoch_sums.h) this rank adds.
  virtual Status Compute(const std::vector<int64_t>& perm, const Slice& s, std::vector<double>& sums) = 0;
  virtual Status Evaluate(std::vector<double>& sums) = 0;
  // Batch-norm statistics averaged over the replicas (before evaluation and checkpoints).
  virtual Status AverageBuffers() = 0;
  // Every rank calls it; the whole model is saved to `path` with `ck`.
  virtual Status Save(const std::string& path, const CheckpointInfo& ck) = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // `dp`: the fusion runtime's data parallelism; null for a strategy that deals the model out (no
  // runtime runs beside its own traffic: it moves its tensors itself).
  virtual Status Begin(DataParallel* dp) = 0;
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
  // The rank's part of a model the strategy dealt out, or null: the rank trains the whole model.
  virtual ModelPart* Part() { return nullptr; }
  // The teacher whose soft targets the steps' loss takes (distillation), or null: the labels'.
  virtual const Distillation* Distilling() const { return nullptr; }
};

// What MakeStrategy builds a strategy from: the job, its model (built from --seed on every rank,
// the same everywhere) and the data; `result` takes a resumed checkpoint's finished epochs.
struct StrategyContext {
  const Options& o;
  Communicator& comm;
  Model& model;
  const Dataset& train;
  const Dataset& test;
  int pad;  // the data's border to the model's input size
  ThreadPool& pool;
  RunResult* result;
};

// The strategy --strategy and --backup-workers name (sync, hogwild, backup workers, the pipeline
// or distillation), checked against the job: hogwild's ranks on one host, backup workers fewer than the
// ranks, whole pipelines.
StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const StrategyContext& c);

// The five, for MakeStrategy (strategy_*.cc). Sync binds the model's gradient arena at Begin
// and hands the fusion runtime its buckets (gradient_arena.h).
std::unique_ptr<Strategy> SyncStrategy(Model& model);
std::unique_ptr<Strategy> HogwildStrategy(Communicator& comm, std::vector<Param*> params);
StatusOr<std::unique_ptr<Strategy>> BackupStrategy(Communicator& comm, std::vector<Param*> params, int backups);
// Knowledge distillation (strategy_distill.cc): sync's, its loss against the teacher --teacher
// names, read here on every rank (a rank that cannot read it fails at Begin, the others with it).
std::unique_ptr<Strategy> DistillStrategy(const StrategyContext& c);
// The pipeline (pipeline_stage.h): splits the job's communicator, measures the layers and keeps
// this rank's stage in the model; with --resume reads the checkpoint first.
StatusOr<std::unique_ptr<Strategy>> PipelineStrategy(const StrategyContext& c);

}  // namespace hoop::train
