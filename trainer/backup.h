// Synchronous SGD with backup workers (Chen et al. 2016, the design TensorFlow's
// SyncReplicasOptimizer follows; issue 24, item 4). Each step every rank sends the gradient of
// its batch (summed over its images, with their count) to rank 0; rank 0 takes its own and the
// first N - B - 1 others to arrive, averages them over the images they cover, and sends that
// mean back to every rank, the dropped ones included, which then all take the same SGD step:
// the B slowest gradients of the step are left out instead of waited for, and the ranks that
// sent them catch up with the new parameters: a rank first looks whether the mean of the step it
// is about to compute has already come (rank 0 finished the step without it); if so it skips
// the step's computation, sends a marker instead of a gradient, and takes the step with the
// others' mean. So a straggler skips the steps it has fallen behind by rather than computing
// each one too late to count. With B = 0 this is exactly synchronous SGD.
// Rank 0 still receives the dropped gradients (tagged with their step, so they never mix with a
// later one) and throws them away. The exchange runs on a duplicate of the job's communicator,
// so it never queues behind the tensor fusion runtime's own collectives.
#pragma once
#include <memory>
#include <vector>

#include "collectives/api/communicator.h"
#include "trainer/layer.h"

namespace hoop::train {

class BackupWorkers {
 public:
  // Collective: every rank of `comm` calls it.
  static StatusOr<std::unique_ptr<BackupWorkers>> Create(Communicator& comm, std::vector<Param*> params, int backups);
  ~BackupWorkers();
  // After backward, with each parameter's gradient summed over this rank's `images`: leaves in
  // every gradient the mean over the images of the gradients rank 0 used.
  Status Exchange(int64_t step, int images);
  // Ranks but 0, before computing `step`: whether its mean is here already. If so the step is
  // taken (the marker sent, every gradient set to the mean): the caller skips its computation.
  StatusOr<bool> CatchUp(int64_t step);
  // Rank 0: waits for the dropped gradients still on their way and for its sends to finish.
  Status Drain();
  int64_t dropped() const { return dropped_; }  // rank 0: gradients left out so far
  int64_t skipped() const { return skipped_; }  // other ranks: steps caught up on without computing

 private:
  struct Pending;  // a receive or send still in flight, with its buffer
  BackupWorkers(std::unique_ptr<Communicator> comm, std::vector<Param*> params, int backups);
  void Pack();
  void Unpack(const std::vector<float>& from, double images);
  std::unique_ptr<Communicator> own_;
  Communicator& comm_;
  std::vector<Param*> params_;
  int backups_;
  size_t floats_ = 0;
  std::vector<float> mine_, sum_, in_;
  std::vector<std::unique_ptr<Pending>> pending_;
  Work mean_;  // ranks but 0: the receive of the mean of `mean_step_`, posted early
  int64_t mean_step_ = -1;
  bool behind_ = false;  // ranks but 0: rank 0 dropped this rank's last gradient
  int64_t dropped_ = 0, skipped_ = 0;
};

}  // namespace hoop::train
