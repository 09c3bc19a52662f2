// What a rank that has joined (Runtime::Join, Horovod's join for ranks whose data ran out first)
// contributes to an allreduce the other ranks still run: the op's identity, so the result is
// that of the ranks that submitted the tensor. Sum, band, bor and bxor come out exactly as over
// those ranks alone; avg divides their sum by every rank of the communicator, as Horovod's joined
// zeros do; min, max and prod ignore the joined ranks.
//
// A prescale multiplies the identity too, so it is chosen to stay one after scaling: prod takes
// 1/prescale (exact where the scale is a power of two), min and max the infinity on the side the
// scale's sign keeps (for f8e4m3, which has no infinity, its largest finite value, which a
// prescale below 1 makes smaller: min and max of f8e4m3 with a prescale are not exact there).
#pragma once

#include <cstddef>

#include "common/dtype.h"

namespace hoop::fusion {

void FillIdentity(DType dtype, ReduceOp op, double prescale, void* buf, size_t count);

}  // namespace hoop::fusion
