// Device buffers in a collective, the plain (synchronising) way: through pinned host memory.
// The communicator's RunOp sends an operation with CUDA device buffers here (RunStaged, in
// device_staging.cc): the device input is copied into pinned host staging, the collective runs on
// the host copies like any other, and the output is copied back to the device before the call
// completes. Every copy goes on CUDA's legacy default stream, which orders it after the caller's
// work queued on any blocking stream, and is waited for, so the call behaves as the plain form of
// ncclAllReduce used with a synchronised stream. A call on a caller's stream (stream_order.h)
// copies on hoop's own stream instead, after the stream's earlier work, and through pageable
// host memory: pinned memory allocated while the caller's stream is held would wait for that
// stream, which waits for this call. An input inside the output
// buffer (an in-place allgather's own block) keeps its place in the output's staging.
//
// The pipelined path (chunk k+1 copied while chunk k is on the wire) and CUDA IPC between ranks
// on one host come next (issue 20); this is the correct, simple baseline they are measured
// against.
#pragma once

#include <cstddef>
#include <vector>

#include "common/device.h"
#include "common/status.h"

namespace hoop {

// Two host buffers (input and output side), pinned or pageable, grown on demand, never shrunk,
// freed with it. A pinned buffer outgrown is kept until then too: freeing pinned memory
// synchronises the device.
class HostStaging {
 public:
  explicit HostStaging(bool pinned) : pinned_(pinned) {}
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  // At least `bytes` for side `which` (0: input, 1: output).
  StatusOr<char*> Get(int which, size_t bytes);
  MemKind kind() const;

 private:
  void Free(char* p) const;
  const bool pinned_;
  char* buf_[2] = {nullptr, nullptr};
  size_t bytes_[2] = {0, 0};
  std::vector<char*> retired_;
};

}  // namespace hoop
