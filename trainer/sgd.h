// Momentum SGD with weight decay (PyTorch's formulation) and the learning-rate schedule of
// large-batch data-parallel training (Goyal et al.):
//   g = grad + weight_decay * w;  v = momentum * v + g;  w -= lr * v
//   lr(step): the per-rank rate times the number of ranks (the global batch grows with them),
//   reached by a linear warm-up from the per-rank rate over the first warm-up steps, then held
//   (constant) or decayed to 0 at the last step along a half cosine (cosine, the default).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/layer.h"
#include "trainer/tensor_math.h"

namespace hoop::train {

struct LrSchedule {
  double lr = 0.025;  // per rank
  int ranks = 1;
  int64_t warmup_steps = 0, total_steps = 1;
  bool cosine = true;
  double At(int64_t step) const;
};

class Sgd {
 public:
  // math: where the update runs (the layer back end's, tensor_math.h); null: host loops. The
  // momentum buffers live where the parameters do.
  Sgd(std::vector<Param*> params, double momentum, double weight_decay, std::shared_ptr<TensorMath> math = nullptr);
  void Step(double lr);
  // Momentum buffers, in Params() order, named "<param>.momentum" (checkpointed).
  std::vector<std::pair<std::string, Tensor*>> State();

 private:
  std::vector<Param*> params_;
  std::vector<Tensor> velocity_;
  float momentum_, weight_decay_;
  std::shared_ptr<TensorMath> math_;
};

}  // namespace hoop::train
