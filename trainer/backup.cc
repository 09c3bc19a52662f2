#include "trainer/backup.h"

#include <algorithm>
#include <chrono>

namespace hoop::train {

namespace {

// Tags: a step's gradients and its mean, distinct per step (modulo a window far longer than any
// rank can lag) and clear of the small tags a user of the communicator might pick.
int GradientTag(int64_t step) { return 1 << 20 | static_cast<int>(step % (1 << 18)) << 1; }
int MeanTag(int64_t step) { return GradientTag(step) | 1; }

}  // namespace

struct BackupWorkers::Pending {
  std::vector<float> buffer;
  Work work;
};

StatusOr<std::unique_ptr<BackupWorkers>> BackupWorkers::Create(Communicator& comm, std::vector<Param*> params,
                                                               int backups) {
  HOOP_ASSIGN_OR_RETURN(auto own, comm.Dup());
  return std::unique_ptr<BackupWorkers>(new BackupWorkers(std::move(own), std::move(params), backups));
}

BackupWorkers::BackupWorkers(std::unique_ptr<Communicator> comm, std::vector<Param*> params, int backups)
    : own_(std::move(comm)), comm_(*own_), params_(std::move(params)), backups_(backups) {
  for (const Param* p : params_) floats_ += p->grad.size();
  mine_.resize(floats_ + 2);  // the gradients, this rank's image count, and (in a mean) whether it was used
}

BackupWorkers::~BackupWorkers() = default;

void BackupWorkers::Pack() {
  size_t at = 0;
  for (const Param* p : params_) {
    std::copy(p->grad.ptr(), p->grad.ptr() + p->grad.size(), mine_.begin() + at);
    at += p->grad.size();
  }
}

void BackupWorkers::Unpack(const std::vector<float>& from, double images) {
  const float scale = images > 0 ? static_cast<float>(1.0 / images) : 0.0f;
  size_t at = 0;
  for (Param* p : params_) {
    for (size_t i = 0; i < p->grad.size(); ++i) p->grad.ptr()[i] = from[at + i] * scale;
    at += p->grad.size();
  }
}

Status BackupWorkers::Exchange(int64_t step, int images) {
  Pack();
  mine_[floats_] = static_cast<float>(images);
  const Buffer whole{nullptr, floats_ + 2, DType::kF32, MemKind::kHost};
  if (comm_.rank() != 0) {
    Buffer out = whole;
    out.data = mine_.data();
    HOOP_RETURN_IF_ERROR(comm_.SendNow(out, 0, GradientTag(step)));
    if (mean_step_ == step) {  // posted by CatchUp
      HOOP_RETURN_IF_ERROR(mean_.Wait());
    } else {
      in_.resize(floats_ + 2);
      Buffer mean = whole;
      mean.data = in_.data();
      HOOP_RETURN_IF_ERROR(comm_.RecvNow(mean, 0, MeanTag(step)));
    }
    mean_step_ = -1;
    behind_ = in_[floats_ + 1] == 0;  // rank 0 did not use this rank's gradient
    Unpack(in_, 1.0);                 // rank 0 sent the mean itself
    return Status::Ok();
  }
  // Rank 0: its own gradient, then the first N - B - 1 others of this step to arrive.
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const auto& p) { return p->work.Done(); }),
                 pending_.end());
  sum_ = mine_;
  std::vector<bool> used(comm_.size(), false);
  used[0] = true;
  in_.resize(floats_ + 2);
  for (int k = 0; k < comm_.size() - 1 - backups_; ++k) {
    Buffer b = whole;
    b.data = in_.data();
    RecvInfo info;
    HOOP_RETURN_IF_ERROR(comm_.RecvNow(b, kAnySource, GradientTag(step), &info));
    used[info.source] = true;
    for (size_t i = 0; i <= floats_; ++i) sum_[i] += in_[i];
  }
  // The others' gradients of this step are dropped: received when they come, into buffers of
  // their own, and thrown away.
  for (int r = 1; r < comm_.size(); ++r) {
    if (used[r]) continue;
    ++dropped_;
    auto p = std::make_unique<Pending>();
    p->buffer.resize(floats_ + 2);
    Buffer b = whole;
    b.data = p->buffer.data();
    p->work = comm_.Recv(b, r, GradientTag(step));
    pending_.push_back(std::move(p));
  }
  const double total = sum_[floats_];
  for (size_t i = 0; i < floats_; ++i) sum_[i] = static_cast<float>(sum_[i] / std::max(total, 1.0));
  sum_[floats_] = static_cast<float>(total);
  // The mean to every other rank, without waiting for the slow ones to take it.
  for (int r = 1; r < comm_.size(); ++r) {
    auto p = std::make_unique<Pending>();
    p->buffer = sum_;
    p->buffer[floats_ + 1] = used[r] ? 1.0f : 0.0f;
    Buffer b = whole;
    b.data = p->buffer.data();
    p->work = comm_.Send(b, r, MeanTag(step));
    pending_.push_back(std::move(p));
  }
  Unpack(sum_, 1.0);
  return Status::Ok();
}

StatusOr<bool> BackupWorkers::CatchUp(int64_t step) {
  // Only a rank whose last gradient was dropped looks (with B = 0 none is): one that keeps up
  // does not pay for the look.
  if (comm_.rank() == 0 || !behind_) return false;
  in_.resize(floats_ + 2);
  mean_ = comm_.Recv(Buffer{in_.data(), floats_ + 2, DType::kF32, MemKind::kHost}, 0, MeanTag(step));
  mean_step_ = step;
  // A mean already here is matched within microseconds; one still to come costs this short look.
  if (!mean_.Wait(Deadline::After(std::chrono::milliseconds(1))).ok() || !mean_.Done()) return false;
  HOOP_RETURN_IF_ERROR(mean_.Wait());
  mean_step_ = -1;
  float marker = 0;  // "no gradient": rank 0 receives it where it waits for this rank's dropped one
  HOOP_RETURN_IF_ERROR(comm_.SendNow(Buffer{&marker, 1, DType::kF32, MemKind::kHost}, 0, GradientTag(step)));
  Unpack(in_, 1.0);
  ++skipped_;
  return true;
}

Status BackupWorkers::Drain() {
  for (auto& p : pending_) HOOP_RETURN_IF_ERROR(p->work.Wait());
  pending_.clear();
  return Status::Ok();
}

}  // namespace hoop::train
