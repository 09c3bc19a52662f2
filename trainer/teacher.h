// Knowledge distillation's teacher (Hinton et al. 2015; --strategy distill, strategy_distill.cc):
// the model, or the ensemble of models, whose soft targets a student learns from, each read from
// a hoop-train checkpoint into the model the checkpoint names, on the student's device.
//
// Soft targets: softmax(v / T) of each teacher's logits v in evaluation mode (batch norm's running
// statistics), averaged over an ensemble (as --sweep ... --ensemble averages probabilities). A
// larger T spreads the probability over the wrong classes, which is what the student learns from
// beyond the labels ("dark knowledge"). Each teacher sees the images at its own input size (the
// border InputPad gives it), so a resnet18 teacher on 32x32 can teach a lenet on 28x28.
//
// The images are not augmented (mnist.h Gather), so an image's soft targets are the same every
// epoch: each is computed once, the first time a step takes the image, and kept by its index
// (10 floats an image); the teacher's forward passes run in the first epoch only.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/compute.h"
#include "trainer/mnist.h"
#include "trainer/model.h"
#include "trainer/parallel.h"

namespace hoop::train {

// The checkpoints --teacher names: a comma-separated list; a PATH that is not a file while PATH.0
// is stands for PATH.0, PATH.1, ... up to the first missing (what --sweep ... --checkpoint PATH
// writes: the sweep's models as an ensemble). NotFound names a path with neither.
StatusOr<std::vector<std::string>> TeacherFiles(const std::string& spec);

class Teacher {
 public:
  // A model of the name a checkpoint holds, on the student's device, from any seed (the
  // checkpoint's weights replace its own).
  using Build = std::function<StatusOr<std::unique_ptr<Model>>(const std::string& name)>;

  // Reads each file into the model it names (PeekCheckpoint, then the parameters and batch-norm
  // statistics; the optimizer's state is skipped); the errors name the file.
  static StatusOr<std::unique_ptr<Teacher>> Load(const std::vector<std::string>& files, const Build& build,
                                                 const Dataset& train, float temperature);

  // The soft targets of the images perm[0..n) of `train`, n x classes, valid until the next call;
  // a forward pass over those not seen before.
  const float* Targets(const Dataset& train, const int64_t* perm, int n, ThreadPool& pool);

  // "resnet from t.ckpt (4 epochs)", or "an ensemble of 3 (lenet, resnet, resnet)".
  std::string Describe() const;
  // Seconds Targets took so far (its forward passes), and their reset.
  double Seconds() const { return seconds_; }
  void ResetSeconds() { seconds_ = 0; }

 private:
  struct Member {
    std::unique_ptr<Model> model;
    int pad = 0;
    std::string file;
    uint32_t epochs = 0;
  };
  std::vector<Member> members_;
  float temperature_ = 1;
  Workspace ws_;
  std::vector<float> out_, probs_, kept_;  // kept_: by image index, x classes
  std::vector<uint8_t> have_;              // by image index: its targets are in kept_
  std::vector<int64_t> todo_;
  double seconds_ = 0;
};

// What a distilling step's loss takes (compute.h): the teacher, T and alpha (--temperature,
// --alpha; loss.h DistillLoss).
struct Distillation {
  Teacher* teacher = nullptr;
  float temperature = 4, alpha = 0.5f;
};

}  // namespace hoop::train
