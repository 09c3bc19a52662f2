// Synchronous SGD with backup workers as a strategy (strategy.h; the exchange is backup.h's):
// a rank that fell behind takes the step with the others' mean instead of computing it; the
// others send their summed gradients to rank 0 after backward and step with the mean it sends
// back. Nothing goes through the fusion runtime during the step.
#include "trainer/backup.h"
#include "trainer/strategy.h"

namespace hoop::train {

namespace {

class Backup final : public Strategy {
 public:
  Backup(std::unique_ptr<BackupWorkers> workers, int backups) : workers_(std::move(workers)), backups_(backups) {}
  Status Begin(DataParallel* dp) override {
    dp_ = dp;
    return Status::Ok();
  }
  StatusOr<bool> BeginStep(int64_t step) override {
    auto caught_up = workers_->CatchUp(step);
    if (!caught_up.ok()) return caught_up.status().WithContext("backup workers' exchange");
    return *caught_up;
  }
  float GradientScale(const Slice&) const override { return 1.0f; }  // rank 0 averages over the images used
  void OnLayerGradients(Layer&) override {}
  Status BeforeOptimizer(int64_t step, int images, bool computed) override {
    if (!computed) return Status::Ok();
    if (Status s = workers_->Exchange(step, images); !s.ok()) return s.WithContext("backup workers' exchange");
    return Status::Ok();
  }
  void AfterStep() override {}
  // The steps the ranks behind took without computing, so far, summed for rank 0's line.
  Status EndEpoch() override {
    std::vector<double> skipped{static_cast<double>(workers_->skipped())};
    if (Status s = dp_->SumDoubles("backup.skipped", skipped); !s.ok()) return s.WithContext("counting skipped steps");
    skipped_ = static_cast<int64_t>(skipped[0]);
    return Status::Ok();
  }
  std::string EpochNote() const override {
    return " | " + std::to_string(workers_->dropped()) + " gradient(s) dropped so far (" + std::to_string(backups_) +
           " backup worker(s)), " + std::to_string(skipped_) + " step(s) skipped by ranks catching up";
  }
  Status End() override {
    if (Status s = workers_->Drain(); !s.ok()) return s.WithContext("receiving the dropped gradients");
    return Status::Ok();
  }

 private:
  std::unique_ptr<BackupWorkers> workers_;
  int backups_;
  DataParallel* dp_ = nullptr;
  int64_t skipped_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Strategy>> BackupStrategy(Communicator& comm, std::vector<Param*> params, int backups) {
  HOOP_ASSIGN_OR_RETURN(auto workers, BackupWorkers::Create(comm, std::move(params), backups));
  return std::unique_ptr<Strategy>(std::make_unique<Backup>(std::move(workers), backups));
}

}  // namespace hoop::train
