// Knowledge distillation (--strategy distill; Hinton et al. 2015): synchronous data parallelism
// as sync's (strategy_sync.cc), each rank's loss the distillation's (loss.h DistillLoss) against
// the soft targets of a teacher (teacher.h) on the rank's own device, for the same images the
// student sees. Every rank reads the teacher's checkpoint(s) itself; the ranks agree at Begin
// that every one could, so a rank whose path is wrong names its cause and the others name it.
#include <cstdio>

#include "trainer/layer_factory.h"
#include "trainer/precision.h"
#include "trainer/strategy.h"
#include "trainer/teacher.h"

namespace hoop::train {

namespace {

class Distill final : public Strategy {
 public:
  Distill(Model& model, Communicator& comm, StatusOr<std::unique_ptr<Teacher>> teacher, const Options& o)
      : sync_(SyncStrategy(model)), comm_(comm), loaded_(teacher.status()) {
    if (teacher.ok()) teacher_ = std::move(*teacher);
    d_ = Distillation{teacher_.get(), static_cast<float>(o.temperature), static_cast<float>(o.alpha)};
  }
  Status Begin(DataParallel* dp) override {
    std::vector<double> failed(comm_.size(), 0.0);
    failed[comm_.rank()] = loaded_.ok() ? 0.0 : 1.0;
    HOOP_RETURN_IF_ERROR(dp->SumDoubles("distill.teacher", failed).WithContext("agreeing on the teacher"));
    if (!loaded_.ok()) return loaded_;
    for (int r = 0; r < comm_.size(); ++r)
      if (failed[r] != 0)
        return FailedPrecondition("rank " + std::to_string(r) + " could not read the teacher (see its error)");
    if (comm_.rank() == 0) {
      std::printf("hoop-train: distilling from %s, temperature %g, alpha %g\n", teacher_->Describe().c_str(),
                  d_.temperature, d_.alpha);
      std::fflush(stdout);
    }
    return sync_->Begin(dp);
  }
  StatusOr<bool> BeginStep(int64_t step) override { return sync_->BeginStep(step); }
  float GradientScale(const Slice& s) const override { return sync_->GradientScale(s); }
  void OnLayerGradients(Layer& layer) override { sync_->OnLayerGradients(layer); }
  Status BeforeOptimizer(int64_t step, int images, bool computed) override {
    return sync_->BeforeOptimizer(step, images, computed);
  }
  void AfterStep() override { sync_->AfterStep(); }
  Status EndEpoch() override {
    note_s_ = teacher_->Seconds();
    teacher_->ResetSeconds();
    return sync_->EndEpoch();
  }
  std::string EpochNote() const override {
    char note[96];
    std::snprintf(note, sizeof note, " | teacher's forward %.2f s of rank 0's", note_s_);
    return note;
  }
  Status End() override { return sync_->End(); }
  const Distillation* Distilling() const override { return &d_; }

 private:
  std::unique_ptr<Strategy> sync_;
  Communicator& comm_;
  Status loaded_;
  std::unique_ptr<Teacher> teacher_;
  Distillation d_;
  double note_s_ = 0;
};

// The student's kind of layers, on its device, for a teacher of the model `name`.
Teacher::Build SameLayers(const Options& o, const Model& student, int channels) {
  return [&o, device = student.device, channels](const std::string& name) -> StatusOr<std::unique_ptr<Model>> {
    if (device < 0) return BuildHostModel(o, name, channels);
    HOOP_ASSIGN_OR_RETURN(auto make, CudaLayerFactory(device, o.tf32, o.deterministic, o.cudnn_benchmark));
    return BuildModel(name, o.seed, *make, channels);
  };
}

}  // namespace

std::unique_ptr<Strategy> DistillStrategy(const StrategyContext& c) {
  StatusOr<std::unique_ptr<Teacher>> teacher = [&]() -> StatusOr<std::unique_ptr<Teacher>> {
    HOOP_ASSIGN_OR_RETURN(auto files, TeacherFiles(c.o.teacher));
    return Teacher::Load(files, SameLayers(c.o, c.model, c.train.channels), c.train,
                         static_cast<float>(c.o.temperature));
  }();
  return std::make_unique<Distill>(c.model, c.comm, std::move(teacher), c.o);
}

}  // namespace hoop::train
