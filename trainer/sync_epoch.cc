// The run's epoch loop (sync_run.h): each step trains this rank's slice (unless the strategy
// took it without: a dropped backup worker catching up; a pipeline stage its part of it), lets
// the strategy bring the gradients in (strategy.h) and steps the optimizer;
// now and then the ranks agree on a stop (a signal any rank got ends every rank at the same
// step, with a checkpoint); each epoch ends with evaluation, the metrics summed over the ranks,
// one line from rank 0 and a checkpoint.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "trainer/balance.h"
#include "trainer/epoch_sums.h"
#include "trainer/metrics.h"
#include "trainer/sync_run.h"

namespace hoop::train {

StatusOr<bool> Run::TrainEpoch(int* epoch_io) {
  const int epoch = *epoch_io;
  std::vector<double> sums(kSums, 0.0);
  int64_t s = epoch == from_.epoch ? from_.step : 0;
  if (s > 0 && comm_->rank() == 0 && from_.partial.size() == static_cast<size_t>(kSums)) sums = from_.partial;
  const std::vector<int64_t>* perm = &sampler_->Shuffle(epoch);
  const auto epoch_start = Clock::now();
  resumed_at_ = s;
  images_before_ = sums[kImages];
  my_images_ = my_compute_s_ = 0;
  last_progress_ = epoch_start;
  const std::vector<double> joules_before = energy_.Joules();
  stretches_.assign(1, {step_ + 1, comm_->size()});
  auto where = [&](int64_t k) {
    return Where() + "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(k + 1);
  };
  // With --elastic a lost rank's failure is gone on from: the survivors shrink and take the state
  // of the one furthest on (Recover), and a grow at a look takes newcomers in (Admit); then the
  // sampler is new (its share of each step's images), and so is the permutation's holder.
  auto go_on = [&](Status st, int64_t k) -> StatusOr<bool> {
    if (st.ok()) return true;
    if (!Lost(st)) return st.WithContext(where(k));
    int at = epoch;
    HOOP_RETURN_IF_ERROR(Recover(st, &at, &s));
    perm = &sampler_->Shuffle(epoch);
    if (at == epoch) return true;
    *epoch_io = at;  // the survivor the others took their state from had ended this epoch
    return false;
  };
  while (true) {
    while (s < steps_) {
      bool stopped = false;
      int admit = 0;
      Status st = Step(epoch, s, *perm, sums, epoch_start, &stopped, &admit);
      if (st.ok() && stopped) return false;
      const int64_t at = s;
      if (st.ok()) ++s, ++step_;
      if (st.ok() && admit > 0) {
        st = Admit(admit, epoch_io, &s);
        perm = &sampler_->Shuffle(epoch);
      }
      HOOP_ASSIGN_OR_RETURN(bool same_epoch, go_on(st, at));
      if (!same_epoch) return true;
    }
    const double lr = sched_.At(std::max<int64_t>(0, step_ - 1));
    Status st = EndEpoch(epoch, sums, lr, epoch_start, joules_before);
    if (st.ok()) break;
    HOOP_ASSIGN_OR_RETURN(bool same_epoch, go_on(st, s));
    if (!same_epoch) return true;
  }
  *epoch_io = epoch + 1;
  return true;
}

Status Run::Step(int epoch, int64_t s, const std::vector<int64_t>& perm, std::vector<double>& sums,
                 Clock::time_point epoch_start, bool* stopped, int* admit) {
  const auto t0 = Clock::now();
  const Slice slice = sampler_->At(s);
  auto took = strategy_->BeginStep(step_);  // a backup worker catching up takes the step without computing
  if (!took.ok()) return took.status();
  if (!*took) HOOP_RETURN_IF_ERROR(TrainStep(perm, slice, sums));
  auto t = Clock::now();
  HOOP_RETURN_IF_ERROR(strategy_->BeforeOptimizer(step_, slice.count(), !*took));
  sums[kComm] += Since(t);
  t = Clock::now();
  sgd_->Step(sched_.At(step_));
  applied_ = step_ + 1;
  strategy_->AfterStep();
  sums[kOpt] += Since(t);
  step_s_ += (Since(t0) - step_s_) / static_cast<double>(++timed_steps_);
  Progress(epoch, s + 1, steps_, epoch_start, ImagesDone(s + 1, sums), false);
  energy_.Poll();
  KillDrill();
  HOOP_ASSIGN_OR_RETURN(*stopped, AfterStep(epoch, s, sums, epoch_start));
  if (!*stopped && o_.elastic && looked_) {
    HOOP_ASSIGN_OR_RETURN(*admit, comm_->Newcomers());  // at the look just taken, on every rank alike
  }
  return Status::Ok();
}

StatusOr<bool> Run::AfterStep(int epoch, int64_t s, const std::vector<double>& sums, Clock::time_point epoch_start) {
  const int64_t done = step_ + 1;  // steps finished over the run
  looked_ = done == check_at_;
  if (looked_) {
    // [stop, rank 0's next interval]: about four looks a second, the same steps on every rank
    // (summed over ranks: any rank's signal stops all; the interval is rank 0's alone).
    const double interval = std::clamp(std::floor(0.25 / std::max(step_s_, 1e-6)), 1.0, 1000.0);
    std::vector<double> look{static_cast<double>(PendingStop()), comm_->rank() == 0 ? interval : 0.0};
    if (Status st = sum_("stop", look); !st.ok())
      return st.WithContext(Where() + "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(s + 1) +
                            ": agreeing on a stop");
    check_every_ = static_cast<int64_t>(look[1]);
    check_at_ = done + std::max<int64_t>(1, check_every_);
    if (look[0] > 0 && s + 1 < steps_) {
      Progress(epoch, s + 1, steps_, epoch_start, 0, true);
      const int sig = look[0] >= SIGTERM ? SIGTERM : SIGINT;  // the signal some rank had
      std::vector<double> partial = sums;
      partial[kTrainS] += Since(epoch_start);
      ++step_;
      if (!o_.checkpoint.empty())
        if (Status st = Save(epoch, s + 1, partial); !st.ok())
          return st.WithContext(Where() + "checkpoint on interrupt");
      result_.interrupted = sig;
      if (comm_->rank() == 0)
        std::printf("hoop-train: interrupted by %s at epoch %d, step %lld of %lld%s\n", ::strsignal(sig), epoch + 1,
                    static_cast<long long>(s + 1), static_cast<long long>(steps_),
                    o_.checkpoint.empty()
                        ? " (no --checkpoint: nothing saved)"
                        : ("; checkpoint written to " + o_.checkpoint + ", --resume continues from there").c_str());
      return true;
    }
  }
  if (o_.checkpoint_every > 0 && done % o_.checkpoint_every == 0 && s + 1 < steps_) {
    std::vector<double> partial = sums;
    partial[kTrainS] += Since(epoch_start);
    ++step_;  // Save() records steps done
    Status st = Save(epoch, s + 1, partial);
    --step_;
    if (!st.ok()) return st.WithContext(Where() + "checkpoint at step " + std::to_string(done));
  }
  return false;
}

StatusOr<std::vector<double>> Run::RankSpeeds() {
  // Every rank's compute speed this epoch (its images over its time loading, forward and
  // backward: not the waits, which a slow peer inflates), the same vector on every rank.
  const int ranks = comm_->size();
  std::vector<double> speeds(2 * ranks, 0.0);
  speeds[comm_->rank()] = my_images_;
  speeds[ranks + comm_->rank()] = my_compute_s_;
  if (Status s = sum_("epoch.speeds", speeds); !s.ok()) return s.WithContext(Where() + "exchanging the ranks' speeds");
  for (int r = 0; r < ranks; ++r) speeds[r] = speeds[ranks + r] > 0 ? speeds[r] / speeds[ranks + r] : 0;
  speeds.resize(ranks);
  return speeds;
}

Status Run::EndEpoch(int epoch, std::vector<double>& sums, double lr, Clock::time_point epoch_start,
                     const std::vector<double>& joules_before) {
  Progress(epoch, steps_, steps_, epoch_start, 0, true);
  sums[kTrainS] += Since(epoch_start);
  auto joules = energy_.Since(joules_before, sum_);  // the training steps' energy
  if (!joules.ok()) return joules.status().WithContext(Where() + "summing the epoch's energy");
  std::vector<double> speeds;  // a model dealt out: its ranks compute unlike parts, no speeds to compare
  if (!part_) {
    HOOP_ASSIGN_OR_RETURN(speeds, RankSpeeds());
  }
  if (Status s = strategy_->EndEpoch(); !s.ok()) return s.WithContext(Where() + "ending the epoch");
  if (Status s = AverageBuffers(); !s.ok()) return s.WithContext(Where() + "averaging batch-norm statistics");
  if (Status s = Evaluate(sums); !s.ok())
    return s.WithContext(Where() + "evaluating epoch " + std::to_string(epoch + 1));
  if (Status s = sum_("epoch.sums", sums); !s.ok()) return s.WithContext(Where() + "summing the epoch's metrics");
  EpochMetrics m = MetricsFromSums(sums, comm_->size(), epoch, Since(begin_), lr);
  energy_.Fill(*joules, sums[kImages], m);
  if (!part_) m.shares = sampler_->shares();
  for (const auto& [first, ranks] : stretches_) m.ranks_by_step.insert(m.ranks_by_step.end(), {first, ranks});
  m.rank_images_per_s = speeds;
  result_.epochs.push_back(m);
  if (o_.balance == "speed") sampler_->SetShares(SharesBySpeed(speeds, global_batch_));  // for the next epoch
  if (comm_->rank() == 0) {
    PrintEpoch(m, epoch);
    if (!o_.metrics.empty())
      if (Status s = WriteMetrics(o_.metrics, info_, result_.epochs); !s.ok())
        return s.WithContext(Where() + "epoch " + std::to_string(m.epoch));
  }
  if (!o_.checkpoint.empty())
    if (Status s = Save(m.epoch, 0, {}); !s.ok()) return s.WithContext(Where() + "epoch " + std::to_string(m.epoch));
  return Status::Ok();
}

void Run::PrintEpoch(const EpochMetrics& m, int epoch) {
  std::string split = strategy_->EpochNote();
  if (o_.balance == "speed" || !o_.shares.empty()) {
    split += " | shares " + FormatShares(m.shares) + ", compute images/s";
    for (size_t r = 0; r < m.rank_images_per_s.size(); ++r) {
      split += r ? '/' : ' ';
      split += std::to_string(static_cast<int>(std::lround(m.rank_images_per_s[r])));
    }
    if (o_.balance == "speed" && epoch + 1 < o_.epochs) split += ", next " + FormatShares(sampler_->shares());
  }
  if (stretches_.size() > 1) {  // --elastic: the ranks changed this epoch
    split += " | ranks:";
    for (size_t i = 0; i < stretches_.size(); ++i)
      split +=
          (i ? ", " : " ") + std::to_string(stretches_[i].second) + " from step " + std::to_string(stretches_[i].first);
  }
  std::printf("%s%s%s\n", o_.label.c_str(), FormatEpoch(m, o_.epochs).c_str(), split.c_str());
  std::fflush(stdout);
}

// --deterministic: a checkpoint holds the same bytes on every run of the same training, so the
// times (and energy) it measured are left out: 0, NaN for energy. A run resumed from it shows
// none for the epochs before.
static void DropTimes(CheckpointInfo& ck) {
  ck.wall_s = 0;
  for (size_t i = kData; i <= static_cast<size_t>(kTrainS) && i < ck.partial.size(); ++i) ck.partial[i] = 0;
  const size_t n = EpochFieldCount();
  for (size_t at = 0; n && at + n <= ck.history.size(); at += n) {
    EpochMetrics m = EpochFromValues(&ck.history[at], n);
    m.wall_s = m.train_s = m.images_per_s = m.data_s = m.forward_s = m.backward_s = m.comm_wait_s = m.optimizer_s = 0;
    m.cpu_joules = m.gpu_joules = m.images_per_joule = EpochMetrics::kNoValue;
    const std::vector<double> v = EpochValues(m);
    std::copy(v.begin(), v.end(), ck.history.begin() + static_cast<std::ptrdiff_t>(at));
  }
}

Status Run::Save(int epochs_done, int64_t in_epoch, std::vector<double> partial) {
  if (in_epoch > 0) {
    HOOP_RETURN_IF_ERROR(AverageBuffers());
    HOOP_RETURN_IF_ERROR(sum_("checkpoint.sums", partial));
  }
  if (comm_->rank() != 0 && !part_) return Status::Ok();
  CheckpointInfo ck{o_.model,
                    static_cast<uint32_t>(epochs_done),
                    static_cast<uint64_t>(step_),
                    static_cast<uint32_t>(in_epoch),
                    static_cast<uint32_t>(part_ ? part_->Replicas() : comm_->size()),
                    static_cast<uint32_t>(o_.batch),
                    Since(begin_),
                    in_epoch > 0 ? partial : std::vector<double>{},
                    {}};
  for (const auto& m : result_.epochs)
    for (double v : EpochValues(m)) ck.history.push_back(v);
  if (o_.deterministic) DropTimes(ck);
  return part_ ? part_->Save(o_.checkpoint, ck) : SaveCheckpoint(o_.checkpoint, ck, state_);
}

}  // namespace hoop::train
