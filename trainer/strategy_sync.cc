// Synchronous data-parallel SGD (strategy.h): the model's gradients live in its arena
// (gradient_arena.h); as backward completes each bucket's layers the bucket goes to the fusion
// runtime and is reduced where it lies, the gradients scaled so that their sum over the ranks
// is the step's mean; before the optimizer every bucket has come back. Every rank then takes
// the same step.
#include "trainer/strategy.h"

namespace hoop::train {

namespace {

class Sync final : public Strategy {
 public:
  explicit Sync(Model& model) : model_(model) {}
  Status Begin(DataParallel* dp) override {
    dp_ = dp;
    std::vector<Layer*> backward;  // the order backward hands the layers over
    for (auto it = model_.net.layers().rbegin(); it != model_.net.layers().rend(); ++it) backward.push_back(it->get());
    if (!model_.grads.bound()) model_.grads.Bind(backward);
    dp->UseArena(model_.grads);
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
  Model& model_;
  DataParallel* dp_ = nullptr;
};

}  // namespace

std::unique_ptr<Strategy> SyncStrategy(Model& model) { return std::make_unique<Sync>(model); }

StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const StrategyContext& c) {
  const Options& o = c.o;
  Communicator& comm = c.comm;
  Model& model = c.model;
  const int ranks = comm.size();
  if (o.strategy == "pipeline") return PipelineStrategy(c);
  if (o.strategy == "distill") return DistillStrategy(c);
  if (o.strategy == "hogwild") {
    if (comm.local_size() != ranks)
      return InvalidArgument(
          "--strategy hogwild: the ranks share one copy of the parameters in memory, so all must be on "
          "one host; this job has " +
          std::to_string(comm.local_size()) + " of its " + std::to_string(ranks) + " ranks on this one");
    return HogwildStrategy(comm, model.net.Params());
  }
  if (o.backup_workers >= 0) {
    if (o.backup_workers >= ranks)
      return InvalidArgument("--backup-workers " + std::to_string(o.backup_workers) + ": at least one of the " +
                             std::to_string(ranks) + " ranks' gradients must be used");
    return BackupStrategy(comm, model.net.Params(), o.backup_workers);
  }
  return SyncStrategy(model);
}

}  // namespace hoop::train
