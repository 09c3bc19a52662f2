// Runs one fusion group (fusion_planner.h) as one collective. Every rank runs the same groups in
// the same order, so the collectives line up.
//
//  - alone: straight on the caller's buffers (an allreduce with a prescale first copies the
//    scaled input into the output and reduces there in place; the postscale is applied to the
//    output afterwards);
//  - fused: each tensor is packed into the fusion buffer (with its prescale), the collective runs
//    in place on the buffer, and each tensor is unpacked into its output (with its postscale).
//    Allreduce and broadcast pack the tensors end to end; allgather packs this rank's parts end
//    to end at block `rank` of an n-block buffer, gathers in place, and hands each tensor its
//    slice of every block.
//  - fused on a device (execute_device.cc): when every tensor of the group is device memory on
//    one device, the fusion buffer is on that device too, and packing and unpacking are one
//    batched copy kernel each (kernels/device_copy.h) with the scale factors applied in it; the
//    collective runs on the device buffer (staged by the communicator like any device buffer).
//    The collective is the same either way, so ranks whose tensors live elsewhere still match.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "tensorfusion/request.h"

namespace hoop::fusion {

struct Member {
  const std::string* name;
  const TensorParams* params;
  Buffer in, out;
  const std::atomic<int>* waiters = nullptr;  // the runtime's callers blocked on a Handle (CallOptions::waiters)
};

struct GroupTimes {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start, packed, reduced, end;  // packed == start and end == reduced when alone
};

// How a group's collective is called: blocking (the runtime's thread waits at once), with the
// tensors' compression, spinning only while a caller waits on a Handle (`waiters`).
CallOptions OptionsFor(const TensorParams& p, const std::atomic<int>* waiters);
// The group's collective on its fusion buffer `whole` (allgather: from this rank's block `mine`),
// in place; sets t->reduced (and t->end on a failure).
Status CallFused(Communicator& c, const std::vector<Member>& members, const Buffer& mine, const Buffer& whole,
                 GroupTimes* t);

// The fusion buffer on a device: grown by doubling, freed with it (an outgrown one is kept until
// then: freeing device memory synchronises the device).
class DeviceFusionBuffer {
 public:
  DeviceFusionBuffer() = default;
  ~DeviceFusionBuffer();
  DeviceFusionBuffer(const DeviceFusionBuffer&) = delete;
  DeviceFusionBuffer& operator=(const DeviceFusionBuffer&) = delete;
  StatusOr<char*> Get(int device, size_t bytes);

 private:
  char* p_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
  std::vector<char*> retired_;
};

Status RunGroup(Communicator& comm, const std::vector<Member>& members, std::vector<char>& fusion,
                DeviceFusionBuffer& device_fusion, GroupTimes* t);
// RunGroup's path for a group whose tensors are all on `device`.
Status RunGroupOnDevice(Communicator& comm, const std::vector<Member>& members, int device, DeviceFusionBuffer& buffer,
                        GroupTimes* t);

}  // namespace hoop::fusion
