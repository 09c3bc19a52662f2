#include "trainer/ps_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/epoch_sums.h"
#include "trainer/layer_factory.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/precision.h"
#include "trainer/ps_server.h"
#include "trainer/resume_whole.h"
#include "trainer/sampler.h"

namespace hoop::train {

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A worker's epoch report to server 0 (epoch_sums.h; no optimizer time: the servers step).
// Server 0 to the other servers, over their own link.
enum ServerKind : int64_t { kSnapshot = 1, kFinish = 2 };

Buffer Buf(void* p, size_t n, DType t) { return Buffer{p, n, t, MemKind::kHost}; }

class PsRun {
 public:
  PsRun(const Options& o, Communicator& comm, const Dataset& train, const Dataset& test, const std::atomic<int>* stop)
      : o_(o), comm_(comm), train_(train), test_(test), stop_(stop), pool_(o.threads) {}
  StatusOr<RunResult> Go();

 private:
  // Server ranks: each runs its shard's PsServer; rank 0 also leads the epochs (ServerEpochs:
  // metrics, checkpoints, the report of each) and tells the others to finish; the others serve
  // its snapshot requests (ServeSnapshots) until then. Ended: how the run ended, from the stats.
  StatusOr<RunResult> Server();
  Status ServeSnapshots(PsServer& server);
  void Announce(size_t shard_floats) const;
  Status ServerEpochs(PsServer& server);
  void PrintServerEpoch(const EpochMetrics& m, const PsServer::Stats& now, const PsServer::Stats& before, int reporters,
                        const std::vector<int64_t>& images) const;
  StatusOr<RunResult> Ended(PsServer& server);
  StatusOr<RunResult> Worker();
  Status Pull(int64_t clock);
  Status Push(int64_t clock, int64_t step, int images);
  Status Report(int epoch, const std::vector<double>& sums);
  StatusOr<int64_t> Next(int epoch);  // server 0 deals the epoch's next batch (-1: none left)
  void Tell(int kind, int64_t a);     // every server, failures ignored (the worker is ending)
  Status Checkpoint(PsServer& server, const std::vector<float>& buffers, const RunResult& result, int epochs_done,
                    Clock::time_point begin);
  std::string Who(int server) const { return "parameter server rank " + std::to_string(server); }

  const Options& o_;
  Communicator& comm_;
  const Dataset& train_;
  const Dataset& test_;
  const std::atomic<int>* stop_;
  ThreadPool pool_;
  std::unique_ptr<Model> model_;
  std::vector<Param*> params_;
  std::vector<std::vector<int>> shards_;
  PsLinks links_;
  int pad_ = 0, servers_ = 1, workers_ = 1;
  int64_t steps_ = 0;  // a worker's steps per epoch, or with dealt_ the epoch's batches
  bool dealt_ = false;
  LrSchedule schedule_;
  std::vector<std::vector<float>> wire_;  // a worker's per-server buffer: a shard's values or gradients
  RunResult result_;                      // with --resume, the checkpoint's epochs first (rank 0)
  ResumedAt from_;
  std::vector<Tensor> momentum_;  // with --resume, every parameter's momentum
};

StatusOr<RunResult> PsRun::Go() {
  servers_ = o_.servers;
  const int ranks = comm_.size();
  if (servers_ >= ranks)
    return InvalidArgument("--servers " + std::to_string(servers_) + ": the job's " + std::to_string(ranks) +
                           " rank(s) leave no worker; run more ranks (hooprun -np " + std::to_string(servers_ + 1) +
                           " or more) or fewer servers");
  workers_ = ranks - servers_;
  if (o_.slow_rank >= 0 && (o_.slow_rank < servers_ || o_.slow_rank >= ranks))
    return InvalidArgument("--slow-rank " + std::to_string(o_.slow_rank) + ": the workers are ranks " +
                           std::to_string(servers_) + " to " + std::to_string(ranks - 1) + " (ranks 0 to " +
                           std::to_string(servers_ - 1) + " are servers and take no steps)");
  HOOP_ASSIGN_OR_RETURN(model_, BuildHostModel(o_, o_.model, train_.channels));
  HOOP_ASSIGN_OR_RETURN(pad_, InputPad(*model_, train_));
  SetOneDnnThreads(pool_.threads());
  params_ = model_->net.Params();
  shards_ = ShardParams(params_, servers_);
  const int64_t images = o_.train_limit > 0 ? std::min<int64_t>(o_.train_limit, train_.count) : train_.count;
  // Bounded or unbounded staleness: the epoch's batches are dealt as workers ask (ps_server.h),
  // and the rate schedule runs over them; S = 0: each worker's fixed share, as sync's.
  dealt_ = o_.staleness != 0;
  steps_ = DistributedSampler(images, o_.batch, 0, dealt_ ? 1 : workers_, o_.seed).steps_per_epoch();
  // S = 0 is sync SGD over the workers: its rate. Otherwise each worker's gradient is a step of
  // its own at --lr / workers, as hogwild's: a round of every worker's step moves the model as one
  // rank's step at --lr would. At --lr itself (a round as far as sync's step over the same
  // images) lenet on 2 workers did not learn: asynchrony adds its own momentum (Mitliagkas et
  // al. 2016) to SGD's 0.9.
  schedule_ = {o_.staleness == 0 ? o_.lr : o_.lr / workers_, o_.staleness == 0 ? workers_ : 1,
               static_cast<int64_t>(std::llround(o_.warmup_epochs * steps_)), steps_ * o_.epochs, o_.cosine};
  HOOP_RETURN_IF_ERROR(CheckOutputs(o_, comm_));  // while the job's communicator is whole
  if (o_.resume) {
    Sgd whole(params_, o_.momentum, o_.weight_decay);
    HOOP_ASSIGN_OR_RETURN(from_, ResumeWhole(o_, comm_, dealt_ ? 1 : workers_, *model_, whole, &result_));
    for (auto& m : whole.State()) momentum_.push_back(*m.second);
    if (NothingLeft(o_, comm_, from_, &result_)) return result_;
  }
  HOOP_ASSIGN_OR_RETURN(links_, ConnectPs(comm_, servers_));
  return comm_.rank() < servers_ ? Server() : Worker();
}

StatusOr<RunResult> PsRun::Server() {
  const int me = comm_.rank();
  std::vector<Param*> shard;
  for (int i : shards_[me]) shard.push_back(params_[i]);
  NamedTensors buffers = model_->net.Buffers();
  size_t buffer_floats = 0;
  for (auto& b : buffers) buffer_floats += b.second->size();
  PsServer::Settings set;
  set.staleness = o_.staleness;
  set.schedule = schedule_;
  set.momentum = o_.momentum;
  set.weight_decay = o_.weight_decay;
  set.batches = me == 0 && dealt_ ? steps_ : 0;
  set.report_doubles = kSums;
  set.buffer_floats = me == 0 ? buffer_floats : 0;
  set.announce = me == 0;
  PsServer server(shard, set, links_, me);
  if (!momentum_.empty()) {
    std::vector<const Tensor*> mine;
    for (int i : shards_[me]) mine.push_back(&momentum_[i]);
    server.LoadMomentum(mine);
  }
  server.Start();
  if (me != 0) {  // serve rank 0's requests for this shard until it says finish
    Status served = ServeSnapshots(server);
    server.Join();
    if (!served.ok()) return served;
    return result_;
  }
  size_t shard_floats = 0;
  for (Param* p : shard) shard_floats += p->value.size();
  Announce(shard_floats);
  Status failed = ServerEpochs(server);
  for (int s = 1; s < servers_; ++s) {
    std::vector<int64_t> h{kFinish, 0, 0, 0};
    (void)links_.among_servers->SendNow(Buf(h.data(), h.size(), DType::kI64), s, kPsHeaderTag);
  }
  server.Join();
  if (!failed.ok()) return failed;
  return Ended(server);
}

Status PsRun::ServeSnapshots(PsServer& server) {
  std::vector<int64_t> h(4);
  for (;;) {
    Status st = links_.among_servers->RecvNow(Buf(h.data(), h.size(), DType::kI64), 0, kPsHeaderTag);
    if (st.ok() && h[0] != kSnapshot) return Status::Ok();  // finish
    if (st.ok()) {
      std::vector<float> snap = server.Snapshot();
      st = links_.among_servers->SendNow(Buf(snap.data(), snap.size(), DType::kF32), 0, kPsReplyTag);
    }
    if (!st.ok()) return st.WithContext(Who(0) + " is gone");
  }
}

void PsRun::Announce(size_t shard_floats) const {
  std::printf(
      "hoop-train: %s (%zu parameters, %s layers), parameter servers: %d server(s) (rank 0 holds %zu of them), "
      "%d worker(s) x batch %d, staleness %s, %d thread(s) per rank, %lld %s per epoch, over %s\n",
      o_.model.c_str(), model_->ParamCount(), o_.layers.c_str(), servers_, shard_floats, workers_, o_.batch,
      o_.staleness < 0 ? "unbounded" : std::to_string(o_.staleness).c_str(), pool_.threads(),
      static_cast<long long>(steps_), dealt_ ? "batches dealt to the workers as they ask" : "steps per worker",
      (comm_.transport_name() + (o_.resume ? ", resuming after epoch " + std::to_string(from_.epochs_done) : ""))
          .c_str());
  std::fflush(stdout);
}

Status PsRun::ServerEpochs(PsServer& server) {
  RunInfo info{o_.model, comm_.size(), o_.batch, pool_.threads(), comm_.transport_name()};
  info.devices.assign(comm_.size(), "cpu");
  // A host's counters cover every rank on it, and the workers end their epochs each at its own
  // time: there is no one interval per epoch to charge (job_energy.h).
  info.cpu_energy = info.gpu_energy = "not measured: parameter-server workers end their epochs at different times";
  const auto begin =
      Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(from_.wall_s));
  PsServer::Stats before;
  for (int epoch = from_.epochs_done; epoch < o_.epochs; ++epoch) {
    std::vector<double> sums;
    std::vector<float> avg_buffers;
    int reporters = 0;
    std::vector<int64_t> images;
    if (!server.WaitEpoch(epoch, &sums, &avg_buffers, &reporters, &images)) break;  // stopped, or no worker left
    const PsServer::Stats now = server.stats();
    EpochMetrics m = MetricsFromSums(sums, reporters, epoch, Since(begin),
                                     schedule_.At(std::min<int64_t>(steps_ * (epoch + 1), steps_ * o_.epochs) - 1));
    result_.epochs.push_back(m);
    PrintServerEpoch(m, now, before, reporters, images);
    before = now;
    if (!o_.metrics.empty())
      if (Status s = WriteMetrics(o_.metrics, info, result_.epochs); !s.ok())
        return s.WithContext("epoch " + std::to_string(m.epoch));
    if (!o_.checkpoint.empty())
      if (Status s = Checkpoint(server, avg_buffers, result_, m.epoch, begin); !s.ok())
        return s.WithContext("checkpoint after epoch " + std::to_string(m.epoch));
  }
  return Status::Ok();
}

void PsRun::PrintServerEpoch(const EpochMetrics& m, const PsServer::Stats& now, const PsServer::Stats& before,
                             int reporters, const std::vector<int64_t>& images) const {
  char extra[200];
  std::snprintf(extra, sizeof extra,
                " | ps: %lld update(s) on rank 0's shard, lag mean %.1f max %lld, %d of %d worker(s) "
                "reported, images per worker ",
                static_cast<long long>(now.updates - before.updates), now.mean_lag, static_cast<long long>(now.max_lag),
                reporters, workers_);
  std::string per;
  for (int64_t n : images) {
    if (!per.empty()) per.append("/");
    per.append(std::to_string(n));
  }
  std::printf("%s%s%s\n", FormatEpoch(m, o_.epochs).c_str(), extra, per.c_str());
  std::fflush(stdout);
}

StatusOr<RunResult> PsRun::Ended(PsServer& server) {
  RunResult& result = result_;
  const PsServer::Stats end = server.stats();
  if (server.signal()) {
    result.interrupted = server.signal();
    std::printf("hoop-train: interrupted by %s after %zu finished epoch(s)%s\n", ::strsignal(result.interrupted),
                result.epochs.size(), o_.checkpoint.empty() ? "" : ("; " + o_.checkpoint + " holds the last").c_str());
    return result;
  }
  if (end.done == 0)
    return Unavailable("every worker is gone (the first: " + end.gone_why + "); nothing left to train");
  if (end.gone)
    std::printf("hoop-train: %d of %d worker(s) finished; %d gone (the first: %s)\n", end.done, workers_, end.gone,
                end.gone_why.c_str());
  return result;
}

Status PsRun::Checkpoint(PsServer& server, const std::vector<float>& buffers, const RunResult& result, int epochs_done,
                         Clock::time_point begin) {
  // The whole model as a sync run saves it: parameters, buffers, momentum. Each shard comes as
  // its parameters then its momentum; rank 0's own from its server.
  Sgd full(params_, o_.momentum, o_.weight_decay);
  auto momentum = full.State();
  for (int s = 0; s < servers_; ++s) {
    std::vector<float> snap;
    if (s == 0) {
      snap = server.Snapshot();
    } else {
      size_t floats = 0;
      for (int i : shards_[s]) floats += params_[i]->value.size();
      snap.resize(2 * floats);
      std::vector<int64_t> h{kSnapshot, 0, 0, 0};
      HOOP_RETURN_IF_ERROR(links_.among_servers->SendNow(Buf(h.data(), h.size(), DType::kI64), s, kPsHeaderTag));
      if (Status st = links_.among_servers->RecvNow(Buf(snap.data(), snap.size(), DType::kF32), s, kPsReplyTag);
          !st.ok())
        return st.WithContext(Who(s) + " is gone");
    }
    size_t at = 0;
    for (int i : shards_[s]) {
      std::copy_n(snap.begin() + at, params_[i]->value.size(), params_[i]->value.data.begin());
      at += params_[i]->value.size();
    }
    for (int i : shards_[s]) {
      std::copy_n(snap.begin() + at, params_[i]->value.size(), momentum[i].second->data.begin());
      at += params_[i]->value.size();
    }
  }
  NamedTensors state;
  for (Param* p : params_) state.emplace_back(p->name, &p->value);
  size_t at = 0;
  for (auto& b : model_->net.Buffers()) {
    if (at + b.second->size() <= buffers.size())
      std::copy_n(buffers.begin() + at, b.second->size(), b.second->data.begin());
    at += b.second->size();
    state.push_back(b);
  }
  for (auto& m : momentum) state.push_back(m);
  CheckpointInfo ck{o_.model,
                    static_cast<uint32_t>(epochs_done),
                    static_cast<uint64_t>(steps_ * epochs_done),
                    0,
                    static_cast<uint32_t>(dealt_ ? 1 : workers_),
                    static_cast<uint32_t>(o_.batch),
                    Since(begin),
                    {},
                    {}};
  for (const auto& m : result.epochs)
    for (double v : EpochValues(m)) ck.history.push_back(v);
  return SaveCheckpoint(o_.checkpoint, ck, state);
}

Status PsRun::Pull(int64_t clock) {
  for (int s = 0; s < servers_; ++s) {
    std::vector<int64_t> h{kPsPull, clock, 0, 0};
    if (Status st = links_.peers[s]->SendNow(Buf(h.data(), h.size(), DType::kI64), 0, kPsHeaderTag); !st.ok())
      return st.WithContext(Who(s) + " is gone");
  }
  for (int s = 0; s < servers_; ++s) {
    std::vector<float>& w = wire_[s];
    if (Status st = links_.peers[s]->RecvNow(Buf(w.data(), w.size(), DType::kF32), 0, kPsReplyTag); !st.ok())
      return st.WithContext(Who(s) + " is gone");
    size_t at = 0;
    for (int i : shards_[s]) {
      std::copy_n(w.begin() + at, params_[i]->value.size(), params_[i]->value.data.begin());
      at += params_[i]->value.size();
    }
  }
  return Status::Ok();
}

Status PsRun::Push(int64_t clock, int64_t step, int images) {
  for (int s = 0; s < servers_; ++s) {
    std::vector<float>& w = wire_[s];
    size_t at = 0;
    for (int i : shards_[s]) {
      std::copy(params_[i]->grad.ptr(), params_[i]->grad.ptr() + params_[i]->grad.size(), w.begin() + at);
      at += params_[i]->grad.size();
    }
    std::vector<int64_t> h{kPsPush, clock, step, images};
    Status st = links_.peers[s]->SendNow(Buf(h.data(), h.size(), DType::kI64), 0, kPsHeaderTag);
    if (st.ok()) st = links_.peers[s]->SendNow(Buf(w.data(), w.size(), DType::kF32), 0, kPsPayloadTag);
    if (!st.ok()) return st.WithContext(Who(s) + " is gone");
  }
  return Status::Ok();
}

Status PsRun::Report(int epoch, const std::vector<double>& sums) {
  std::vector<int64_t> h{kPsEpoch, epoch, static_cast<int64_t>(sums[kImages]), 0};
  std::vector<double> s = sums;
  std::vector<float> buffers;
  for (auto& b : model_->net.Buffers()) buffers.insert(buffers.end(), b.second->data.begin(), b.second->data.end());
  Status st = links_.peers[0]->SendNow(Buf(h.data(), h.size(), DType::kI64), 0, kPsHeaderTag);
  if (st.ok()) st = links_.peers[0]->SendNow(Buf(s.data(), s.size(), DType::kF64), 0, kPsPayloadTag);
  if (st.ok() && !buffers.empty())
    st = links_.peers[0]->SendNow(Buf(buffers.data(), buffers.size(), DType::kF32), 0, kPsPayloadTag);
  return st.ok() ? st : st.WithContext(Who(0) + " is gone");
}

StatusOr<int64_t> PsRun::Next(int epoch) {
  std::vector<int64_t> h{kPsNext, epoch, 0, 0};
  int64_t batch = -1;
  Status st = links_.peers[0]->SendNow(Buf(h.data(), h.size(), DType::kI64), 0, kPsHeaderTag);
  if (st.ok()) st = links_.peers[0]->RecvNow(Buf(&batch, 1, DType::kI64), 0, kPsReplyTag);
  if (!st.ok())
    return st.WithContext(Who(0) + " is gone (asking it for a batch of epoch " + std::to_string(epoch + 1) + ")");
  return batch;
}

void PsRun::Tell(int kind, int64_t a) {
  for (int s = 0; s < servers_; ++s) {
    std::vector<int64_t> h{kind, a, 0, 0};
    (void)links_.peers[s]->SendNow(Buf(h.data(), h.size(), DType::kI64), 0, kPsHeaderTag);
  }
}

StatusOr<RunResult> PsRun::Worker() {
  const int me = comm_.rank() - servers_;  // among the workers
  const int64_t images = o_.train_limit > 0 ? std::min<int64_t>(o_.train_limit, train_.count) : train_.count;
  DistributedSampler sampler(images, o_.batch, me, workers_, o_.seed);
  wire_.resize(servers_);
  for (int s = 0; s < servers_; ++s) {
    size_t floats = 0;
    for (int i : shards_[s]) floats += params_[i]->value.size();
    wire_[s].resize(floats);
  }
  Workspace ws;
  RunResult& result = result_;
  int64_t clock = 0;
  // Dealt batches: the epoch's as one rank would take them, in the order server 0 deals them.
  DistributedSampler whole(images, o_.batch, 0, 1, o_.seed);
  for (int epoch = from_.epochs_done; epoch < o_.epochs; ++epoch) {
    std::vector<double> sums(kSums, 0.0);
    const auto& perm = dealt_ ? whole.Shuffle(epoch) : sampler.Shuffle(epoch);
    const auto epoch_start = Clock::now();
    for (int64_t s = 0;; ++s, ++clock) {
      if (const int sig = stop_ ? stop_->load(std::memory_order_relaxed) : 0) {
        Tell(kPsDone, sig);
        result.interrupted = sig;
        return result;
      }
      auto t = Clock::now();
      int64_t batch = s;  // the epoch's batch (dealt) or this worker's step
      if (dealt_) {
        HOOP_ASSIGN_OR_RETURN(batch, Next(epoch));
      }
      if (batch < 0 || batch >= steps_) break;
      const std::string where = "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(s + 1);
      if (Status st = Pull(clock); !st.ok()) return st.WithContext(where);
      sums[kComm] += Since(t);
      const Slice slice = dealt_ ? whole.At(batch) : sampler.At(batch);
      if (slice.count() > 0) {
        StepTimes times;
        LossResult r = ComputeGradient(*model_, train_, perm.data() + slice.begin, slice.count(), 1.0f, pad_, pool_, ws,
                                       nullptr, comm_.rank() == o_.slow_rank ? o_.slow_ms : 0, times);
        sums[kData] += times.data;
        sums[kForward] += times.forward;
        sums[kBackward] += times.backward;
        sums[kLoss] += r.loss_sum;
        sums[kCorrect] += static_cast<double>(r.correct);
        sums[kImages] += slice.count();
      } else {
        for (Param* p : params_) p->grad.Zero();
      }
      t = Clock::now();
      if (Status st = Push(clock, epoch * steps_ + batch, slice.count()); !st.ok()) return st.WithContext(where);
      sums[kComm] += Since(t);
    }
    sums[kTrainS] = Since(epoch_start);
    if (Status st = Pull(clock); !st.ok()) return st.WithContext("end of epoch " + std::to_string(epoch + 1));
    int64_t n = o_.test_limit > 0 ? std::min<int64_t>(o_.test_limit, test_.count) : test_.count, b, e;
    Shard(n, me, workers_, &b, &e);
    const EvalSums ev = Evaluate(*model_, test_, b, e, pad_, pool_, ws, nullptr);
    sums[kTestLoss] = ev.loss;
    sums[kTestCorrect] = ev.correct;
    sums[kTestImages] = ev.images;
    if (Status st = Report(epoch, sums); !st.ok())
      return st.WithContext("reporting epoch " + std::to_string(epoch + 1));
  }
  Tell(kPsDone, 0);
  return result;
}

}  // namespace

StatusOr<RunResult> TrainPs(const Options& opts, Communicator& comm, const Dataset& train, const Dataset& test,
                            const std::atomic<int>* stop) {
  return PsRun(opts, comm, train, test, stop).Go();
}

}  // namespace hoop::train
