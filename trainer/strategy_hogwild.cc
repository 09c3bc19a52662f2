// Hogwild! as a strategy (strategy.h; the shared copy is hogwild.h's): the ranks on one host
// map one copy of the parameters; each step a rank reads it, computes the mean gradient of its
// own batch, steps alone and adds its change back. No gradient crosses the fusion runtime; the
// epoch ends with every rank's updates in (a barrier) and the shared model read for evaluation.
#include <unistd.h>

#include <random>

#include "trainer/hogwild.h"
#include "trainer/strategy.h"

namespace hoop::train {

namespace {

// Rank 0 creates the shared copy from its model, the others open it, and once all have it
// mapped its name goes (nothing is left in /dev/shm).
StatusOr<std::unique_ptr<SharedParams>> OpenShared(Communicator& comm, DataParallel& dp,
                                                   const std::vector<Param*>& params) {
  // A name no other job uses: rank 0's pid and a random number, sent to all as two doubles.
  std::vector<double> id{0, 0};
  if (comm.rank() == 0) {
    std::random_device rd;
    id = {static_cast<double>(::getpid()), static_cast<double>(rd() & 0xffffffu)};
  }
  HOOP_RETURN_IF_ERROR(dp.SumDoubles("hogwild.name", id));
  const std::string name = "/hoop-hogwild-" + std::to_string(static_cast<long long>(id[0])) + "-" +
                           std::to_string(static_cast<long long>(id[1]));
  std::unique_ptr<SharedParams> shared;
  Status made = Status::Ok();
  if (comm.rank() == 0) {
    auto s = SharedParams::Open(name, params, true);
    if (s.ok()) {
      shared = std::move(*s);
      shared->Publish();
    } else {
      made = s.status();
    }
  }
  std::vector<double> ok{made.ok() ? 0.0 : 1.0};  // rank 0's outcome, before the others open
  HOOP_RETURN_IF_ERROR(dp.SumDoubles("hogwild.made", ok));
  if (ok[0] != 0) return made.ok() ? Unavailable("hogwild: rank 0 could not create " + name) : made;
  if (comm.rank() != 0) {
    HOOP_ASSIGN_OR_RETURN(shared, SharedParams::Open(name, params, false));
  }
  std::vector<double> opened{1};  // a barrier: every rank has mapped it
  HOOP_RETURN_IF_ERROR(dp.SumDoubles("hogwild.opened", opened));
  if (comm.rank() == 0) shared->Unlink();
  return shared;
}

class Hogwild final : public Strategy {
 public:
  Hogwild(Communicator& comm, std::vector<Param*> params) : comm_(comm), params_(std::move(params)) {}
  Status Begin(DataParallel* dp) override {
    dp_ = dp;
    HOOP_ASSIGN_OR_RETURN(shared_, OpenShared(comm_, *dp, params_));
    return Status::Ok();
  }
  StatusOr<bool> BeginStep(int64_t) override {
    shared_->Read();  // the shared model as it is now
    return false;
  }
  float GradientScale(const Slice& s) const override { return 1.0f / static_cast<float>(s.count()); }
  void OnLayerGradients(Layer&) override {}
  Status BeforeOptimizer(int64_t, int, bool) override { return Status::Ok(); }
  void AfterStep() override { shared_->AddChange(); }
  Status EndEpoch() override {
    std::vector<double> done{1};  // a barrier: every rank's last update is in
    HOOP_RETURN_IF_ERROR(dp_->SumDoubles("hogwild.epoch", done));
    shared_->Read();
    return Status::Ok();
  }
  std::string EpochNote() const override { return {}; }
  Status End() override { return Status::Ok(); }
  // The ranks' steps add up rather than being averaged: N ranks each stepping at lr / N move the
  // model as one rank at lr would (at 4 ranks, lr itself diverged: PERF.md).
  double Rate(double lr, int ranks) const override { return lr / ranks; }
  int RateRanks(int) const override { return 1; }

 private:
  Communicator& comm_;
  std::vector<Param*> params_;
  DataParallel* dp_ = nullptr;
  std::unique_ptr<SharedParams> shared_;
};

}  // namespace

std::unique_ptr<Strategy> HogwildStrategy(Communicator& comm, std::vector<Param*> params) {
  return std::make_unique<Hogwild>(comm, std::move(params));
}

}  // namespace hoop::train
