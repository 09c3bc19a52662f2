// Synchronous data-parallel SGD (strategy.h): each layer's gradients go to the fusion runtime
// as its backward returns, scaled so that their sum over the ranks is the step's mean; before
// the optimizer every one has come back. Every rank then takes the same step.
#include "trainer/strategy.h"

namespace hoop::train {

namespace {

class Sync final : public Strategy {
 public:
  Status Begin(DataParallel& dp) override {
    dp_ = &dp;
    return Status::Ok();
  }
  StatusOr<bool> BeginStep(int64_t) override { return false; }
  float GradientScale(const Slice& s) const override { return 1.0f / static_cast<float>(s.step_images); }
  void OnLayerGradients(Layer& layer) override { dp_->GradientsReady(layer); }
  Status BeforeOptimizer(int64_t, int, bool) override { return dp_->Wait(); }
  void AfterStep() override {}
  Status EndEpoch() override { return Status::Ok(); }
  std::string EpochNote() const override { return {}; }
  Status End() override { return Status::Ok(); }

 private:
  DataParallel* dp_ = nullptr;
};

}  // namespace

std::unique_ptr<Strategy> SyncStrategy() { return std::make_unique<Sync>(); }

StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const Options& o, Communicator& comm, std::vector<Param*> params) {
  const int ranks = comm.size();
  if (o.strategy == "hogwild") {
    if (comm.local_size() != ranks)
      return InvalidArgument(
          "--strategy hogwild: the ranks share one copy of the parameters in memory, so all must be on "
          "one host; this job has " +
          std::to_string(comm.local_size()) + " of its " + std::to_string(ranks) + " ranks on this one");
    return HogwildStrategy(comm, std::move(params));
  }
  if (o.backup_workers >= 0) {
    if (o.backup_workers >= ranks)
      return InvalidArgument("--backup-workers " + std::to_string(o.backup_workers) + ": at least one of the " +
                             std::to_string(ranks) + " ranks' gradients must be used");
    return BackupStrategy(comm, std::move(params), o.backup_workers);
  }
  return SyncStrategy();
}

}  // namespace hoop::train
