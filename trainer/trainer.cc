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
#include <thread>

#include "tensorfusion/runtime.h"
#include "trainer/balance.h"
#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/data_parallel.h"
#include "trainer/device_choice.h"
#include "trainer/job_energy.h"
#include "trainer/epoch_sums.h"
#include "trainer/layer_factory.h"
#include "trainer/loss.h"
#include "trainer/model.h"
#include "trainer/precision.h"
#include "trainer/ps_run.h"
#include "trainer/sampler.h"
#include "trainer/sgd.h"
#include "trainer/strategy.h"
#include "trainer/sync_run.h"

namespace hoop::train {

// Rank 0 reads the checkpoint and every rank gets what it found: [ok, epochs done, steps done,
// steps into the unfinished epoch, its ranks, its batch, wall seconds, the partial sums...]. A
// checkpoint of another rank count needs --force, and then resumes at the same image of the
// epoch (the step index depends on the global batch).
StatusOr<Run::Resumed> Run::Resume(DataParallel& dp, const NamedTensors& state, int64_t steps, RunResult* result) {
  std::vector<double> found(7 + kSums, 0.0);
  Status cause;
  CheckpointInfo info;
  if (comm_->rank() == 0) {
    cause = LoadCheckpoint(o_.checkpoint, model_->name, state, &info);
    if (cause.ok() && info.ranks && static_cast<int>(info.ranks) != comm_->size() && !o_.force) {
      char why[512];
      std::snprintf(
          why, sizeof why,
          "%s was written by a %u-rank run; this one has %d ranks: the learning rate "
          "(--lr x ranks) would be %g instead of %g, the global batch %d instead of %u; add --force to resume "
          "anyway",
          o_.checkpoint.c_str(), info.ranks, comm_->size(), o_.lr * comm_->size(), o_.lr * info.ranks,
          o_.batch * comm_->size(), info.batch * info.ranks);
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
  if (old_ranks && (old_ranks != comm_->size() || old_batch != o_.batch)) {
    // The same image of the epoch under the new global batch, and the rate schedule from there.
    const int64_t images_done = r.step * old_batch * old_ranks;
    r.step = std::min<int64_t>(steps, images_done / (static_cast<int64_t>(o_.batch) * comm_->size()));
    r.global_step = static_cast<int64_t>(r.epoch) * steps + r.step;
  }
  if (r.step > 0) r.partial.assign(found.begin() + 7, found.end());
  return r;
}

Run::Resumed Run::ResumedPart(const ResumedAt& at) const {
  Resumed r;
  r.epoch = at.epochs_done;
  r.wall_s = at.wall_s;
  r.step = at.step;  // a mid-epoch checkpoint's: the same image of the epoch under this run's global batch
  if (r.step > 0 && at.ranks && (at.ranks != part_->Replicas() || at.batch != o_.batch))
    r.step = std::min<int64_t>(steps_, r.step * at.batch * at.ranks / static_cast<int64_t>(global_batch_));
  r.global_step = static_cast<int64_t>(r.epoch) * steps_ + r.step;
  if (r.step > 0) r.partial = at.partial;
  return r;
}

Status Run::TrainStep(const std::vector<int64_t>& perm, const Slice& s, std::vector<double>& sums) {
  const auto start = Clock::now();
  if (part_) {
    HOOP_RETURN_IF_ERROR(part_->Compute(perm, s, sums));
    my_images_ += s.count();
    my_compute_s_ += Since(start);
    return Status::Ok();
  }
  auto on_layer = [&](Layer& l) { strategy_->OnLayerGradients(l); };
  if (s.count() == 0) {
    // Nothing left for this rank in the last step: it still hands over zero gradients, layer by
    // layer like the others, so every rank submits the same tensors.
    for (auto it = model_->net.layers().rbegin(); it != model_->net.layers().rend(); ++it) {
      for (Param* p : (*it)->Params()) p->grad.Zero();
      on_layer(**it);
    }
    return Status::Ok();
  }
  const float scale = strategy_->GradientScale(s);
  StepTimes times;
  LossResult r = ComputeGradient(*model_, train_, perm.data() + s.begin, s.count(), scale, pad_, pool_, ws_, on_layer,
                                 comm_->rank() == o_.slow_rank ? o_.slow_ms : 0, times, strategy_->Distilling());
  sums[kData] += times.data;
  sums[kForward] += times.forward;
  sums[kBackward] += times.backward;
  my_images_ += s.count();
  my_compute_s_ += Since(start);
  sums[kLoss] += r.loss_sum;
  sums[kCorrect] += static_cast<double>(r.correct);
  sums[kImages] += s.count();
  return Status::Ok();
}

Status Run::Evaluate(std::vector<double>& sums) {
  if (part_) return part_->Evaluate(sums);
  int64_t n = o_.test_limit > 0 ? std::min<int64_t>(o_.test_limit, test_.count) : test_.count, b, e;
  Shard(n, comm_->rank(), comm_->size(), &b, &e);
  if (o_.keep_predictions)
    probs_.assign(static_cast<size_t>(n) * model_->classes, 0.0f);  // this rank's shard filled in
  const EvalSums r =
      train::Evaluate(*model_, test_, b, e, pad_, pool_, ws_, o_.keep_predictions ? probs_.data() : nullptr);
  sums[kTestLoss] += r.loss;
  sums[kTestCorrect] += r.correct;
  sums[kTestImages] += r.images;
  return Status::Ok();
}

Status Run::AverageBuffers() { return part_ ? part_->AverageBuffers() : dp_->Average(buffers_, Weight()); }

// rank 0's verdict on the output paths, before any training: a --metrics or --checkpoint that
// cannot be written stops every rank now, not after the first epoch.
Status Run::Preflight() {
  std::vector<double> ok{comm_->rank() == 0 ? 1.0 : 0.0};  // summed over ranks: rank 0's alone
  Status cause;
  if (comm_->rank() == 0) {
    cause = ProbeOutputs(o_.metrics, o_.checkpoint);
    ok[0] = cause.ok() ? 1.0 : 0.0;
  }
  HOOP_RETURN_IF_ERROR(sum_("preflight", ok));
  if (ok[0] != 1.0)
    return cause.ok() ? FailedPrecondition("rank 0 cannot write its output files (see its error)") : cause;
  return Status::Ok();
}

// Rank 0's images times the ranks (a model dealt out: the steps' global batches; rank 0, its
// first stage, counts no images).
double Run::ImagesDone(int64_t s, const std::vector<double>& sums) const {
  if (part_) return static_cast<double>(s - resumed_at_) * global_batch_;
  return (sums[kImages] - images_before_) * comm_->size();
}

// The stop signal this rank got (hoop-train's handler stores it), or 0.
int Run::PendingStop() const { return stop_ ? stop_->load(std::memory_order_relaxed) : 0; }

void Run::Progress(int epoch, int64_t s, int64_t steps, Clock::time_point epoch_start, double images, bool final) {
  if (comm_->rank() != 0 || o_.progress_s <= 0) return;
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
                100.0 * static_cast<double>(s) / static_cast<double>(steps), t > 0 ? images / t : 0, left);
  if (tty)
    std::printf("\r\033[K%s%s", o_.label.c_str(), line);
  else
    std::printf("%s%s\n", o_.label.c_str(), line);
  shown_ = tty;
  std::fflush(stdout);
}

double Run::Weight() const { return static_cast<double>(sampler_->shares()[comm_->rank()]) / global_batch_; }

Status Run::MakeModel() {
  auto device = RankDevice(o_.device, o_.devices, comm_->rank(), comm_->size(), comm_->local_rank());
  if (!device.ok()) return device.status();
  if (*device >= 0) {
    auto make = CudaLayerFactory(*device, o_.tf32, o_.deterministic, o_.cudnn_benchmark);
    if (!make.ok()) return make.status();
    HOOP_ASSIGN_OR_RETURN(model_, train::BuildModel(o_.model, o_.seed, **make, train_.channels));
  } else {
    HOOP_ASSIGN_OR_RETURN(model_, BuildHostModel(o_, o_.model, train_.channels));
  }
  HOOP_ASSIGN_OR_RETURN(pad_, InputPad(*model_, train_));
  SetOneDnnThreads(pool_.threads());
  return Status::Ok();
}

Status Run::MakeSampler() {
  const int ranks = comm_->size();
  images_ = o_.train_limit > 0 ? std::min<int64_t>(o_.train_limit, train_.count) : train_.count;
  sampler_.emplace(images_, o_.batch, part_ ? part_->Replica() : comm_->rank(), part_ ? part_->Replicas() : ranks,
                   o_.seed);
  if (o_.slow_rank >= ranks)
    return InvalidArgument("--slow-rank " + std::to_string(o_.slow_rank) + ": the job has ranks 0 to " +
                           std::to_string(ranks - 1));
  if (!o_.shares.empty()) {
    if (static_cast<int>(o_.shares.size()) != ranks)
      return InvalidArgument("--shares gives " + std::to_string(o_.shares.size()) + " image counts for " +
                             std::to_string(ranks) + " ranks: give one per rank");
    sampler_->SetShares(o_.shares);
  }
  global_batch_ = std::accumulate(sampler_->shares().begin(), sampler_->shares().end(), 0);
  steps_ = sampler_->steps_per_epoch();
  return Status::Ok();
}

Status Run::MakeOptimizer() {
  const int ranks = comm_->size();
  sgd_.emplace(model_->net.Params(), o_.momentum, o_.weight_decay, model_->math);
  sched_ = LrSchedule{strategy_->Rate(o_.lr, ranks), strategy_->RateRanks(ranks),
                      static_cast<int64_t>(std::llround(o_.warmup_epochs * steps_)), steps_ * o_.epochs, o_.cosine};
  buffers_ = model_->net.Buffers();
  for (Param* p : model_->net.Params()) state_.emplace_back(p->name, &p->value);
  state_.insert(state_.end(), buffers_.begin(), buffers_.end());
  for (auto& s : sgd_->State()) state_.push_back(s);
  if (part_) part_->UseOptimizer(*sgd_);
  return Status::Ok();
}

Status Run::StartRuntime() {
  if (part_) {
    // A model dealt out moves its own tensors from this thread (a pipeline's activations, its
    // stages' gradients): the run's sums go over the job's communicator from here too.
    Communicator* comm = comm_;
    sum_ = [comm](const std::string&, std::vector<double>& v) {
      const Buffer b{v.data(), v.size(), DType::kF64, MemKind::kHost};
      return comm->Allreduce(b, b, ReduceOp::kSum).Wait();
    };
    return Preflight();
  }
  // --elastic: the runtime on a duplicate, so that this thread's own calls on comm_ (newcomers,
  // shrink, grow, handing the state over) never interleave with the runtime's.
  if (o_.elastic) {
    HOOP_ASSIGN_OR_RETURN(fusion_comm_, comm_->Dup());
  }
  HOOP_ASSIGN_OR_RETURN(
      rt_, fusion::Runtime::Start(o_.elastic ? *fusion_comm_ : *comm_, fusion::FusionOptions::FromConfig(cfg_)));
  dp_.emplace(*rt_, GradientWire(o_));
  DataParallel* dp = &*dp_;
  sum_ = [dp](const std::string& name, std::vector<double>& v) { return dp->SumDoubles(name, v); };
  return Preflight();
}

// Rank 0's model to every rank, the shared parameters of hogwild, every rank's device and its
// energy counters, then the run's first line.
Status Run::ShareStart() {
  const int ranks = comm_->size(), rank = comm_->rank();
  if (!part_)  // a model dealt out: every replica built its part from --seed, or took it from the checkpoint
    if (Status s = dp_->Broadcast(state_); !s.ok()) return s.WithContext(Where() + "broadcasting the initial model");
  if (Status s = strategy_->Begin(dp_ ? &*dp_ : nullptr); !s.ok())
    return s.WithContext(Where() + "starting --strategy " + o_.strategy);
  info_ = RunInfo{o_.model, ranks, o_.batch, pool_.threads(), comm_->transport_name()};
  // Every rank's device, for the metrics and the first line: each adds its own (device + 2, 0 unset).
  std::vector<double> devices(ranks, 0.0);
  devices[rank] = model_->device + 2;
  if (Status s = sum_("devices", devices); !s.ok()) return s.WithContext(Where() + "exchanging the ranks' devices");
  std::string device_list;
  for (int r = 0; r < ranks; ++r) {
    info_.devices.push_back(DeviceName(static_cast<int>(devices[r]) - 2));
    device_list += (r ? "," : "") + info_.devices.back();
  }
  if (Status s = energy_.Open(rank, comm_->local_rank(), sum_, info_, o_.label); !s.ok())
    return s.WithContext(Where() + "finding the energy counters");
  if (rank == 0) Announce(device_list);
  return Status::Ok();
}

void Run::Announce(const std::string& device_list) {
  std::string resuming;
  if (o_.resume)
    resuming = from_.step ? ", resuming in epoch " + std::to_string(from_.epoch + 1) + " after step " +
                                std::to_string(from_.step)
                          : ", resuming after epoch " + std::to_string(from_.epoch);
  if (part_) return part_->Announce(steps_, resuming);
  const std::string data =
      train_.name +
      (pad_ ? " padded to " + std::to_string(model_->input.h) + "x" + std::to_string(model_->input.w) : std::string());
  const bool gpus = device_list.find("cuda") != std::string::npos;
  const std::string cpu_layers = o_.layers + " layers" + (o_.precision == "bf16" ? ", bf16 convolutions" : "");
  const std::string layers = !gpus ? cpu_layers
                             : device_list.find("cpu") == std::string::npos
                                 ? "cuDNN/cuBLAS layers on " + device_list
                                 : "cuDNN/cuBLAS and " + cpu_layers + " on " + device_list;
  std::printf(
      "%shoop-train: %s (%zu parameters, %s), %d rank(s) x batch %d, %d thread(s) per rank, %lld images of %s, "
      "%lld steps per epoch, over %s%s%s\n",
      o_.label.c_str(), o_.model.c_str(), model_->ParamCount(), layers.c_str(), comm_->size(), o_.batch,
      pool_.threads(), static_cast<long long>(images_), data.c_str(), static_cast<long long>(steps_),
      comm_->transport_name().c_str(), o_.grad_wire == "bf16" ? ", gradients bf16 on the wire" : "", resuming.c_str());
  std::fflush(stdout);
}

Status Run::Shutdown() { return rt_ ? rt_->Shutdown() : Status::Ok(); }

StatusOr<RunResult> Run::Go() {
  HOOP_RETURN_IF_ERROR(MakeModel());
  // Before the fusion runtime starts: backup workers duplicate the communicator and the pipeline
  // splits it, collectives on it that must not interleave with the runtime's own.
  HOOP_ASSIGN_OR_RETURN(strategy_,
                        MakeStrategy(StrategyContext{o_, *comm_, *model_, train_, test_, pad_, pool_, &result_}));
  part_ = strategy_->Part();
  HOOP_RETURN_IF_ERROR(MakeSampler());
  HOOP_RETURN_IF_ERROR(MakeOptimizer());
  HOOP_RETURN_IF_ERROR(StartRuntime());
  if (cfg_.join && o_.elastic) return JoinedRun();
  if (o_.resume) {
    if (part_) {
      from_ = ResumedPart(part_->Resumed());
    } else {
      HOOP_ASSIGN_OR_RETURN(from_, Resume(*dp_, state_, steps_, &result_));
    }
    if (from_.epoch >= o_.epochs) {
      if (comm_->rank() == 0)
        std::printf(
            "hoop-train: %s holds %d finished epoch(s), --epochs is %d: nothing left to train (raise --epochs "
            "to go on)\n",
            o_.checkpoint.c_str(), from_.epoch, o_.epochs);
      (void)Shutdown();
      result_.nothing_left = true;
      return std::move(result_);
    }
  }
  HOOP_RETURN_IF_ERROR(ShareStart());
  begin_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(from_.wall_s));
  step_ = applied_ = from_.global_step;
  check_at_ = step_ + 1;
  return Epochs(from_.epoch);
}

// The epochs from `epoch` on, and the run's end.
StatusOr<RunResult> Run::Epochs(int epoch) {
  while (epoch < o_.epochs) {
    HOOP_ASSIGN_OR_RETURN(bool go_on, TrainEpoch(&epoch));
    if (!go_on) {
      (void)Shutdown();
      return std::move(result_);
    }
  }
  if (Status s = strategy_->End(); !s.ok()) return s.WithContext(Where() + "ending --strategy " + o_.strategy);
  if (Status s = Shutdown(); !s.ok()) return s.WithContext(Where() + "stopping the tensor fusion runtime");
  result_.test_probs = std::move(probs_);
  return std::move(result_);
}

StatusOr<RunResult> Train(const Options& opts, const Config& cfg, Communicator& comm, const Dataset& train,
                          const Dataset& test, const std::atomic<int>* stop) {
  if (opts.strategy == "ps") return TrainPs(opts, comm, train, test, stop);
  return Run(opts, cfg, comm, train, test, stop).Go();
}

}  // namespace hoop::train
