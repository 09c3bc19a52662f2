// hoop-train --strategy pipeline (strategy.h; issue 24, item 5): the model's layers split over
// --stages S ranks (pipeline_plan.h: contiguous groups that balance the time rank 0 measures per
// layer), each step's batch in --micro-batches M through them (pipeline_stage.h) in a GPipe or
// 1F1B schedule, the gradients summed over the micro-batches, then one SGD step per stage.
//
// With N = S x D ranks there are D pipelines (rank r is stage r % S of pipeline r / S): each
// takes its share of every global batch (--batch x D, as D ranks of sync), and each stage's
// gradients are summed over the D replicas of that stage through a sub-communicator (Split by
// stage) before the step, so the update is the global batch's mean, as sync's. The pipeline's
// own sub-communicator carries the activations and gradients. A stage that dies fails both on
// every rank (they share the job's connections): the job ends with the error naming it.
// The run's epoch loop (sync_epoch.cc) drives it as a ModelPart: batch-norm statistics are
// averaged over replicas before evaluation and checkpoints, every pipeline evaluates its part
// of the test set through its stages, and rank 0 (stage 0 of pipeline 0) collects the other
// stages' layers for the checkpoint: the whole model, as sync saves it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/epoch_sums.h"
#include "trainer/pipeline_stage.h"
#include "trainer/precision.h"
#include "trainer/strategy.h"

namespace hoop::train {

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
Buffer Doubles(double* p, size_t n) { return Buffer{p, n, DType::kF64, MemKind::kHost}; }
Buffer Floats(float* p, size_t n) { return Buffer{p, n, DType::kF32, MemKind::kHost}; }

constexpr int kStateTag = 1 << 22;  // a stage's layers to rank 0, for the checkpoint

class Pipeline final : public Strategy, public ModelPart {
 public:
  explicit Pipeline(const StrategyContext& c)
      : o_(c.o), comm_(c.comm), model_(c.model), train_(c.train), test_(c.test), pad_(c.pad), pool_(c.pool) {}
  // Reads a resumed checkpoint into the whole model, splits the communicator, measures the
  // layers and keeps this rank's stage in the model.
  Status SetUp(RunResult* result);

  // Strategy: gradients summed over the replicas of the stage, then each stage steps.
  Status Begin(DataParallel*) override { return Status::Ok(); }
  StatusOr<bool> BeginStep(int64_t) override { return false; }
  float GradientScale(const Slice& s) const override { return 1.0f / static_cast<float>(s.step_images); }
  void OnLayerGradients(Layer&) override {}
  Status BeforeOptimizer(int64_t, int, bool) override;
  void AfterStep() override {}
  Status EndEpoch() override { return Status::Ok(); }
  std::string EpochNote() const override;
  Status End() override { return Status::Ok(); }
  int RateRanks(int) const override { return replicas_; }
  ModelPart* Part() override { return this; }

  // ModelPart
  int Replica() const override { return pipeline_; }
  int Replicas() const override { return replicas_; }
  const ResumedAt& Resumed() const override { return from_; }
  void UseOptimizer(Sgd& sgd) override;
  void Announce(int64_t steps, const std::string& resuming) const override;
  Status Compute(const std::vector<int64_t>& perm, const Slice& s, std::vector<double>& sums) override;
  Status Evaluate(std::vector<double>& sums) override;
  Status AverageBuffers() override { return Average(buffers_, *same_stage_, true); }
  Status Save(const std::string& path, const CheckpointInfo& ck) override;

 private:
  // Rank 0 times each layer's forward and backward on one micro-batch; every rank gets the times.
  StatusOr<std::vector<double>> MeasureLayers(std::vector<std::unique_ptr<Layer>>& layers, int micro);
  std::string DescribeSplit(const std::vector<double>& times) const;
  Status Average(const std::vector<Tensor*>& tensors, Communicator& over, bool mean);
  std::vector<float> StageState();
  // Rank 0: every stage's part of pipeline 0, its own and the others' (sent by StageState).
  StatusOr<NamedTensors> Gather(Model& whole, Sgd& sgd);

  const Options& o_;
  Communicator& comm_;
  Model& model_;
  const Dataset& train_;
  const Dataset& test_;
  const int pad_;
  ThreadPool& pool_;
  int stages_ = 1, replicas_ = 1, pipeline_ = 0, stage_index_ = 0;
  std::unique_ptr<Communicator> pipe_, same_stage_;
  std::unique_ptr<PipelineStage> stage_;
  Sgd* sgd_ = nullptr;
  std::vector<int> first_;  // each stage's first layer
  std::vector<std::string> layer_names_;
  std::vector<uint8_t> scratch_labels_;
  size_t parameters_ = 0;
  std::string split_;  // which layers each stage runs, for the banner
  ResumedAt from_;
  std::map<std::string, Tensor> momentum_;  // with --resume: each parameter's, by name
  std::vector<Tensor*> grads_, buffers_;
};

Status Pipeline::SetUp(RunResult* result) {
  const int ranks = comm_.size();
  stages_ = o_.stages > 0 ? o_.stages : ranks;
  if (ranks % stages_ != 0)
    return InvalidArgument("--stages " + std::to_string(stages_) + ": the job's " + std::to_string(ranks) +
                           " rank(s) do not make whole pipelines; run a multiple of " + std::to_string(stages_) +
                           " ranks");
  replicas_ = ranks / stages_;
  pipeline_ = comm_.rank() / stages_;
  stage_index_ = comm_.rank() % stages_;
  parameters_ = model_.ParamCount();
  if (o_.resume) {
    HOOP_RETURN_IF_ERROR(CheckOutputs(o_, comm_));  // before reading: a path that cannot be written fails first
    Sgd whole(model_.net.Params(), o_.momentum, o_.weight_decay);
    HOOP_ASSIGN_OR_RETURN(from_, ResumeWhole(o_, comm_, replicas_, model_, whole, result, true));
    for (auto& m : whole.State()) momentum_.emplace(m.first, *m.second);
  }
  auto layers = model_.net.TakeLayers();
  const int count = static_cast<int>(layers.size());
  if (stages_ > count)
    return InvalidArgument("--stages " + std::to_string(stages_) + ": --model " + o_.model + " has " +
                           std::to_string(count) + " layers to split, so at most " + std::to_string(count) + " stages");
  // Both collectives on the job's communicator, on every rank, before anything else uses it.
  HOOP_ASSIGN_OR_RETURN(pipe_, comm_.Split(pipeline_, stage_index_));
  HOOP_ASSIGN_OR_RETURN(same_stage_, comm_.Split(stage_index_, pipeline_));
  std::vector<Shape> shapes{model_.input};
  shapes[0].n = 1;
  for (auto& l : layers) shapes.push_back(l->OutShape(shapes.back()));
  const int micro = std::max(1, (o_.batch + o_.micro_batches - 1) / o_.micro_batches);
  HOOP_ASSIGN_OR_RETURN(auto times, MeasureLayers(layers, micro));
  first_ = SplitLayers(times, stages_);
  for (auto& l : layers) layer_names_.push_back(l->name());
  split_ = DescribeSplit(times);
  const int end = stage_index_ + 1 < stages_ ? first_[stage_index_ + 1] : count;
  for (int l = first_[stage_index_]; l < end; ++l) model_.net.Add(std::move(layers[l]));
  stage_ = std::make_unique<PipelineStage>(model_.net, shapes[first_[stage_index_]], *pipe_, pool_);
  for (Param* p : model_.net.Params()) grads_.push_back(&p->grad);
  for (auto& b : model_.net.Buffers()) buffers_.push_back(b.second);
  return Status::Ok();
}

StatusOr<std::vector<double>> Pipeline::MeasureLayers(std::vector<std::unique_ptr<Layer>>& layers, int micro) {
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
    train::Gather(train_, idx.data(), micro, in[0], labels, pad_);
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

std::string Pipeline::DescribeSplit(const std::vector<double>& times) const {
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

void Pipeline::UseOptimizer(Sgd& sgd) {
  sgd_ = &sgd;
  for (auto& m : sgd.State())
    if (auto it = momentum_.find(m.first); it != momentum_.end()) m.second->data = it->second.data;
  momentum_.clear();
}

void Pipeline::Announce(int64_t steps, const std::string& resuming) const {
  std::printf(
      "%shoop-train: %s (%zu parameters, %s layers), pipeline: %d stage(s) x %d replica(s), batch %d per replica "
      "in %d micro-batch(es), schedule %s; %s; %d thread(s) per rank, %lld steps per epoch, over %s\n",
      o_.label.c_str(), o_.model.c_str(), parameters_, o_.layers.c_str(), stages_, replicas_, o_.batch,
      o_.micro_batches, o_.schedule_pipe.c_str(), split_.c_str(), pool_.threads(), static_cast<long long>(steps),
      (comm_.transport_name() + resuming).c_str());
  std::fflush(stdout);
}

std::string Pipeline::EpochNote() const {
  return " | pipeline " + std::to_string(stages_) + "x" + std::to_string(replicas_) + ", " +
         std::to_string(o_.micro_batches) + " micro-batch(es), " + o_.schedule_pipe;
}

Status Pipeline::Average(const std::vector<Tensor*>& tensors, Communicator& over, bool mean) {
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

Status Pipeline::BeforeOptimizer(int64_t, int, bool) {
  if (Status st = Average(grads_, *same_stage_, false); !st.ok())
    return st.WithContext("summing stage " + std::to_string(stage_index_) + "'s gradients over the replicas");
  return Status::Ok();
}

Status Pipeline::Compute(const std::vector<int64_t>& perm, const Slice& slice, std::vector<double>& sums) {
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
        train::Gather(train_, at, sizes[i], *images, lab ? *lab : scratch_labels_, pad_);
        sums[kData] += Since(t0);
      } else {
        lab->resize(sizes[i]);
        for (int k = 0; k < sizes[i]; ++k) (*lab)[k] = train_.labels[at[k]];
      }
    };
    HOOP_RETURN_IF_ERROR(
        stage_->Train(PipeSchedule(o_.schedule_pipe, stage_index_, stages_, static_cast<int>(sizes.size())), sizes,
                      fill, GradientScale(slice), &r, &t));
  }
  sums[kForward] += t.forward;
  sums[kBackward] += t.backward;
  sums[kComm] += t.wait;
  if (stage_->last()) {
    sums[kLoss] += r.loss_sum;
    sums[kCorrect] += static_cast<double>(r.correct);
    sums[kImages] += slice.count();
  }
  return Status::Ok();
}

Status Pipeline::Evaluate(std::vector<double>& sums) {
  const int64_t n = o_.test_limit > 0 ? std::min<int64_t>(o_.test_limit, test_.count) : test_.count;
  int64_t b, e;
  Shard(n, pipeline_, replicas_, &b, &e);
  const int chunk = EvalChunk(o_.model);
  std::vector<int64_t> idx;
  for (int64_t at = b; at < e; at += chunk) {
    const int m = static_cast<int>(std::min<int64_t>(chunk, e - at));
    idx.resize(m);
    for (int i = 0; i < m; ++i) idx[i] = at + i;
    LossResult r;
    HOOP_RETURN_IF_ERROR(stage_->Evaluate(
        m,
        [&](int, Tensor* images, std::vector<uint8_t>* labels) {
          if (images)
            train::Gather(test_, idx.data(), m, *images, labels ? *labels : scratch_labels_, pad_);
          else {
            labels->resize(m);
            for (int i = 0; i < m; ++i) (*labels)[i] = test_.labels[idx[i]];
          }
        },
        &r));
    if (stage_->last()) {
      sums[kTestLoss] += r.loss_sum;
      sums[kTestCorrect] += static_cast<double>(r.correct);
      sums[kTestImages] += m;
    }
  }
  return Status::Ok();
}

std::vector<float> Pipeline::StageState() {
  std::vector<float> out;
  for (Param* p : model_.net.Params()) out.insert(out.end(), p->value.data.begin(), p->value.data.end());
  for (auto& b : model_.net.Buffers()) out.insert(out.end(), b.second->data.begin(), b.second->data.end());
  for (auto& m : sgd_->State()) out.insert(out.end(), m.second->data.begin(), m.second->data.end());
  return out;
}

StatusOr<NamedTensors> Pipeline::Gather(Model& whole, Sgd& sgd) {
  std::vector<Param*> all = whole.net.Params();
  auto momentum = sgd.State();
  const auto& layers = whole.net.layers();
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
  for (auto& b : whole.net.Buffers()) tensors.push_back(b);
  for (auto& m : momentum) tensors.push_back(m);
  return tensors;
}

Status Pipeline::Save(const std::string& path, const CheckpointInfo& ck) {
  if (pipeline_ != 0) return Status::Ok();
  if (stage_index_ != 0) {
    std::vector<float> state = StageState();
    return pipe_->SendNow(Floats(state.data(), state.size()), 0, kStateTag);
  }
  // Rank 0: a whole model to hold every stage's part, filled stage by stage in its layers' order.
  HOOP_ASSIGN_OR_RETURN(auto whole, BuildHostModel(o_, o_.model, train_.channels));
  Sgd sgd(whole->net.Params(), o_.momentum, o_.weight_decay);
  HOOP_ASSIGN_OR_RETURN(NamedTensors tensors, Gather(*whole, sgd));
  return SaveCheckpoint(path, ck, tensors);
}

}  // namespace

StatusOr<std::unique_ptr<Strategy>> PipelineStrategy(const StrategyContext& c) {
  auto p = std::make_unique<Pipeline>(c);
  HOOP_RETURN_IF_ERROR(p->SetUp(c.result));
  return std::unique_ptr<Strategy>(std::move(p));
}

}  // namespace hoop::train
