#include "trainer/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "tensorfusion/runtime.h"
#include "trainer/checkpoint.h"
#include "trainer/data_parallel.h"
#include "trainer/loss.h"
#include "trainer/model.h"
#include "trainer/sampler.h"
#include "trainer/sgd.h"

namespace hoop::train {

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Every rank's part of an epoch, summed over ranks by one allreduce.
enum Sum { kLoss, kCorrect, kImages, kTestLoss, kTestCorrect, kTestImages, kData, kForward, kBackward, kComm, kOpt, kTrainS, kSums };

class Run {
 public:
  Run(const Options& o, const Config& cfg, Communicator& comm, const Dataset& train, const Dataset& test)
      : o_(o), cfg_(cfg), comm_(comm), train_(train), test_(test), pool_(o.threads) {}

  StatusOr<RunResult> Go();

 private:
  Status Resume(DataParallel& dp, const NamedTensors& state, int* first_epoch, int64_t* step);
  void TrainStep(const std::vector<int64_t>& perm, const Slice& s, DataParallel& dp, std::vector<double>& sums);
  void Evaluate(std::vector<double>& sums);
  std::string Where() const { return "hoop-train: rank " + std::to_string(comm_.rank()) + ": "; }

  const Options& o_;
  const Config& cfg_;
  Communicator& comm_;
  const Dataset& train_;
  const Dataset& test_;
  ThreadPool pool_;
  std::unique_ptr<Model> model_;
  Tensor batch_, dlogits_;
  std::vector<uint8_t> labels_;
};

Status Run::Resume(DataParallel& dp, const NamedTensors& state, int* first_epoch, int64_t* step) {
  // Rank 0 reads the file; [ok, epochs done, steps done] tells the others what it found.
  std::vector<double> found(3, 0.0);
  Status cause;
  if (comm_.rank() == 0) {
    CheckpointInfo info;
    cause = LoadCheckpoint(o_.checkpoint, model_->name, state, &info);
    if (cause.ok()) found = {1.0, static_cast<double>(info.epochs_done), static_cast<double>(info.steps_done)};
  }
  if (Status s = dp.SumDoubles("resume", found); !s.ok()) return s;
  if (found[0] != 1.0) return cause.ok() ? FailedPrecondition("rank 0 could not resume from " + o_.checkpoint + " (see its error)") : cause;
  *first_epoch = static_cast<int>(found[1]);
  *step = static_cast<int64_t>(found[2]);
  return Status::Ok();
}

void Run::TrainStep(const std::vector<int64_t>& perm, const Slice& s, DataParallel& dp, std::vector<double>& sums) {
  auto t = Clock::now();
  Gather(train_, perm.data() + s.begin, s.count(), batch_, labels_);
  sums[kData] += Since(t);
  t = Clock::now();
  auto on_layer = [&](Layer& l) { dp.GradientsReady(l); };
  if (s.count() == 0) {
    // Nothing left for this rank in the last step: it still sends zero gradients, layer by
    // layer like the others, so every rank submits the same tensors.
    for (auto it = model_->net.layers().rbegin(); it != model_->net.layers().rend(); ++it) {
      for (Param* p : (*it)->Params()) p->grad.Zero();
      on_layer(**it);
    }
    return;
  }
  const Tensor& logits = model_->net.Forward(batch_, Mode::kTrain, pool_);
  LossResult r = SoftmaxCrossEntropy(logits, labels_, 1.0f / static_cast<float>(s.step_images), &dlogits_);
  sums[kForward] += Since(t);
  t = Clock::now();
  model_->net.Backward(batch_, dlogits_, nullptr, pool_, on_layer);
  sums[kBackward] += Since(t);
  sums[kLoss] += r.loss_sum;
  sums[kCorrect] += static_cast<double>(r.correct);
  sums[kImages] += s.count();
}

void Run::Evaluate(std::vector<double>& sums) {
  int64_t n = o_.test_limit > 0 ? std::min<int64_t>(o_.test_limit, test_.count) : test_.count, b, e;
  Shard(n, comm_.rank(), comm_.size(), &b, &e);
  std::vector<int64_t> idx;
  const int chunk = 500;
  for (int64_t at = b; at < e; at += chunk) {
    int m = static_cast<int>(std::min<int64_t>(chunk, e - at));
    idx.resize(m);
    for (int i = 0; i < m; ++i) idx[i] = at + i;
    Gather(test_, idx.data(), m, batch_, labels_);
    LossResult r = SoftmaxCrossEntropy(model_->net.Forward(batch_, Mode::kEval, pool_), labels_, 1.0f, nullptr);
    sums[kTestLoss] += r.loss_sum;
    sums[kTestCorrect] += static_cast<double>(r.correct);
    sums[kTestImages] += m;
  }
}

StatusOr<RunResult> Run::Go() {
  HOOP_ASSIGN_OR_RETURN(model_, BuildModel(o_.model, o_.seed));
  const int ranks = comm_.size(), rank = comm_.rank();
  const int64_t images = o_.train_limit > 0 ? std::min<int64_t>(o_.train_limit, train_.count) : train_.count;
  DistributedSampler sampler(images, o_.batch, rank, ranks, o_.seed);
  const int64_t steps = sampler.steps_per_epoch();
  Sgd sgd(model_->net.Params(), o_.momentum, o_.weight_decay);
  LrSchedule sched{o_.lr, ranks, static_cast<int64_t>(std::llround(o_.warmup_epochs * steps)), steps * o_.epochs, o_.cosine};

  NamedTensors params, buffers = model_->net.Buffers(), state;
  for (Param* p : model_->net.Params()) params.emplace_back(p->name, &p->value);
  state = params;
  state.insert(state.end(), buffers.begin(), buffers.end());
  for (auto& s : sgd.State()) state.push_back(s);

  HOOP_ASSIGN_OR_RETURN(auto rt, fusion::Runtime::Start(comm_, fusion::FusionOptions::FromConfig(cfg_)));
  DataParallel dp(*rt);
  int first_epoch = 0;
  int64_t step = 0;
  if (o_.resume)
    if (Status s = Resume(dp, state, &first_epoch, &step); !s.ok()) return s;
  if (Status s = dp.Broadcast(state); !s.ok()) return s.WithContext(Where() + "broadcasting the initial model");
  if (rank == 0) {
    const std::string resuming = first_epoch ? ", resuming after epoch " + std::to_string(first_epoch) : "";
    std::printf("hoop-train: %s (%zu parameters), %d rank(s) x batch %d, %d thread(s) per rank, %lld images, %lld steps per epoch%s\n",
                o_.model.c_str(), model_->ParamCount(), ranks, o_.batch, pool_.threads(), static_cast<long long>(images),
                static_cast<long long>(steps),
                resuming.c_str());
    std::fflush(stdout);
  }
  RunInfo info{o_.model, ranks, o_.batch, pool_.threads(), cfg_.transport};
  RunResult result;
  const auto begin = Clock::now();
  for (int epoch = first_epoch; epoch < o_.epochs; ++epoch) {
    std::vector<double> sums(kSums, 0.0);
    const auto& perm = sampler.Shuffle(epoch);
    const auto epoch_start = Clock::now();
    double lr = 0;
    for (int64_t s = 0; s < steps; ++s, ++step) {
      TrainStep(perm, sampler.At(s), dp, sums);
      auto t = Clock::now();
      if (Status st = dp.Wait(); !st.ok()) return st.WithContext(Where() + "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(s + 1));
      sums[kComm] += Since(t);
      t = Clock::now();
      lr = sched.At(step);
      sgd.Step(lr);
      sums[kOpt] += Since(t);
    }
    sums[kTrainS] = Since(epoch_start);
    if (Status s = dp.Average(buffers, ranks); !s.ok()) return s.WithContext(Where() + "averaging batch-norm statistics");
    Evaluate(sums);
    if (Status s = dp.SumDoubles("epoch.sums", sums); !s.ok()) return s.WithContext(Where() + "summing the epoch's metrics");
    EpochMetrics m;
    m.epoch = epoch + 1;
    m.wall_s = Since(begin);
    m.train_s = sums[kTrainS] / ranks;
    m.images = static_cast<int64_t>(sums[kImages]);
    m.images_per_s = m.train_s > 0 ? sums[kImages] / m.train_s : 0;
    m.data_s = sums[kData] / ranks;
    m.forward_s = sums[kForward] / ranks;
    m.backward_s = sums[kBackward] / ranks;
    m.comm_wait_s = sums[kComm] / ranks;
    m.optimizer_s = sums[kOpt] / ranks;
    m.train_loss = sums[kLoss] / std::max(1.0, sums[kImages]);
    m.train_acc = sums[kCorrect] / std::max(1.0, sums[kImages]);
    m.test_loss = sums[kTestLoss] / std::max(1.0, sums[kTestImages]);
    m.test_acc = sums[kTestCorrect] / std::max(1.0, sums[kTestImages]);
    m.lr = lr;
    result.epochs.push_back(m);
    if (rank != 0) continue;
    std::printf("%s\n", FormatEpoch(m, o_.epochs).c_str());
    std::fflush(stdout);
    if (!o_.metrics.empty())
      if (Status s = WriteMetrics(o_.metrics, info, result.epochs); !s.ok()) return s.WithContext(Where() + "epoch " + std::to_string(m.epoch));
    if (!o_.checkpoint.empty())
      if (Status s = SaveCheckpoint(o_.checkpoint, {o_.model, static_cast<uint32_t>(m.epoch), static_cast<uint64_t>(step)}, state);
          !s.ok())
        return s.WithContext(Where() + "epoch " + std::to_string(m.epoch));
  }
  if (Status s = rt->Shutdown(); !s.ok()) return s.WithContext(Where() + "stopping the tensor fusion runtime");
  return result;
}

}  // namespace

StatusOr<RunResult> Train(const Options& opts, const Config& cfg, Communicator& comm, const Dataset& train, const Dataset& test) {
  return Run(opts, cfg, comm, train, test).Go();
}

}  // namespace hoop::train
