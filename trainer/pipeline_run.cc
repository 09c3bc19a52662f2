#include "trainer/pipeline_run.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/epoch_sums.h"
#include "trainer/job_energy.h"
#include "trainer/layer_factory.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/pipeline_stage.h"
#include "trainer/resume_whole.h"
#include "trainer/sampler.h"
#include "trainer/sgd.h"

namespace hoop::train {

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
Buffer Doubles(double* p, size_t n) { return Buffer{p, n, DType::kF64, MemKind::kHost}; }
Buffer Floats(float* p, size_t n) { return Buffer{p, n, DType::kF32, MemKind::kHost}; }

// The epoch's sums (epoch_sums.h): the losses and images on last stages only.
constexpr int kStateTag = 1 << 22;  // a stage's layers to rank 0, for the checkpoint

class PipelineRun {
 public:
  PipelineRun(const Options& o, Communicator& comm, const Dataset& train, const Dataset& test,
              const std::atomic<int>* stop)
      : o_(o), comm_(comm), train_(train), test_(test), stop_(stop), pool_(o.threads) {}
  StatusOr<RunResult> Go();

 private:
  // The run in parts: set-up (true: a resumed run with nothing left), the start of training, an
  // epoch (true: stopped by a signal), its steps, the stop check, and the epoch's end.
  StatusOr<bool> SetUp();
  std::string DescribeSplit(const std::vector<double>& times) const;
  Status Start();
  void Announce() const;
  StatusOr<bool> Epoch(int epoch);
  StatusOr<bool> StopIfAsked(int epoch, int64_t s, const std::vector<double>& sums, Clock::time_point epoch_start);
  Status Step(int epoch, int64_t s, const std::vector<int64_t>& perm, std::vector<double>& sums);
  Status EndEpoch(int epoch, std::vector<double>& sums, const std::vector<double>& joules_before);
  // Rank 0 times each layer's forward and backward on one micro-batch; every rank gets the times.
  StatusOr<std::vector<double>> MeasureLayers(std::vector<std::unique_ptr<Layer>>& layers, int micro);
  Status Average(std::vector<Tensor*> tensors, Communicator& over, bool mean);
  // Pipeline 0's stages' layers, parameters, buffers and momentum to rank 0, which saves them.
  // in_epoch > 0: saved that many steps into the next epoch, with its sums so far (`partial`).
  Status Checkpoint(const RunResult& result, int epochs_done, double wall_s, int64_t in_epoch = 0,
                    std::vector<double> partial = {});
  std::vector<float> StageState();
  void Evaluate(std::vector<double>& sums, Status* failed);

  const Options& o_;
  Communicator& comm_;
  const Dataset& train_;
  const Dataset& test_;
  const std::atomic<int>* stop_;
  ThreadPool pool_;
  int stages_ = 1, replicas_ = 1, pipeline_ = 0, stage_index_ = 0, pad_ = 0;
  std::unique_ptr<Communicator> pipe_, same_stage_;
  std::unique_ptr<PipelineStage> stage_;
  std::unique_ptr<Sgd> sgd_;
  std::vector<int> first_;  // each stage's first layer
  std::vector<std::string> layer_names_;
  std::vector<uint8_t> scratch_labels_;
  int64_t steps_ = 0;
  // The run's state across its parts.
  RunResult result_;
  ResumedAt from_;
  size_t parameters_ = 0;
  std::string split_;  // which layers each stage runs, for the banner
  std::unique_ptr<DistributedSampler> sampler_;
  int64_t first_step_ = 0;  // of the first epoch run (a mid-epoch resume's)
  LrSchedule sched_;
  RunInfo info_;
  JobEnergy energy_;
  JobEnergy::Sum sum_;
  std::vector<Tensor*> grads_, buffers_;
  Clock::time_point begin_;
  int64_t step_ = 0;
  double lr_ = 0;
};

StatusOr<std::vector<double>> PipelineRun::MeasureLayers(std::vector<std::unique_ptr<Layer>>& layers, int micro) {
  const size_t n = layers.size();
  std::vector<double> times(n, 0.0);
  if (comm_.rank() == 0) {
    std::vector<Chain> one(n);
    for (size_t i = 0; i < n; ++i) one[i].Add(std::move(layers[i]));
    std::vector<std::pair<std::string, Tensor*>> buffers;
    for (auto& c : one)
      for (auto& b : c.Buffers()) buffers.push_back(b);
    std::vector<std::vector<float>> kept;
    for (auto& b : buffers) kept.push_back(b.second->data);  // measuring must not move the statistics
    std::vector<int64_t> idx(micro);
    for (int i = 0; i < micro; ++i) idx[i] = i % train_.count;
    std::vector<Tensor> in(n + 1);
    std::vector<uint8_t> labels;
    Gather(train_, idx.data(), micro, in[0], labels, pad_);
    Tensor grad, dx;
    for (int rep = 0; rep < 3; ++rep) {  // the first warms up and is not counted
      for (size_t i = 0; i < n; ++i) {
        const auto t = Clock::now();
        in[i + 1] = one[i].Forward(in[i], Mode::kTrain, pool_);
        if (rep > 0) times[i] += Since(t);
      }
      grad = in[n];
      std::fill(grad.data.begin(), grad.data.end(), 1e-3f);
      for (size_t i = n; i-- > 0;) {
        const auto t = Clock::now();
        one[i].Backward(in[i], grad, i > 0 ? &dx : nullptr, pool_);
        if (rep > 0) times[i] += Since(t);
        std::swap(grad, dx);
      }
    }
    for (size_t b = 0; b < buffers.size(); ++b) buffers[b].second->data = kept[b];
    for (size_t i = 0; i < n; ++i) layers[i] = std::move(one[i].TakeLayers()[0]);
  }
  HOOP_RETURN_IF_ERROR(comm_.Allreduce(Doubles(times.data(), n), Doubles(times.data(), n), ReduceOp::kSum).Wait());
  return times;
}

Status PipelineRun::Average(std::vector<Tensor*> tensors, Communicator& over, bool mean) {
  std::vector<float> flat;
  for (Tensor* t : tensors) flat.insert(flat.end(), t->data.begin(), t->data.end());
  if (flat.empty() || over.size() == 1) return Status::Ok();
  HOOP_RETURN_IF_ERROR(
      over.Allreduce(Floats(flat.data(), flat.size()), Floats(flat.data(), flat.size()), ReduceOp::kSum).Wait());
  const float scale = mean ? 1.0f / static_cast<float>(over.size()) : 1.0f;
  size_t at = 0;
  for (Tensor* t : tensors)
    for (float& v : t->data) v = flat[at++] * scale;
  return Status::Ok();
}

std::vector<float> PipelineRun::StageState() {
  std::vector<float> out;
  Chain& c = stage_->layers();
  for (Param* p : c.Params()) out.insert(out.end(), p->value.data.begin(), p->value.data.end());
  for (auto& b : c.Buffers()) out.insert(out.end(), b.second->data.begin(), b.second->data.end());
  for (auto& m : sgd_->State()) out.insert(out.end(), m.second->data.begin(), m.second->data.end());
  return out;
}

Status PipelineRun::Checkpoint(const RunResult& result, int epochs_done, double wall_s, int64_t in_epoch,
                               std::vector<double> partial) {
  if (pipeline_ != 0) return Status::Ok();
  if (stage_index_ != 0) {
    std::vector<float> state = StageState();
    return pipe_->SendNow(Floats(state.data(), state.size()), 0, kStateTag);
  }
  // Rank 0: a whole model to hold every stage's part, filled stage by stage in its layers' order.
  HOOP_ASSIGN_OR_RETURN(
      auto whole,
      BuildModel(o_.model, o_.seed, o_.layers == "onednn" ? Layers::kOneDnn : Layers::kNative, train_.channels));
  std::vector<Param*> all = whole->net.Params();
  Sgd sgd(all, o_.momentum, o_.weight_decay);
  auto momentum = sgd.State();
  const auto& layers = whole->net.layers();
  for (int s = 0; s < stages_; ++s) {
    const int end = s + 1 < stages_ ? first_[s + 1] : static_cast<int>(layers.size());
    std::vector<Tensor*> params, buffers, moments;
    for (int l = first_[s]; l < end; ++l) {
      for (Param* p : layers[l]->Params()) {
        params.push_back(&p->value);
        moments.push_back(momentum[std::find(all.begin(), all.end(), p) - all.begin()].second);
      }
      for (auto& b : layers[l]->Buffers()) buffers.push_back(b.second);
    }
    std::vector<float> state;
    if (s == 0) {
      state = StageState();
    } else {
      size_t floats = 0;
      for (auto* group : {&params, &buffers, &moments})
        for (Tensor* t : *group) floats += t->size();
      state.resize(floats);
      HOOP_RETURN_IF_ERROR(pipe_->RecvNow(Floats(state.data(), state.size()), s, kStateTag));
    }
    size_t at = 0;
    for (auto* group : {&params, &buffers, &moments})
      for (Tensor* t : *group) {
        std::copy_n(state.begin() + at, t->size(), t->data.begin());
        at += t->size();
      }
  }
  NamedTensors tensors;
  for (Param* p : all) tensors.emplace_back(p->name, &p->value);
  for (auto& b : whole->net.Buffers()) tensors.push_back(b);
  for (auto& m : momentum) tensors.push_back(m);
  CheckpointInfo ck{o_.model,
                    static_cast<uint32_t>(epochs_done),
                    static_cast<uint64_t>(steps_ * epochs_done + in_epoch),
                    static_cast<uint32_t>(in_epoch),
                    static_cast<uint32_t>(replicas_),
                    static_cast<uint32_t>(o_.batch),
                    wall_s,
                    std::move(partial),
                    {}};
  for (const auto& m : result.epochs)
    for (double v : EpochValues(m)) ck.history.push_back(v);
  return SaveCheckpoint(o_.checkpoint, ck, tensors);
}

void PipelineRun::Evaluate(std::vector<double>& sums, Status* failed) {
  const int64_t n = o_.test_limit > 0 ? std::min<int64_t>(o_.test_limit, test_.count) : test_.count;
  int64_t b, e;
  Shard(n, pipeline_, replicas_, &b, &e);
  const int chunk = EvalChunk(o_.model);
  std::vector<int64_t> idx;
  for (int64_t at = b; at < e && failed->ok(); at += chunk) {
    const int m = static_cast<int>(std::min<int64_t>(chunk, e - at));
    idx.resize(m);
    for (int i = 0; i < m; ++i) idx[i] = at + i;
    LossResult r;
    *failed = stage_->Evaluate(
        m,
        [&](int, Tensor* images, std::vector<uint8_t>* labels) {
          if (images)
            Gather(test_, idx.data(), m, *images, labels ? *labels : scratch_labels_, pad_);
          else {
            labels->resize(m);
            for (int i = 0; i < m; ++i) (*labels)[i] = test_.labels[idx[i]];
          }
        },
        &r);
    if (stage_->last()) {
      sums[kTestLoss] += r.loss_sum;
      sums[kTestCorrect] += static_cast<double>(r.correct);
      sums[kTestImages] += m;
    }
  }
}

StatusOr<RunResult> PipelineRun::Go() {
  HOOP_ASSIGN_OR_RETURN(bool done, SetUp());
  if (done) return result_;
  HOOP_RETURN_IF_ERROR(Start());
  for (int epoch = from_.epochs_done; epoch < o_.epochs; ++epoch) {
    HOOP_ASSIGN_OR_RETURN(bool stopped, Epoch(epoch));
    if (stopped) break;
  }
  return result_;
}

StatusOr<bool> PipelineRun::SetUp() {
  const int ranks = comm_.size();
  stages_ = o_.stages > 0 ? o_.stages : ranks;
  if (ranks % stages_ != 0)
    return InvalidArgument("--stages " + std::to_string(stages_) + ": the job's " + std::to_string(ranks) +
                           " rank(s) do not make whole pipelines; run a multiple of " + std::to_string(stages_) +
                           " ranks");
  replicas_ = ranks / stages_;
  pipeline_ = comm_.rank() / stages_;
  stage_index_ = comm_.rank() % stages_;
  if (o_.slow_rank >= ranks)
    return InvalidArgument("--slow-rank " + std::to_string(o_.slow_rank) + ": the job has ranks 0 to " +
                           std::to_string(ranks - 1));
  HOOP_ASSIGN_OR_RETURN(
      auto model,
      BuildModel(o_.model, o_.seed, o_.layers == "onednn" ? Layers::kOneDnn : Layers::kNative, train_.channels));
  HOOP_ASSIGN_OR_RETURN(pad_, InputPad(*model, train_));
  SetOneDnnThreads(pool_.threads());
  parameters_ = model->ParamCount();
  HOOP_RETURN_IF_ERROR(CheckOutputs(o_, comm_));
  std::map<std::string, Tensor> momentum;  // with --resume: each parameter's, by name
  if (o_.resume) {
    Sgd whole(model->net.Params(), o_.momentum, o_.weight_decay);
    HOOP_ASSIGN_OR_RETURN(from_, ResumeWhole(o_, comm_, replicas_, *model, whole, &result_, true));
    for (auto& m : whole.State()) momentum.emplace(m.first, *m.second);
    if (NothingLeft(o_, comm_, from_, &result_)) return true;
  }
  auto layers = model->net.TakeLayers();
  const int count = static_cast<int>(layers.size());
  if (stages_ > count)
    return InvalidArgument("--stages " + std::to_string(stages_) + ": --model " + o_.model + " has " +
                           std::to_string(count) + " layers to split, so at most " + std::to_string(count) + " stages");
  // Both collectives on the job's communicator, on every rank, before anything else uses it.
  HOOP_ASSIGN_OR_RETURN(pipe_, comm_.Split(pipeline_, stage_index_));
  HOOP_ASSIGN_OR_RETURN(same_stage_, comm_.Split(stage_index_, pipeline_));
  std::vector<Shape> shapes{model->input};
  shapes[0].n = 1;
  for (auto& l : layers) shapes.push_back(l->OutShape(shapes.back()));
  const int micro = std::max(1, (o_.batch + o_.micro_batches - 1) / o_.micro_batches);
  HOOP_ASSIGN_OR_RETURN(auto times, MeasureLayers(layers, micro));
  first_ = SplitLayers(times, stages_);
  for (auto& l : layers) layer_names_.push_back(l->name());
  split_ = DescribeSplit(times);
  Chain mine;
  const int end = stage_index_ + 1 < stages_ ? first_[stage_index_ + 1] : count;
  for (int l = first_[stage_index_]; l < end; ++l) mine.Add(std::move(layers[l]));
  layers.clear();
  stage_ = std::make_unique<PipelineStage>(std::move(mine), shapes[first_[stage_index_]], *pipe_, pool_);
  sgd_ = std::make_unique<Sgd>(stage_->layers().Params(), o_.momentum, o_.weight_decay);
  for (auto& m : sgd_->State())
    if (auto it = momentum.find(m.first); it != momentum.end()) m.second->data = it->second.data;
  return false;
}

std::string PipelineRun::DescribeSplit(const std::vector<double>& times) const {
  std::string plan;
  const int count = static_cast<int>(layer_names_.size());
  for (int s = 0; s < stages_; ++s) {
    const int end = s + 1 < stages_ ? first_[s + 1] : count;
    double ms = 0;
    for (int l = first_[s]; l < end; ++l) ms += times[l] * 1000 / 2;  // two timed repetitions
    char part[160];
    std::snprintf(part, sizeof part, "%sstage %d: %s..%s (%.2f ms)", s ? ", " : "", s, layer_names_[first_[s]].c_str(),
                  layer_names_[end - 1].c_str(), ms);
    plan += part;
  }
  return plan;
}

Status PipelineRun::Start() {
  const int64_t images = o_.train_limit > 0 ? std::min<int64_t>(o_.train_limit, train_.count) : train_.count;
  sampler_ = std::make_unique<DistributedSampler>(images, o_.batch, pipeline_, replicas_, o_.seed);
  steps_ = sampler_->steps_per_epoch();
  // A mid-epoch checkpoint: the same image of the epoch under this run's global batch.
  first_step_ = from_.step;
  if (first_step_ > 0 && from_.ranks && (from_.ranks != replicas_ || from_.batch != o_.batch))
    first_step_ = std::min<int64_t>(
        steps_, first_step_ * from_.batch * from_.ranks / (static_cast<int64_t>(o_.batch) * replicas_));
  sched_ = LrSchedule{o_.lr, replicas_, static_cast<int64_t>(std::llround(o_.warmup_epochs * steps_)),
                      steps_ * o_.epochs, o_.cosine};
  if (comm_.rank() == 0) Announce();
  info_ = RunInfo{o_.model, comm_.size(), o_.batch, pool_.threads(), comm_.transport_name()};
  info_.devices.assign(comm_.size(), "cpu");
  sum_ = [this](const std::string&, std::vector<double>& v) {
    return comm_.Allreduce(Doubles(v.data(), v.size()), Doubles(v.data(), v.size()), ReduceOp::kSum).Wait();
  };
  if (Status st = energy_.Open(comm_.rank(), comm_.local_rank(), sum_, info_, o_.label); !st.ok())
    return st.WithContext("finding the energy counters");
  for (Param* p : stage_->layers().Params()) grads_.push_back(&p->grad);
  for (auto& b : stage_->layers().Buffers()) buffers_.push_back(b.second);
  begin_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(from_.wall_s));
  step_ = from_.epochs_done * steps_ + first_step_;
  return Status::Ok();
}

void PipelineRun::Announce() const {
  const std::string resuming = !o_.resume    ? std::string()
                               : first_step_ ? ", resuming in epoch " + std::to_string(from_.epochs_done + 1) +
                                                   " after step " + std::to_string(first_step_)
                                             : ", resuming after epoch " + std::to_string(from_.epochs_done);
  std::printf(
      "hoop-train: %s (%zu parameters, %s layers), pipeline: %d stage(s) x %d replica(s), batch %d per replica "
      "in %d micro-batch(es), schedule %s; %s; %d thread(s) per rank, %lld steps per epoch, over %s\n",
      o_.model.c_str(), parameters_, o_.layers.c_str(), stages_, replicas_, o_.batch, o_.micro_batches,
      o_.schedule_pipe.c_str(), split_.c_str(), pool_.threads(), static_cast<long long>(steps_),
      (comm_.transport_name() + resuming).c_str());
  std::fflush(stdout);
}

StatusOr<bool> PipelineRun::Epoch(int epoch) {
  std::vector<double> sums(kSums, 0.0);
  const int64_t begin_at = epoch == from_.epochs_done ? first_step_ : 0;
  if (begin_at > 0 && comm_.rank() == 0 && from_.partial.size() == static_cast<size_t>(kSums)) sums = from_.partial;
  const auto& perm = sampler_->Shuffle(epoch);
  const auto epoch_start = Clock::now();
  const std::vector<double> joules_before = energy_.Joules();
  for (int64_t s = begin_at; s < steps_; ++s, ++step_) {
    if ((s - begin_at) % 8 == 0) {  // the ranks agree whether a stop signal arrived anywhere
      HOOP_ASSIGN_OR_RETURN(bool stopped, StopIfAsked(epoch, s, sums, epoch_start));
      if (stopped) return true;
    }
    HOOP_RETURN_IF_ERROR(Step(epoch, s, perm, sums));
  }
  sums[kTrainS] = Since(epoch_start);
  HOOP_RETURN_IF_ERROR(EndEpoch(epoch, sums, joules_before));
  return false;
}

StatusOr<bool> PipelineRun::StopIfAsked(int epoch, int64_t s, const std::vector<double>& sums,
                                        Clock::time_point epoch_start) {
  double stop = stop_ ? stop_->load(std::memory_order_relaxed) : 0;
  if (Status st = comm_.Allreduce(Doubles(&stop, 1), Doubles(&stop, 1), ReduceOp::kMax).Wait(); !st.ok())
    return st.WithContext("epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(s + 1) +
                          ": agreeing on a stop");
  if (stop <= 0) return false;
  result_.interrupted = static_cast<int>(stop) >= SIGTERM ? SIGTERM : SIGINT;
  if (!o_.checkpoint.empty()) {  // saved here, s steps into the epoch, with its sums so far
    std::vector<double> partial = sums;
    partial[kTrainS] += Since(epoch_start);
    Status st = Average(buffers_, *same_stage_, true);
    if (st.ok())
      st = comm_.Allreduce(Doubles(partial.data(), kSums), Doubles(partial.data(), kSums), ReduceOp::kSum).Wait();
    if (st.ok()) st = Checkpoint(result_, epoch, Since(begin_), s, partial);
    if (!st.ok()) return st.WithContext("checkpoint on interrupt");
  }
  if (comm_.rank() == 0)
    std::printf("hoop-train: interrupted by %s at epoch %d, step %lld of %lld%s\n", ::strsignal(result_.interrupted),
                epoch + 1, static_cast<long long>(s), static_cast<long long>(steps_),
                o_.checkpoint.empty()
                    ? " (no --checkpoint: nothing saved)"
                    : ("; checkpoint written to " + o_.checkpoint + ", --resume continues from there").c_str());
  return true;
}

Status PipelineRun::Step(int epoch, int64_t s, const std::vector<int64_t>& perm, std::vector<double>& sums) {
  const auto where = [&] { return "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(s + 1); };
  const Slice slice = sampler_->At(s);
  const std::vector<int> sizes = MicroBatches(slice.count(), o_.micro_batches);
  std::vector<int64_t> offset{slice.begin};
  for (int n : sizes) offset.push_back(offset.back() + n);
  PipelineStage::Times t;
  LossResult r;
  if (sizes.empty()) {
    for (Tensor* g : grads_) g->Zero();
  } else {
    if (comm_.rank() == o_.slow_rank)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o_.slow_ms));
    auto fill = [&](int i, Tensor* images, std::vector<uint8_t>* lab) {
      const int64_t* at = perm.data() + offset[i];
      if (images) {
        const auto t0 = Clock::now();
        Gather(train_, at, sizes[i], *images, lab ? *lab : scratch_labels_, pad_);
        sums[kData] += Since(t0);
      } else {
        lab->resize(sizes[i]);
        for (int k = 0; k < sizes[i]; ++k) (*lab)[k] = train_.labels[at[k]];
      }
    };
    if (Status st = stage_->Train(PipeSchedule(o_.schedule_pipe, stage_index_, stages_, static_cast<int>(sizes.size())),
                                  sizes, fill, 1.0f / static_cast<float>(slice.step_images), &r, &t);
        !st.ok())
      return st.WithContext(where());
  }
  sums[kForward] += t.forward;
  sums[kBackward] += t.backward;
  sums[kComm] += t.wait;
  if (stage_->last()) {
    sums[kLoss] += r.loss_sum;
    sums[kCorrect] += static_cast<double>(r.correct);
    sums[kImages] += slice.count();
  }
  auto t0 = Clock::now();
  if (Status st = Average(grads_, *same_stage_, false); !st.ok())
    return st.WithContext(where() + ": summing stage " + std::to_string(stage_index_) +
                          "'s gradients over the replicas");
  sums[kComm] += Since(t0);
  t0 = Clock::now();
  lr_ = sched_.At(step_);
  sgd_->Step(lr_);
  sums[kOpt] += Since(t0);
  energy_.Poll();
  return Status::Ok();
}

Status PipelineRun::EndEpoch(int epoch, std::vector<double>& sums, const std::vector<double>& joules_before) {
  auto joules = energy_.Since(joules_before, sum_);  // the training steps' energy
  if (!joules.ok()) return joules.status().WithContext("summing epoch " + std::to_string(epoch + 1) + "'s energy");
  if (Status st = Average(buffers_, *same_stage_, true); !st.ok())
    return st.WithContext("averaging batch-norm statistics");
  Status failed;
  Evaluate(sums, &failed);
  if (!failed.ok()) return failed.WithContext("evaluating epoch " + std::to_string(epoch + 1));
  HOOP_RETURN_IF_ERROR(
      comm_.Allreduce(Doubles(sums.data(), kSums), Doubles(sums.data(), kSums), ReduceOp::kSum).Wait());
  EpochMetrics m = MetricsFromSums(sums, comm_.size(), epoch, Since(begin_), lr_);
  energy_.Fill(*joules, sums[kImages], m);
  result_.epochs.push_back(m);
  if (comm_.rank() == 0) {
    std::printf("%s | pipeline %dx%d, %d micro-batch(es), %s\n", FormatEpoch(m, o_.epochs).c_str(), stages_, replicas_,
                o_.micro_batches, o_.schedule_pipe.c_str());
    std::fflush(stdout);
    if (!o_.metrics.empty())
      if (Status st = WriteMetrics(o_.metrics, info_, result_.epochs); !st.ok())
        return st.WithContext("epoch " + std::to_string(m.epoch));
  }
  if (!o_.checkpoint.empty())
    if (Status st = Checkpoint(result_, m.epoch, Since(begin_)); !st.ok())
      return st.WithContext("checkpoint after epoch " + std::to_string(m.epoch));
  return Status::Ok();
}

}  // namespace

StatusOr<RunResult> TrainPipeline(const Options& opts, Communicator& comm, const Dataset& train, const Dataset& test,
                                  const std::atomic<int>* stop) {
  return PipelineRun(opts, comm, train, test, stop).Go();
}

}  // namespace hoop::train
