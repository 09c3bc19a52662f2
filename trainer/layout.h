// Conversions between the plain NCHW layout and oneDNN's blocked nChw{B}c (Tensor::block):
// plain[n][c][h][w] is blocked[n][c / B][h][w][c % B]. Used where a layer that takes only plain
// tensors follows one that wrote a blocked tensor, and where two branches of a residual block
// chose different layouts. Plain loops: these run at the few boundaries between back ends.
#pragma once
#include "trainer/tensor.h"

namespace hoop::train {

// dst = src in layout `block` (0: plain); dst's shape is src's. src's channels must be a
// multiple of `block`.
void Relayout(const Tensor& src, int block, Tensor& dst);

}  // namespace hoop::train
