// A stream that waits for the host (kernels/cuda/wait.cu): one single-thread kernel queued on a
// CUDA stream that polls a 64-bit word in pinned host memory until it reaches a value, so work
// queued on the stream after it waits for whatever the host publishes there (stream_order.h:
// an operation on a caller's stream finishing on hoop's worker thread). The calling thread never
// blocks. The kernel sleeps between looks (__nanosleep), occupying one thread of one SM.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace hoop {

// Queues the wait on `stream` (a cudaStream_t). `word` is pinned (CudaAllocPinned), so the same
// pointer reads it on the device. Unimplemented in a build without CUDA.
Status LaunchWaitAtLeast(const uint64_t* word, uint64_t value, void* stream);

}  // namespace hoop
