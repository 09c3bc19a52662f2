// hoop-train --elastic (sync_run.h): synchronous SGD that goes on through a lost rank and takes
// newcomers in, from the state in memory (no checkpoint is read).
//
// The fusion runtime runs on a duplicate of the run's communicator (StartRuntime), so that this
// thread's own calls on it - the newcomer count at each look, the shrink, the grow, the state
// handed over - never interleave with the runtime's.
//  - A rank lost (a call failed Unavailable, Aborted or Revoked): the runtime goes, the survivors
//    shrink the communicator (hoop_comm_shrink), start the runtime again on it, and agree on the
//    survivor furthest on: the most steps applied (a rank whose allreduce completed before the
//    loss applied the step the others failed in), the lowest rank among those. Every survivor
//    takes its place in the run and its state (parameters, buffers, the optimizer's) straight
//    over the communicator. The global batch and the learning rate stay: the same images make
//    each step, shared out over fewer ranks (ShareOut), so the run computes what it would have
//    without the loss, up to the order of the sums. No step is applied twice or skipped.
//  - At each look (AfterStep, about four a second) the ranks ask how many newcomers wait
//    (hoop_comm_newcomers); if any, the runtime stops (negotiated), they grow the communicator
//    by that many, start the runtime again and send rank 0's place and state, which a newcomer
//    (JoinedRun: started by elastic hooprun with HOOP_JOIN=1) takes in the same order of calls.
//  - Rank 0 says each change on a line of its own, and the epoch's metrics list which steps ran
//    on how many ranks (EpochMetrics::ranks_by_step).
#include <signal.h>

#include <cstdio>

#include "trainer/sync_run.h"

namespace hoop::train {

bool Run::Lost(const Status& s) const {
  const Code c = s.code();
  return o_.elastic && (c == Code::kUnavailable || c == Code::kAborted || c == Code::kRevoked);
}

void Run::StopRuntime() {
  dp_.reset();
  if (rt_) (void)rt_->Shutdown();  // after a loss it fails, naming the lost rank: known already
  rt_.reset();
  fusion_comm_.reset();
}

// The run goes on over `comm`: the runtime on a duplicate of it, the strategy bound to it.
Status Run::Restart(std::unique_ptr<Communicator> comm) {
  StopRuntime();
  own_ = std::move(comm);
  comm_ = own_.get();
  HOOP_RETURN_IF_ERROR(StartRuntime());
  return strategy_->Begin(&*dp_);
}

// The sampler over the ranks there are now: the global batch kept, shared out as evenly as it goes.
void Run::ShareOut() {
  const int ranks = comm_->size();
  sampler_.emplace(images_, o_.batch, comm_->rank(), ranks, o_.seed);
  std::vector<int> shares(static_cast<size_t>(ranks), global_batch_ / ranks);
  for (int r = 0; r < global_batch_ % ranks; ++r) ++shares[static_cast<size_t>(r)];
  sampler_->SetShares(shares);
  steps_ = sampler_->steps_per_epoch();
}

// Every rank takes `root`'s place in the run (*epoch, *s: the next step to take) and its state.
Status Run::TakeState(int root, int* epoch, int64_t* s) {
  std::vector<double> at{static_cast<double>(*epoch),
                         static_cast<double>(*s),
                         static_cast<double>(step_),
                         static_cast<double>(check_at_),
                         static_cast<double>(check_every_),
                         Since(begin_),
                         static_cast<double>(global_batch_),
                         sched_.lr,
                         static_cast<double>(sched_.ranks),
                         static_cast<double>(sched_.warmup_steps),
                         static_cast<double>(sched_.total_steps),
                         sched_.cosine ? 1.0 : 0.0};
  const Buffer b{at.data(), at.size(), DType::kF64, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(
      comm_->Broadcast(b, b, root).Wait().WithContext(Where() + "taking rank " + std::to_string(root) + "'s place"));
  *epoch = static_cast<int>(at[0]);
  *s = static_cast<int64_t>(at[1]);
  step_ = applied_ = static_cast<int64_t>(at[2]);
  check_at_ = static_cast<int64_t>(at[3]);
  check_every_ = static_cast<int64_t>(at[4]);
  begin_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at[5]));
  global_batch_ = static_cast<int>(at[6]);
  sched_ = LrSchedule{at[7], static_cast<int>(at[8]), static_cast<int64_t>(at[9]), static_cast<int64_t>(at[10]),
                      at[11] != 0};
  for (auto& [name, t] : state_) {
    const Buffer tb{t->ptr(), t->size(), DType::kF32, t->kind};
    HOOP_RETURN_IF_ERROR(comm_->Broadcast(tb, tb, root).Wait().WithContext(Where() + "taking " + name));
  }
  ShareOut();
  return Status::Ok();
}

namespace {
// The lowest rank of those that applied the most steps.
StatusOr<int> Furthest(Communicator& comm, int64_t applied) {
  std::vector<double> most{static_cast<double>(applied)};
  const Buffer b{most.data(), 1, DType::kF64, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(comm.Allreduce(b, b, ReduceOp::kMax).Wait());
  std::vector<double> who{static_cast<double>(static_cast<double>(applied) == most[0] ? comm.rank() : comm.size())};
  const Buffer w{who.data(), 1, DType::kF64, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(comm.Allreduce(w, w, ReduceOp::kMin).Wait());
  return static_cast<int>(who[0]);
}
}  // namespace

void Run::Changed(const std::string& what, int before, Clock::time_point since) {
  stretches_.emplace_back(step_ + 1, comm_->size());
  if (comm_->rank() != 0) return;
  const int ranks = comm_->size(), each = global_batch_ / ranks;
  const std::string share =
      global_batch_ % ranks ? std::to_string(each + 1) + " or " + std::to_string(each) : std::to_string(each);
  std::printf(
      "%shoop-train: %s before step %lld: %d rank(s) now (were %d), %s image(s) each of the global batch of %d; "
      "%.3f s to go on\n",
      o_.label.c_str(), what.c_str(), static_cast<long long>(step_ + 1), ranks, before, share.c_str(), global_batch_,
      Since(since));
  std::fflush(stdout);
}

Status Run::Recover(const Status& cause, int* epoch, int64_t* s) {
  const int before = comm_->size();
  const auto since = Clock::now();
  *s += applied_ - step_;  // this rank's next step: past the one it applied, where it did
  step_ = applied_;
  StopRuntime();
  for (int tries = 0;; ++tries) {
    if (tries == 4) return cause.WithContext(Where() + "four shrinks and still no working communicator");
    auto shrunk = comm_->Shrink();
    if (!shrunk.ok()) return shrunk.status().WithContext(Where() + "shrinking after: " + cause.message());
    Status st = Restart(std::move(shrunk).value());
    StatusOr<int> root = st.ok() ? Furthest(*comm_, applied_) : StatusOr<int>(st);
    st = root.ok() ? TakeState(*root, epoch, s) : root.status();
    if (st.ok()) break;
    if (!Lost(st)) return st;
    StopRuntime();
  }
  Changed("a rank was lost (" + cause.message() + ")", before, since);
  return Status::Ok();
}

Status Run::Admit(int newcomers, int* epoch, int64_t* s) {
  const int before = comm_->size();
  const auto since = Clock::now();
  StopRuntime();  // negotiated: every rank stops after the same cycle
  auto grown = comm_->Grow(newcomers);
  if (!grown.ok()) return grown.status().WithContext(Where() + "admitting " + std::to_string(newcomers));
  HOOP_RETURN_IF_ERROR(Restart(std::move(grown).value()));
  HOOP_RETURN_IF_ERROR(TakeState(0, epoch, s));
  Changed(std::to_string(newcomers) + " newcomer(s) admitted", before, since);
  return Status::Ok();
}

// A newcomer: its communicator is the grown one, its runtime started (Go); the rest is rank 0's.
StatusOr<RunResult> Run::JoinedRun() {
  HOOP_RETURN_IF_ERROR(strategy_->Begin(&*dp_));
  int epoch = 0;
  int64_t s = 0;
  HOOP_RETURN_IF_ERROR(TakeState(0, &epoch, &s));
  info_ = RunInfo{o_.model, comm_->size(), o_.batch, pool_.threads(), comm_->transport_name()};
  from_.epoch = epoch;
  from_.step = s;
  return Epochs(epoch);
}

void Run::KillDrill() const {
  if (o_.kill_rank < 0 || o_.kill_rank != cfg_.rank || applied_ != o_.kill_step) return;
  std::printf("%shoop-train: --kill-rank %d: killing this process after step %lld\n", o_.label.c_str(), o_.kill_rank,
              static_cast<long long>(applied_));
  std::fflush(stdout);
  ::raise(SIGKILL);
}

}  // namespace hoop::train
