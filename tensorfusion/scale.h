// Copies with a scale factor, for the fusion buffer: packing applies a tensor's prescale,
// unpacking its postscale, in the same pass as the copy. f16, bf16 and the fp8s are scaled in f32 and
// rounded once; f32 in f32, f64 in f64. Integers are never scaled (the runtime refuses scale
// factors on them), so a factor of 1 is a plain copy for every type.
#pragma once

#include <cstddef>

#include "common/dtype.h"

namespace hoop::fusion {

void ScaledCopy(DType dtype, void* dst, const void* src, size_t count, double factor);

}  // namespace hoop::fusion
