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
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "tensorfusion/request.h"

namespace hoop::fusion {

struct Member {
  const std::string* name;
  const TensorParams* params;
  Buffer in, out;
};

struct GroupTimes {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start, packed, reduced, end;  // packed == start and end == reduced when alone
};

Status RunGroup(Communicator& comm, const std::vector<Member>& members, std::vector<char>& fusion, GroupTimes* t);

}  // namespace hoop::fusion
