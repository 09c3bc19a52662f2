// Reductions of CUDA device memory (kernels/cuda/reduce.cu): dst[i] = a[i] op b[i] for every
// dtype x op that LookupReduce serves, with the same semantics and the same bits (f16 and bf16
// widened to f32, reduced and rounded once to nearest even, NaNs included; integers wrap; an
// average's last step divides by `divisor` before the rounding). dst may alias a or b.
//
// A call queues one kernel on `stream` (a cudaStream_t; nullptr: the legacy default stream) and
// returns: it never waits for the GPU, so a reduction never blocks the progress loop. Whoever
// needs the result waits on the stream (an event). An error is the launch's (a device without
// kernels for its architecture, a bad stream); what goes wrong later shows on the stream.
//
// Without CUDA in the build (HOOP_WITH_CUDA off) there are none: LookupDeviceReduce gives
// nullptr for everything.
#pragma once

#include <cstddef>

#include "common/dtype.h"
#include "common/status.h"

namespace hoop {

using DeviceReduceFn = Status (*)(void* dst, const void* a, const void* b, size_t n, int divisor, void* stream);

// nullptr where the op does not apply to the dtype (OpApplies), or this build has no CUDA.
DeviceReduceFn LookupDeviceReduce(DType dtype, ReduceOp op);

}  // namespace hoop
