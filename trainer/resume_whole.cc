#include "trainer/resume_whole.h"

#include <cstdio>

#include "trainer/checkpoint.h"

namespace hoop::train {

Status CheckOutputs(const Options& o, Communicator& comm) {
  Status cause = comm.rank() == 0 ? ProbeOutputs(o.metrics, o.checkpoint) : Status::Ok();
  double bad = cause.ok() ? 0 : 1;
  HOOP_RETURN_IF_ERROR(comm.Allreduce(Buffer{&bad, 1, DType::kF64, MemKind::kHost},
                                      Buffer{&bad, 1, DType::kF64, MemKind::kHost}, ReduceOp::kSum)
                           .Wait());
  if (bad != 0) return cause.ok() ? FailedPrecondition("rank 0 cannot write its output files (see its error)") : cause;
  return Status::Ok();
}

bool NothingLeft(const Options& o, const Communicator& comm, const ResumedAt& at, RunResult* result) {
  if (at.epochs_done < o.epochs) return false;
  if (comm.rank() == 0)
    std::printf(
        "hoop-train: %s holds %d finished epoch(s), --epochs is %d: nothing left to train (raise --epochs to go "
        "on)\n",
        o.checkpoint.c_str(), at.epochs_done, o.epochs);
  result->nothing_left = true;
  return true;
}

StatusOr<ResumedAt> ResumeWhole(const Options& o, Communicator& comm, int ranks, Model& model, Sgd& sgd,
                                RunResult* result, bool mid_epoch) {
  NamedTensors state;
  for (Param* p : model.net.Params()) state.emplace_back(p->name, &p->value);
  for (auto& b : model.net.Buffers()) state.push_back(b);
  for (auto& m : sgd.State()) state.push_back(m);
  // ok, epochs done, wall seconds, steps into the epoch, ranks, batch, partial sums' count, the sums
  constexpr size_t kFixed = 7, kMostSums = 32;
  double found[kFixed + kMostSums] = {};
  Status cause;
  if (comm.rank() == 0) {
    CheckpointInfo info;
    cause = LoadCheckpoint(o.checkpoint, model.name, state, &info);
    if (cause.ok() && info.step_in_epoch != 0 && !mid_epoch)
      cause = FailedPrecondition(o.checkpoint + " was saved in the middle of epoch " +
                                 std::to_string(info.epochs_done + 1) + "; --strategy " + o.strategy +
                                 " resumes at an epoch's end: continue it with --strategy "
                                 "sync (to the epoch's end), then switch");
    if (cause.ok() && info.ranks && static_cast<int>(info.ranks) != ranks && !o.force) {
      char why[384];
      std::snprintf(why, sizeof why,
                    "%s was written by a run of %u rank(s) (workers or pipelines); this one has %d: the "
                    "learning rate and the global batch change; add --force to resume anyway",
                    o.checkpoint.c_str(), info.ranks, ranks);
      cause = FailedPrecondition(why);
    }
    if (cause.ok()) {
      found[0] = 1;
      found[1] = info.epochs_done;
      found[2] = info.wall_s;
      found[3] = info.step_in_epoch;
      found[4] = info.ranks;
      found[5] = info.batch;
      if (info.step_in_epoch && info.partial.size() <= kMostSums) {
        found[6] = static_cast<double>(info.partial.size());
        std::copy(info.partial.begin(), info.partial.end(), found + kFixed);
      }
      const size_t n = info.history_fields;
      for (size_t at = 0; n && at + n <= info.history.size(); at += n)
        result->epochs.push_back(EpochFromValues(&info.history[at], n));
    }
  }
  const size_t slots = kFixed + kMostSums;
  HOOP_RETURN_IF_ERROR(comm.Broadcast(Buffer{found, slots, DType::kF64, MemKind::kHost},
                                      Buffer{found, slots, DType::kF64, MemKind::kHost}, 0)
                           .Wait());
  if (found[0] != 1)
    return cause.ok() ? FailedPrecondition("rank 0 could not resume from " + o.checkpoint + " (see its error)") : cause;
  std::vector<float> flat;
  for (auto& t : state) flat.insert(flat.end(), t.second->data.begin(), t.second->data.end());
  HOOP_RETURN_IF_ERROR(comm.Broadcast(Buffer{flat.data(), flat.size(), DType::kF32, MemKind::kHost},
                                      Buffer{flat.data(), flat.size(), DType::kF32, MemKind::kHost}, 0)
                           .Wait());
  size_t at = 0;
  for (auto& t : state) {
    std::copy_n(flat.begin() + at, t.second->size(), t.second->data.begin());
    at += t.second->size();
  }
  ResumedAt at_{static_cast<int>(found[1]), found[2], static_cast<int64_t>(found[3]), static_cast<int>(found[4]),
                static_cast<int>(found[5]), {}};
  at_.partial.assign(found + kFixed, found + kFixed + static_cast<size_t>(found[6]));
  return at_;
}

}  // namespace hoop::train
