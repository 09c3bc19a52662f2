// The run of hoop-train (strategies sync, hogwild, backup workers and pipeline, each a Strategy:
// strategy.h; the parameter servers have a run of their own, ps_run.h): set up once (model,
// strategy, sampler, optimizer, the fusion runtime, a resumed checkpoint, the shared start),
// then one epoch loop of steps, each ending with the ranks' agreement on a stop and an optional
// checkpoint, and each epoch with evaluation, metrics and a checkpoint. trainer.cc holds the
// set-up, sync_epoch.cc the epoch loop; what differs between the strategies is in their hooks,
// and a strategy that deals the model out (its ModelPart) computes, evaluates and saves its part.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "tensorfusion/runtime.h"
#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/data_parallel.h"
#include "trainer/job_energy.h"
#include "trainer/model.h"
#include "trainer/parallel.h"
#include "trainer/sampler.h"
#include "trainer/sgd.h"
#include "trainer/strategy.h"
#include "trainer/trainer.h"

namespace hoop::train {

using Clock = std::chrono::steady_clock;
inline double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class Run {
 public:
  Run(const Options& o, const Config& cfg, Communicator& comm, const Dataset& train, const Dataset& test,
      const std::atomic<int>* stop)
      : o_(o), cfg_(cfg), comm_(&comm), train_(train), test_(test), stop_(stop), pool_(o.threads) {}

  StatusOr<RunResult> Go();

 private:
  StatusOr<RunResult> Epochs(int epoch);
  StatusOr<RunResult> JoinedRun();  // --elastic, a newcomer: from the running job's place (elastic_run.cc)

 private:
  struct Resumed {  // where a resumed run starts
    int epoch = 0;
    int64_t step = 0;         // into that epoch
    int64_t global_step = 0;  // over the run (the rate schedule's position)
    double wall_s = 0;
    std::vector<double> partial;  // the epoch's sums so far (rank 0 adds them in)
  };
  // Set-up (trainer.cc).
  Status MakeModel();
  Status MakeSampler();
  Status MakeOptimizer();
  Status StartRuntime();
  Status ShareStart();
  void Announce(const std::string& device_list);
  Status Preflight();
  Status Shutdown();  // the fusion runtime's, where one runs
  StatusOr<Resumed> Resume(DataParallel& dp, const NamedTensors& state, int64_t steps, RunResult* result);
  // Where a checkpoint read into the whole model before it was dealt out (ModelPart) left off.
  Resumed ResumedPart(const ResumedAt& at) const;
  // The epoch loop (sync_epoch.cc): false when a stop signal ended the run. *epoch: the next
  // epoch to train (--elastic: a survivor the others take their state from may be one further).
  StatusOr<bool> TrainEpoch(int* epoch);
  // Step s of the epoch: computed, reduced, applied, then AfterStep; *admit: newcomers to take in.
  Status Step(int epoch, int64_t s, const std::vector<int64_t>& perm, std::vector<double>& sums,
              Clock::time_point epoch_start, bool* stopped, int* admit);
  // --elastic (elastic_run.cc): whether `s` is a lost rank's failure to go on from; after one,
  // the survivors' communicator and the state of the survivor furthest on (*epoch, *s: the next
  // step); newcomers admitted (a grow and rank 0's state); a newcomer's start.
  bool Lost(const Status& s) const;
  Status Recover(const Status& cause, int* epoch, int64_t* s);
  Status Admit(int newcomers, int* epoch, int64_t* s);
  Status JoinRunning();
  Status Restart(std::unique_ptr<Communicator> comm);
  void StopRuntime();
  Status TakeState(int root, int* epoch, int64_t* s);
  void ShareOut();
  void KillDrill() const;
  // Rank 0's line for a change of the ranks, and the epoch's stretches of steps by ranks.
  void Changed(const std::string& what, int before, Clock::time_point since);  // since: the change began
  // After step s of the epoch: the ranks agree on a stop now and then (true: stopped, the
  // checkpoint written), and a --checkpoint-every checkpoint.
  StatusOr<bool> AfterStep(int epoch, int64_t s, const std::vector<double>& sums, Clock::time_point epoch_start);
  Status EndEpoch(int epoch, std::vector<double>& sums, double lr, Clock::time_point epoch_start,
                  const std::vector<double>& joules_before);
  // Every rank's compute speed this epoch, the same vector on every rank.
  StatusOr<std::vector<double>> RankSpeeds();
  void PrintEpoch(const EpochMetrics& m, int epoch);
  // Rank 0 writes the checkpoint; every rank takes part in what it needs (batch-norm statistics
  // averaged, the unfinished epoch's sums added up), at a step every rank has reached.
  Status Save(int epochs_done, int64_t in_epoch, std::vector<double> partial);
  Status TrainStep(const std::vector<int64_t>& perm, const Slice& s, std::vector<double>& sums);
  Status Evaluate(std::vector<double>& sums);
  Status AverageBuffers();
  int PendingStop() const;
  // `images`: trained over all ranks in this process this epoch.
  void Progress(int epoch, int64_t s, int64_t steps, Clock::time_point epoch_start, double images, bool final);
  double ImagesDone(int64_t s, const std::vector<double>& sums) const;
  // This rank's weight in averages over the ranks (batch-norm statistics): its share of the batch.
  double Weight() const;
  std::string Where() const { return "hoop-train: rank " + std::to_string(comm_->rank()) + ": "; }

  const Options& o_;
  const Config& cfg_;
  Communicator* comm_;  // the job's, or with --elastic the last shrunk or grown one (own_)
  const Dataset& train_;
  const Dataset& test_;
  const std::atomic<int>* stop_;
  ThreadPool pool_;
  Clock::time_point last_progress_;
  int64_t resumed_at_ = 0;  // the epoch's first step in this process
  int pad_ = 0;             // black border that brings the data set's images to the model's size
  JobEnergy energy_;
  double my_images_ = 0, my_compute_s_ = 0;  // this rank's images and compute time this epoch
  std::vector<float> probs_;                 // with keep_predictions: the last evaluation's class probabilities
  double images_before_ = 0;                 // images of the epoch trained before it (a resumed checkpoint's)
  ModelPart* part_ = nullptr;                // the strategy's, when it deals the model out
  bool shown_ = false;
  std::unique_ptr<Model> model_;
  Workspace ws_;
  // What the run holds from set-up to its end, in the order it is made (and unmade in reverse).
  std::optional<DistributedSampler> sampler_;
  int64_t images_ = 0, steps_ = 0;  // the training images used, the steps per epoch
  int global_batch_ = 0;
  std::optional<Sgd> sgd_;
  LrSchedule sched_;
  NamedTensors buffers_, state_;  // state: parameters, buffers and the optimizer's
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<Communicator> own_;          // --elastic: the communicator the run goes on over
  std::unique_ptr<Communicator> fusion_comm_;  // --elastic: the runtime's duplicate of comm_
  std::unique_ptr<fusion::Runtime> rt_;
  std::optional<DataParallel> dp_;
  JobEnergy::Sum sum_;  // a sum over the ranks: through dp_, or the job's communicator without a runtime
  RunResult result_;
  Resumed from_;
  RunInfo info_;
  Clock::time_point begin_;
  int64_t step_ = 0;                                // steps done over the run
  int64_t applied_ = 0;                             // steps the optimizer applied (step_ + 1 between the two)
  bool looked_ = false;                             // the last AfterStep was a look (the ranks' agreement)
  std::vector<std::pair<int64_t, int>> stretches_;  // this epoch: (first step, 1-based, over the run; ranks)
  int64_t check_at_ = 1, check_every_ = 1;          // when the ranks next agree on whether to stop
  double step_s_ = 0;                               // rank 0's mean step time so far, for the cadence
  int64_t timed_steps_ = 0;
};

}  // namespace hoop::train
