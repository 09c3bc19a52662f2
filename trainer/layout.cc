#include "trainer/layout.h"

#include <algorithm>

namespace hoop::train {

namespace {

// One of the two directions: plain <-> blocked with B channels per block.
void Convert(const Tensor& src, int to_block, Tensor& dst) {
  const Shape& s = src.shape;
  const int b = to_block ? to_block : src.block;
  const size_t hw = static_cast<size_t>(s.h) * s.w;
  const float* x = src.ptr();
  float* y = dst.ptr();
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c) {
      const size_t plain = (static_cast<size_t>(n) * s.c + c) * hw;
      const size_t blocked = ((static_cast<size_t>(n) * (s.c / b) + c / b) * hw) * b + c % b;
      for (size_t p = 0; p < hw; ++p) {
        if (to_block)
          y[blocked + p * b] = x[plain + p];
        else
          y[plain + p] = x[blocked + p * b];
      }
    }
}

}  // namespace

void Relayout(const Tensor& src, int block, Tensor& dst) {
  dst.Resize(src.shape);
  if (src.block == block) {
    std::copy(src.data.begin(), src.data.end(), dst.data.begin());
  } else if (src.block == 0 || block == 0) {
    Convert(src, block, dst);
  } else {
    Tensor plain;
    plain.Resize(src.shape);
    Convert(src, 0, plain);
    Convert(plain, block, dst);
  }
  dst.block = block;
}

}  // namespace hoop::train
