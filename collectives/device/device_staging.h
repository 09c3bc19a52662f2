// Device buffers in a collective, the plain (synchronising) way: through pinned host memory.
// The communicator's RunOp sends an operation with CUDA device buffers here (RunStaged, in
// device_staging.cc): the device input is copied into pinned host staging, the collective runs on
// the host copies like any other, and the output is copied back to the device before the call
// completes. The copies go on the staging streams (CudaStageCopies, pipelined_staging.h), which
// first wait for an event recorded on the caller's legacy default stream at the call (so after
// the caller's work queued on any blocking stream; ready_events.h says why at the call), and are
// waited for, so the call behaves as the plain form of ncclAllReduce used with a synchronised
// stream. A call on a caller's stream is staged at the call
// instead, by copies queued on that stream (stream_staging.h), and never comes here. An input
// inside the output buffer (an in-place allgather's own block) keeps its place in the output's
// staging.
//
// Allreduce, broadcast, allgather and reduce-scatter across ranks go the pipelined way instead
// (pipelined_staging.h: chunk k+1 copied while chunk k is on the wire, results copied back as
// they are final; the callers' placements made on the device); the other collectives, and those
// four with host and device buffers mixed (but the allreduce), are staged whole here, the
// correct, simple baseline. CUDA IPC between ranks on one host comes next (issue 20).
#pragma once

#include <cstddef>
#include <vector>

#include "common/status.h"

namespace hoop {

// Two pinned host buffers (input and output side), grown on demand, never shrunk, freed with it.
// A buffer outgrown is kept until then too: freeing pinned memory synchronises the device.
class PinnedStaging {
 public:
  PinnedStaging() = default;
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  // At least `bytes` of pinned memory for side `which` (0: input, 1: output).
  StatusOr<char*> Get(int which, size_t bytes);

 private:
  char* buf_[2] = {nullptr, nullptr};
  size_t bytes_[2] = {0, 0};
  std::vector<char*> retired_;
};

}  // namespace hoop
