#include "trainer/layer.h"

#include <cmath>

namespace hoop::train {

void HeInit(Tensor& w, int fan_in, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
  for (float& v : w.data) v = d(rng);
}

}  // namespace hoop::train
