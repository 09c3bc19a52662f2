// Device buffers in a call on a caller's CUDA stream (stream_order.h): staged by copies queued on
// that stream itself, on the caller's thread, around the hold. Before it: the device input (or the
// whole output, when the input lies inside it) copied into pinned host memory; after it: the host
// output copied back to the device. The worker runs the collective on the pinned copies like any
// other, making no CUDA call, and the stream's later work sees the output once the copy back is
// done. The caller never blocks.
//
// Each call in flight has a slot of its own (two calls on different streams may be in flight at
// once): a slot is taken at the call and free again once an event recorded after its copy back
// has fired. Slots grow and are never freed before the communicator: freeing pinned memory
// synchronises the device. Allocating a slot's memory can wait for the device too, so it happens
// on the caller's thread, before this call's hold; as with NCCL, a program should not allocate
// CUDA memory in one thread while another thread's call on a stream is in flight.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/status.h"

namespace hoop {

class StreamStaging {
 public:
  struct Slot {
    char* in = nullptr;
    size_t in_cap = 0;
    char* out = nullptr;
    size_t out_cap = 0;
    void* done = nullptr;  // event recorded after the copy back
    bool busy = false;
    bool lost = false;  // its event could not be recorded: never free again
  };
  StreamStaging() = default;
  ~StreamStaging();
  StreamStaging(const StreamStaging&) = delete;
  StreamStaging& operator=(const StreamStaging&) = delete;

  // A free slot with room for `in` and `out` bytes (pinned host memory; a side of 0 bytes is not
  // staged and may have no memory).
  StatusOr<Slot*> Take(size_t in, size_t out);
  // The slot is free again once `stream` has run what is queued on it so far.
  void Give(Slot* slot, void* stream);

 private:
  Status Grow(char** p, size_t* cap, size_t bytes);
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<char*> retired_;
};

}  // namespace hoop
