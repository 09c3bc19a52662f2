#include "trainer/tensor.h"

#include <algorithm>

namespace hoop::train {

std::string Shape::str() const {
  return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

void Tensor::Resize(Shape s, bool zero) {
  shape = s;
  block = 0;
  data.resize(s.size());
  if (zero) Zero();
}

void Tensor::Zero() { std::fill(data.begin(), data.end(), 0.0f); }

}  // namespace hoop::train
