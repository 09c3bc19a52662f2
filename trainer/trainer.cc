#include "trainer/trainer.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "tensorfusion/runtime.h"
#include "trainer/backup.h"
#include "trainer/balance.h"
#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/data_parallel.h"
#include "trainer/device_choice.h"
#include "trainer/job_energy.h"
#include "trainer/epoch_sums.h"
#include "trainer/hogwild.h"
#include "trainer/layer_factory.h"
#include "trainer/loss.h"
#include "trainer/model.h"
#include "trainer/pipeline_run.h"
#include "trainer/ps_run.h"
#include "trainer/sampler.h"
#include "trainer/sgd.h"

namespace hoop::train {

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class Run {
 public:
  Run(const Options& o, const Config& cfg, Communicator& comm, const Dataset& train, const Dataset& test,
      const std::atomic<int>* stop)
      : o_(o), cfg_(cfg), comm_(comm), train_(train), test_(test), stop_(stop), pool_(o.threads) {}

  StatusOr<RunResult> Go();

 private:
  struct Resumed {  // where a resumed run starts
    int epoch = 0;
    int64_t step = 0;         // into that epoch
    int64_t global_step = 0;  // over the run (the rate schedule's position)
    double wall_s = 0;
    std::vector<double> partial;  // the epoch's sums so far (rank 0 adds them in)
  };
  Status Preflight(DataParallel& dp);
  StatusOr<Resumed> Resume(DataParallel& dp, const NamedTensors& state, int64_t steps, RunResult* result);
  int PendingStop() const;
  void Progress(int epoch, int64_t s, int64_t steps, Clock::time_point epoch_start, double images, bool final);
  void TrainStep(const std::vector<int64_t>& perm, const Slice& s, DataParallel& dp, std::vector<double>& sums);
  // Hogwild's shared parameters: rank 0 creates them from its model, the others open them.
  StatusOr<std::unique_ptr<SharedParams>> OpenShared(DataParallel& dp, const std::vector<Param*>& params);
  void Evaluate(std::vector<double>& sums);
  std::string Where() const { return "hoop-train: rank " + std::to_string(comm_.rank()) + ": "; }

  const Options& o_;
  const Config& cfg_;
  Communicator& comm_;
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
  bool shown_ = false;
  std::unique_ptr<Model> model_;
  Workspace ws_;
};

// Rank 0 reads the checkpoint and every rank gets what it found: [ok, epochs done, steps done,
// steps into the unfinished epoch, its ranks, its batch, wall seconds, the partial sums...]. A
// checkpoint of another rank count needs --force, and then resumes at the same image of the
// epoch (the step index depends on the global batch).
StatusOr<Run::Resumed> Run::Resume(DataParallel& dp, const NamedTensors& state, int64_t steps, RunResult* result) {
  std::vector<double> found(7 + kSums, 0.0);
  Status cause;
  CheckpointInfo info;
  if (comm_.rank() == 0) {
    cause = LoadCheckpoint(o_.checkpoint, model_->name, state, &info);
    if (cause.ok() && info.ranks && static_cast<int>(info.ranks) != comm_.size() && !o_.force) {
      char why[512];
      std::snprintf(
          why, sizeof why,
          "%s was written by a %u-rank run; this one has %d ranks: the learning rate "
          "(--lr x ranks) would be %g instead of %g, the global batch %d instead of %u; add --force to resume "
          "anyway",
          o_.checkpoint.c_str(), info.ranks, comm_.size(), o_.lr * comm_.size(), o_.lr * info.ranks,
          o_.batch * comm_.size(), info.batch * info.ranks);
      cause = FailedPrecondition(why);
    }
    if (cause.ok()) {
      found = {1.0,
               static_cast<double>(info.epochs_done),
               static_cast<double>(info.steps_done),
               static_cast<double>(info.step_in_epoch),
               static_cast<double>(info.ranks),
               static_cast<double>(info.batch),
               info.wall_s};
      found.resize(7 + kSums, 0.0);
      if (info.partial.size() == static_cast<size_t>(kSums))
        std::copy(info.partial.begin(), info.partial.end(), found.begin() + 7);
      const size_t n = info.history_fields;
      for (size_t at = 0; at + n <= info.history.size(); at += n)
        result->epochs.push_back(EpochFromValues(&info.history[at], n));
    }
  }
  if (Status s = dp.SumDoubles("resume", found); !s.ok()) return s;
  if (found[0] != 1.0)
    return cause.ok() ? FailedPrecondition("rank 0 could not resume from " + o_.checkpoint + " (see its error)")
                      : cause;
  Resumed r;
  r.epoch = static_cast<int>(found[1]);
  r.step = static_cast<int64_t>(found[3]);
  r.global_step = static_cast<int64_t>(found[2]);
  r.wall_s = found[6];
  const int old_ranks = static_cast<int>(found[4]), old_batch = static_cast<int>(found[5]);
  if (old_ranks && (old_ranks != comm_.size() || old_batch != o_.batch)) {
    // The same image of the epoch under the new global batch, and the rate schedule from there.
    const int64_t images_done = r.step * old_batch * old_ranks;
    r.step = std::min<int64_t>(steps, images_done / (static_cast<int64_t>(o_.batch) * comm_.size()));
    r.global_step = static_cast<int64_t>(r.epoch) * steps + r.step;
  }
  if (r.step > 0) r.partial.assign(found.begin() + 7, found.end());
  return r;
}

StatusOr<std::unique_ptr<SharedParams>> Run::OpenShared(DataParallel& dp, const std::vector<Param*>& params) {
  // A name no other job uses: rank 0's pid and a random number, sent to all as two doubles.
  std::vector<double> id{0, 0};
  if (comm_.rank() == 0) {
    std::random_device rd;
    id = {static_cast<double>(::getpid()), static_cast<double>(rd() & 0xffffffu)};
  }
  HOOP_RETURN_IF_ERROR(dp.SumDoubles("hogwild.name", id));
  const std::string name = "/hoop-hogwild-" + std::to_string(static_cast<long long>(id[0])) + "-" +
                           std::to_string(static_cast<long long>(id[1]));
  std::unique_ptr<SharedParams> shared;
  Status made = Status::Ok();
  if (comm_.rank() == 0) {
    auto s = SharedParams::Open(name, params, true);
    if (s.ok()) {
      shared = std::move(*s);
      shared->Publish();
    } else {
      made = s.status();
    }
  }
  std::vector<double> ok{made.ok() ? 0.0 : 1.0};  // rank 0's outcome, before the others open
  HOOP_RETURN_IF_ERROR(dp.SumDoubles("hogwild.made", ok));
  if (ok[0] != 0) return made.ok() ? Unavailable("hogwild: rank 0 could not create " + name) : made;
  if (comm_.rank() != 0) {
    HOOP_ASSIGN_OR_RETURN(shared, SharedParams::Open(name, params, false));
  }
  std::vector<double> opened{1};  // a barrier: every rank has mapped it
  HOOP_RETURN_IF_ERROR(dp.SumDoubles("hogwild.opened", opened));
  if (comm_.rank() == 0) shared->Unlink();  // every rank has it mapped: nothing stays in /dev/shm
  return shared;
}

void Run::TrainStep(const std::vector<int64_t>& perm, const Slice& s, DataParallel& dp, std::vector<double>& sums) {
  const auto start = Clock::now();
  const bool hogwild = o_.strategy == "hogwild";  // no gradients exchanged: each rank steps alone
  const bool backup = o_.backup_workers >= 0;     // gradients go to rank 0 afterwards (backup.h)
  auto on_layer = [&](Layer& l) {
    if (!hogwild && !backup) dp.GradientsReady(l);
  };
  if (s.count() == 0) {
    // Nothing left for this rank in the last step: it still sends zero gradients, layer by
    // layer like the others, so every rank submits the same tensors.
    for (auto it = model_->net.layers().rbegin(); it != model_->net.layers().rend(); ++it) {
      for (Param* p : (*it)->Params()) p->grad.Zero();
      on_layer(**it);
    }
    return;
  }
  // Sync: this rank's part of the mean over the whole step's images (summed over ranks); hogwild:
  // the mean over this rank's own batch, which it applies alone.
  // With backup workers: the sum over this rank's images, which rank 0 averages over those used.
  const float scale = backup ? 1.0f : 1.0f / static_cast<float>(hogwild ? s.count() : s.step_images);
  StepTimes times;
  LossResult r = ComputeGradient(*model_, train_, perm.data() + s.begin, s.count(), scale, pad_, pool_, ws_, on_layer,
                                 comm_.rank() == o_.slow_rank ? o_.slow_ms : 0, times);
  sums[kData] += times.data;
  sums[kForward] += times.forward;
  sums[kBackward] += times.backward;
  my_images_ += s.count();
  my_compute_s_ += Since(start);
  sums[kLoss] += r.loss_sum;
  sums[kCorrect] += static_cast<double>(r.correct);
  sums[kImages] += s.count();
}

void Run::Evaluate(std::vector<double>& sums) {
  int64_t n = o_.test_limit > 0 ? std::min<int64_t>(o_.test_limit, test_.count) : test_.count, b, e;
  Shard(n, comm_.rank(), comm_.size(), &b, &e);
  if (o_.keep_predictions)
    probs_.assign(static_cast<size_t>(n) * model_->classes, 0.0f);  // this rank's shard filled in
  const EvalSums r =
      train::Evaluate(*model_, test_, b, e, pad_, pool_, ws_, o_.keep_predictions ? probs_.data() : nullptr);
  sums[kTestLoss] += r.loss;
  sums[kTestCorrect] += r.correct;
  sums[kTestImages] += r.images;
}

// rank 0's verdict on the output paths, before any training: a --metrics or --checkpoint that
// cannot be written stops every rank now, not after the first epoch.
Status Run::Preflight(DataParallel& dp) {
  std::vector<double> ok{comm_.rank() == 0 ? 1.0 : 0.0};  // summed over ranks: rank 0's alone
  Status cause;
  if (comm_.rank() == 0) {
    cause = ProbeOutputs(o_.metrics, o_.checkpoint);
    ok[0] = cause.ok() ? 1.0 : 0.0;
  }
  HOOP_RETURN_IF_ERROR(dp.SumDoubles("preflight", ok));
  if (ok[0] != 1.0)
    return cause.ok() ? FailedPrecondition("rank 0 cannot write its output files (see its error)") : cause;
  return Status::Ok();
}

// The stop signal this rank got (hoop-train's handler stores it), or 0.
int Run::PendingStop() const { return stop_ ? stop_->load(std::memory_order_relaxed) : 0; }

void Run::Progress(int epoch, int64_t s, int64_t steps, Clock::time_point epoch_start, double images, bool final) {
  if (comm_.rank() != 0 || o_.progress_s <= 0) return;
  const bool tty = ::isatty(STDOUT_FILENO);
  if (final) {
    if (tty && shown_) std::printf("\r\033[K");
    shown_ = false;
    return;
  }
  const auto now = Clock::now();
  if (std::chrono::duration<double>(now - last_progress_).count() < (tty ? 0.5 : o_.progress_s)) return;
  last_progress_ = now;
  const double t = Since(epoch_start), done = static_cast<double>(s - resumed_at_);
  const double left = done > 0 ? t / done * static_cast<double>(steps - s) : 0;
  char line[256];
  std::snprintf(line, sizeof line, "epoch %d/%d: step %lld/%lld (%.0f%%), %.0f images/s, %.0f s left in the epoch",
                epoch + 1, o_.epochs, static_cast<long long>(s), static_cast<long long>(steps),
                100.0 * static_cast<double>(s) / static_cast<double>(steps),
                t > 0 ? (images - images_before_) * comm_.size() / t : 0, left);
  if (tty)
    std::printf("\r\033[K%s%s", o_.label.c_str(), line);
  else
    std::printf("%s%s\n", o_.label.c_str(), line);
  shown_ = tty;
  std::fflush(stdout);
}

StatusOr<RunResult> Run::Go() {
  const int ranks = comm_.size(), rank = comm_.rank();
  auto device = RankDevice(o_.device, o_.devices, rank, ranks, comm_.local_rank());
  if (!device.ok()) return device.status();
  if (*device >= 0) {
    auto make = CudaLayerFactory(*device, o_.tf32);
    if (!make.ok()) return make.status();
    HOOP_ASSIGN_OR_RETURN(model_, BuildModel(o_.model, o_.seed, **make, train_.channels));
  } else {
    HOOP_ASSIGN_OR_RETURN(
        model_,
        BuildModel(o_.model, o_.seed, o_.layers == "onednn" ? Layers::kOneDnn : Layers::kNative, train_.channels));
  }
  HOOP_ASSIGN_OR_RETURN(pad_, InputPad(*model_, train_));
  SetOneDnnThreads(pool_.threads());
  const int64_t images = o_.train_limit > 0 ? std::min<int64_t>(o_.train_limit, train_.count) : train_.count;
  DistributedSampler sampler(images, o_.batch, rank, ranks, o_.seed);
  if (o_.slow_rank >= ranks)
    return InvalidArgument("--slow-rank " + std::to_string(o_.slow_rank) + ": the job has ranks 0 to " +
                           std::to_string(ranks - 1));
  if (!o_.shares.empty()) {
    if (static_cast<int>(o_.shares.size()) != ranks)
      return InvalidArgument("--shares gives " + std::to_string(o_.shares.size()) + " image counts for " +
                             std::to_string(ranks) + " ranks: give one per rank");
    sampler.SetShares(o_.shares);
  }
  const int global_batch = std::accumulate(sampler.shares().begin(), sampler.shares().end(), 0);
  const int64_t steps = sampler.steps_per_epoch();
  // This rank's weight in averages over the ranks (batch-norm statistics): its share of the batch.
  auto weight = [&] { return static_cast<double>(sampler.shares()[rank]) / global_batch; };
  Sgd sgd(model_->net.Params(), o_.momentum, o_.weight_decay, model_->math);
  const bool hogwild = o_.strategy == "hogwild";
  if (hogwild && comm_.local_size() != ranks)
    return InvalidArgument(
        "--strategy hogwild: the ranks share one copy of the parameters in memory, so all must be on "
        "one host; this job has " +
        std::to_string(comm_.local_size()) + " of its " + std::to_string(ranks) + " ranks on this one");
  // Hogwild's ranks' steps add up rather than being averaged: N ranks each stepping at --lr / N
  // move the model as one rank at --lr would (at 4 ranks here, --lr itself diverged: PERF.md).
  LrSchedule sched{hogwild ? o_.lr / ranks : o_.lr, hogwild ? 1 : ranks,
                   static_cast<int64_t>(std::llround(o_.warmup_epochs * steps)), steps * o_.epochs, o_.cosine};

  NamedTensors params, buffers = model_->net.Buffers(), state;
  for (Param* p : model_->net.Params()) params.emplace_back(p->name, &p->value);
  state = params;
  state.insert(state.end(), buffers.begin(), buffers.end());
  for (auto& s : sgd.State()) state.push_back(s);

  // Before the fusion runtime starts: duplicating the communicator is a collective on it, which
  // must not interleave with the runtime's own.
  std::unique_ptr<BackupWorkers> backup;
  if (o_.backup_workers >= 0) {
    if (o_.backup_workers >= ranks)
      return InvalidArgument("--backup-workers " + std::to_string(o_.backup_workers) + ": at least one of the " +
                             std::to_string(ranks) + " ranks' gradients must be used");
    HOOP_ASSIGN_OR_RETURN(backup, BackupWorkers::Create(comm_, model_->net.Params(), o_.backup_workers));
  }
  HOOP_ASSIGN_OR_RETURN(auto rt, fusion::Runtime::Start(comm_, fusion::FusionOptions::FromConfig(cfg_)));
  DataParallel dp(*rt);
  HOOP_RETURN_IF_ERROR(Preflight(dp));
  RunResult result;
  Resumed from;
  if (o_.resume) {
    HOOP_ASSIGN_OR_RETURN(from, Resume(dp, state, steps, &result));
    if (from.epoch >= o_.epochs) {
      if (rank == 0)
        std::printf(
            "hoop-train: %s holds %d finished epoch(s), --epochs is %d: nothing left to train (raise --epochs "
            "to go on)\n",
            o_.checkpoint.c_str(), from.epoch, o_.epochs);
      (void)rt->Shutdown();
      result.nothing_left = true;
      return result;
    }
  }
  if (Status s = dp.Broadcast(state); !s.ok()) return s.WithContext(Where() + "broadcasting the initial model");
  std::unique_ptr<SharedParams> shared;
  if (hogwild) {
    HOOP_ASSIGN_OR_RETURN(shared, OpenShared(dp, model_->net.Params()));
  }
  RunInfo info{o_.model, ranks, o_.batch, pool_.threads(), comm_.transport_name()};
  // Every rank's device, for the metrics and the first line: each adds its own (device + 2, 0 unset).
  std::vector<double> devices(ranks, 0.0);
  devices[rank] = model_->device + 2;
  if (Status s = dp.SumDoubles("devices", devices); !s.ok())
    return s.WithContext(Where() + "exchanging the ranks' devices");
  std::string device_list;
  for (int r = 0; r < ranks; ++r) {
    info.devices.push_back(DeviceName(static_cast<int>(devices[r]) - 2));
    device_list += (r ? "," : "") + info.devices.back();
  }
  const JobEnergy::Sum sum = [&dp](const std::string& name, std::vector<double>& v) { return dp.SumDoubles(name, v); };
  if (Status s = energy_.Open(rank, comm_.local_rank(), sum, info, o_.label); !s.ok())
    return s.WithContext(Where() + "finding the energy counters");
  if (rank == 0) {
    std::string resuming;
    if (o_.resume)
      resuming = from.step ? ", resuming in epoch " + std::to_string(from.epoch + 1) + " after step " +
                                 std::to_string(from.step)
                           : ", resuming after epoch " + std::to_string(from.epoch);
    const std::string data =
        train_.name + (pad_ ? " padded to " + std::to_string(model_->input.h) + "x" + std::to_string(model_->input.w)
                            : std::string());
    const bool gpus = device_list.find("cuda") != std::string::npos;
    const std::string layers = !gpus ? o_.layers + " layers"
                               : device_list.find("cpu") == std::string::npos
                                   ? "cuDNN/cuBLAS layers on " + device_list
                                   : "cuDNN/cuBLAS and " + o_.layers + " layers on " + device_list;
    std::printf(
        "%shoop-train: %s (%zu parameters, %s), %d rank(s) x batch %d, %d thread(s) per rank, %lld images of %s, "
        "%lld steps per epoch, over %s%s\n",
        o_.label.c_str(), o_.model.c_str(), model_->ParamCount(), layers.c_str(), ranks, o_.batch, pool_.threads(),
        static_cast<long long>(images), data.c_str(), static_cast<long long>(steps), comm_.transport_name().c_str(),
        resuming.c_str());
    std::fflush(stdout);
  }
  const auto begin =
      Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(from.wall_s));
  int64_t step = from.global_step;
  int64_t check_at = step + 1, check_every = 1;  // when the ranks next agree on whether to stop
  double step_s = 0;                             // rank 0's mean step time so far, for the cadence
  int64_t timed_steps = 0;

  // Rank 0 writes the checkpoint; every rank takes part in what it needs (batch-norm statistics
  // averaged, the unfinished epoch's sums added up), at a step every rank has reached.
  auto save = [&](int epochs_done, int64_t in_epoch, std::vector<double> partial) -> Status {
    if (in_epoch > 0) {
      HOOP_RETURN_IF_ERROR(dp.Average(buffers, weight()));
      HOOP_RETURN_IF_ERROR(dp.SumDoubles("checkpoint.sums", partial));
    }
    if (rank != 0) return Status::Ok();
    CheckpointInfo ck{o_.model,
                      static_cast<uint32_t>(epochs_done),
                      static_cast<uint64_t>(step),
                      static_cast<uint32_t>(in_epoch),
                      static_cast<uint32_t>(ranks),
                      static_cast<uint32_t>(o_.batch),
                      Since(begin),
                      in_epoch > 0 ? partial : std::vector<double>{},
                      {}};
    for (const auto& m : result.epochs)
      for (double v : EpochValues(m)) ck.history.push_back(v);
    return SaveCheckpoint(o_.checkpoint, ck, state);
  };

  for (int epoch = from.epoch; epoch < o_.epochs; ++epoch) {
    std::vector<double> sums(kSums, 0.0);
    const int64_t first = epoch == from.epoch ? from.step : 0;
    if (first > 0 && rank == 0 && from.partial.size() == static_cast<size_t>(kSums)) sums = from.partial;
    const auto& perm = sampler.Shuffle(epoch);
    const auto epoch_start = Clock::now();
    resumed_at_ = first;
    images_before_ = sums[kImages];
    my_images_ = my_compute_s_ = 0;
    last_progress_ = epoch_start;
    const std::vector<double> joules_before = energy_.Joules();
    double lr = sched.At(std::max<int64_t>(0, step - 1));
    for (int64_t s = first; s < steps; ++s, ++step) {
      const auto t0 = Clock::now();
      if (shared) shared->Read();  // the shared model as it is now
      const Slice slice = sampler.At(s);
      bool caught_up = false;  // a dropped rank that takes this step with the others' mean
      if (backup) {
        auto c = backup->CatchUp(step);
        if (!c.ok())
          return c.status().WithContext(Where() + "epoch " + std::to_string(epoch + 1) + ", step " +
                                        std::to_string(s + 1) + ": backup workers' exchange");
        caught_up = *c;
      }
      if (!caught_up) TrainStep(perm, slice, dp, sums);
      auto t = Clock::now();
      if (backup && !caught_up)
        if (Status st = backup->Exchange(step, slice.count()); !st.ok())
          return st.WithContext(Where() + "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(s + 1) +
                                ": backup workers' exchange");
      if (Status st = dp.Wait(); !st.ok())
        return st.WithContext(Where() + "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(s + 1));
      sums[kComm] += Since(t);
      t = Clock::now();
      lr = sched.At(step);
      sgd.Step(lr);
      if (shared) shared->AddChange();  // this rank's step, added to the shared model
      sums[kOpt] += Since(t);
      step_s += (Since(t0) - step_s) / static_cast<double>(++timed_steps);
      Progress(epoch, s + 1, steps, epoch_start, sums[kImages], false);
      energy_.Poll();
      const int64_t done = step + 1;  // steps finished over the run
      if (done == check_at) {
        // [stop, rank 0's next interval]: about four looks a second, the same steps on every rank
        // (summed over ranks: any rank's signal stops all; the interval is rank 0's alone).
        const double interval = std::clamp(std::floor(0.25 / std::max(step_s, 1e-6)), 1.0, 1000.0);
        std::vector<double> look{static_cast<double>(PendingStop()), rank == 0 ? interval : 0.0};
        if (Status st = dp.SumDoubles("stop", look); !st.ok()) return st.WithContext(Where() + "agreeing on a stop");
        check_every = static_cast<int64_t>(look[1]);
        check_at = done + std::max<int64_t>(1, check_every);
        if (look[0] > 0 && s + 1 < steps) {
          Progress(epoch, s + 1, steps, epoch_start, 0, true);
          const int sig = look[0] >= SIGTERM ? SIGTERM : SIGINT;  // the signal some rank had
          std::vector<double> partial = sums;
          partial[kTrainS] += Since(epoch_start);
          ++step;
          if (!o_.checkpoint.empty())
            if (Status st = save(epoch, s + 1, partial); !st.ok())
              return st.WithContext(Where() + "checkpoint on interrupt");
          result.interrupted = sig;
          if (rank == 0)
            std::printf("hoop-train: interrupted by %s at epoch %d, step %lld of %lld%s\n", ::strsignal(sig), epoch + 1,
                        static_cast<long long>(s + 1), static_cast<long long>(steps),
                        o_.checkpoint.empty()
                            ? " (no --checkpoint: nothing saved)"
                            : ("; checkpoint written to " + o_.checkpoint + ", --resume continues from there").c_str());
          (void)rt->Shutdown();
          return result;
        }
      }
      if (o_.checkpoint_every > 0 && done % o_.checkpoint_every == 0 && s + 1 < steps) {
        std::vector<double> partial = sums;
        partial[kTrainS] += Since(epoch_start);
        ++step;  // save() records steps done
        Status st = save(epoch, s + 1, partial);
        --step;
        if (!st.ok()) return st.WithContext(Where() + "checkpoint at step " + std::to_string(done));
      }
    }
    Progress(epoch, steps, steps, epoch_start, 0, true);
    sums[kTrainS] += Since(epoch_start);
    auto joules = energy_.Since(joules_before, sum);  // the training steps' energy
    if (!joules.ok()) return joules.status().WithContext(Where() + "summing the epoch's energy");
    // Every rank's compute speed this epoch (its images over its time loading, forward and
    // backward: not the waits, which a slow peer inflates), the same vector on every rank.
    // Steps the ranks behind with backup workers took without computing (backup.h), so far.
    std::vector<double> skipped{backup ? static_cast<double>(backup->skipped()) : 0.0};
    if (backup)
      if (Status s = dp.SumDoubles("backup.skipped", skipped); !s.ok())
        return s.WithContext(Where() + "counting skipped steps");
    std::vector<double> speeds(2 * ranks, 0.0);
    speeds[rank] = my_images_;
    speeds[ranks + rank] = my_compute_s_;
    if (Status s = dp.SumDoubles("epoch.speeds", speeds); !s.ok())
      return s.WithContext(Where() + "exchanging the ranks' speeds");
    for (int r = 0; r < ranks; ++r) speeds[r] = speeds[ranks + r] > 0 ? speeds[r] / speeds[ranks + r] : 0;
    speeds.resize(ranks);
    if (shared) {                   // evaluate and save the shared model, once every rank's steps are in
      std::vector<double> done{1};  // a barrier: every rank's last update is in
      if (Status s = dp.SumDoubles("hogwild.epoch", done); !s.ok()) return s.WithContext(Where() + "ending the epoch");
      shared->Read();
    }
    if (Status s = dp.Average(buffers, weight()); !s.ok())
      return s.WithContext(Where() + "averaging batch-norm statistics");
    Evaluate(sums);
    if (Status s = dp.SumDoubles("epoch.sums", sums); !s.ok())
      return s.WithContext(Where() + "summing the epoch's metrics");
    EpochMetrics m = MetricsFromSums(sums, ranks, epoch, Since(begin), lr);
    energy_.Fill(*joules, sums[kImages], m);
    m.shares = sampler.shares();
    m.rank_images_per_s = speeds;
    result.epochs.push_back(m);
    if (o_.balance == "speed") sampler.SetShares(SharesBySpeed(speeds, global_batch));  // for the next epoch
    if (rank != 0) continue;
    std::string split;
    if (backup)
      split += " | " + std::to_string(backup->dropped()) + " gradient(s) dropped so far (" +
               std::to_string(o_.backup_workers) + " backup worker(s)), " +
               std::to_string(static_cast<int64_t>(skipped[0])) + " step(s) skipped by ranks catching up";
    if (o_.balance == "speed" || !o_.shares.empty()) {
      split = " | shares " + FormatShares(m.shares) + ", compute images/s";
      for (int r = 0; r < ranks; ++r) {
        split += r ? '/' : ' ';
        split += std::to_string(static_cast<int>(std::lround(speeds[r])));
      }
      if (o_.balance == "speed" && epoch + 1 < o_.epochs) split += ", next " + FormatShares(sampler.shares());
    }
    std::printf("%s%s%s\n", o_.label.c_str(), FormatEpoch(m, o_.epochs).c_str(), split.c_str());
    std::fflush(stdout);
    if (!o_.metrics.empty())
      if (Status s = WriteMetrics(o_.metrics, info, result.epochs); !s.ok())
        return s.WithContext(Where() + "epoch " + std::to_string(m.epoch));
    if (!o_.checkpoint.empty())
      if (Status s = save(m.epoch, 0, {}); !s.ok()) return s.WithContext(Where() + "epoch " + std::to_string(m.epoch));
  }
  if (backup)
    if (Status s = backup->Drain(); !s.ok()) return s.WithContext(Where() + "receiving the dropped gradients");
  if (Status s = rt->Shutdown(); !s.ok()) return s.WithContext(Where() + "stopping the tensor fusion runtime");
  result.test_probs = std::move(probs_);
  return result;
}

}  // namespace

StatusOr<RunResult> Train(const Options& opts, const Config& cfg, Communicator& comm, const Dataset& train,
                          const Dataset& test, const std::atomic<int>* stop) {
  if (opts.strategy == "ps") return TrainPs(opts, comm, train, test, stop);
  if (opts.strategy == "pipeline") return TrainPipeline(opts, comm, train, test, stop);
  return Run(opts, cfg, comm, train, test, stop).Go();
}

}  // namespace hoop::train
