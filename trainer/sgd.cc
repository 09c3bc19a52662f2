#include "trainer/sgd.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace hoop::train {

double LrSchedule::At(int64_t step) const {
  const double target = lr * ranks;
  if (step < warmup_steps)
    return lr + (target - lr) * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (!cosine) return target;
  const double span = static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  const double t = std::min(1.0, static_cast<double>(step - warmup_steps) / span);
  return target * 0.5 * (1 + std::cos(std::numbers::pi * t));
}

Sgd::Sgd(std::vector<Param*> params, double momentum, double weight_decay, std::shared_ptr<TensorMath> math)
    : params_(std::move(params)),
      momentum_(static_cast<float>(momentum)),
      weight_decay_(static_cast<float>(weight_decay)),
      math_(math ? std::move(math) : HostMath()) {
  velocity_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) velocity_[i].ResizeLike(params_[i]->value, params_[i]->value.shape, true);
}

void Sgd::Step(double lr) {
  const float rate = static_cast<float>(lr);
  for (size_t i = 0; i < params_.size(); ++i)
    math_->SgdStep(params_[i]->value, params_[i]->grad, velocity_[i], momentum_, weight_decay_, rate);
}

std::vector<std::pair<std::string, Tensor*>> Sgd::State() {
  std::vector<std::pair<std::string, Tensor*>> s;
  for (size_t i = 0; i < params_.size(); ++i) s.emplace_back(params_[i]->name + ".momentum", &velocity_[i]);
  return s;
}

}  // namespace hoop::train
