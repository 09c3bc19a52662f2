// One collective call as the layers beneath the Communicator's front see it: what was called
// (kind), on which memory (Buffer: a typed view of the caller's), with which reduction, root,
// algorithm, compression and v-layouts. The front fills it at the call; the collective table
// (coll_table.h) checks and runs it. And what a point-to-point receive reports (RecvInfo, from
// the tagged channel beneath: transport/tagged/recv_info.h).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "collectives/core/algo.h"
#include "collectives/core/op_desc.h"
#include "collectives/kernels/wire.h"
#include "collectives/schedules/schedule.h"
#include "common/dtype.h"
#include "transport/tagged/recv_info.h"

namespace hoop {

// A typed view of caller memory. `device`: the CUDA ordinal of device memory, found once where
// the call enters (the C API asks the pointer; CommCore's calls and the fusion runtime's
// Submit fill in what a C++ caller left at -1); the layers beneath read it, never the pointer.
struct Buffer {
  void* data = nullptr;
  size_t count = 0;
  DType dtype = DType::kF32;
  MemKind kind = MemKind::kHost;
  int device = -1;
};

struct CollCall {
  CollKind kind = CollKind::kAllreduce;
  Buffer in, out;
  ReduceOp op = ReduceOp::kSum;
  int root = -1;
  Algo algo = Algo::kAuto;
  std::optional<Compression> compression;
  void* residual = nullptr;
  std::shared_ptr<const VBlocks> v;  // the v-collectives' layouts
  // Its communicator's deterministic mode when it was called: a reduction runs a canonical
  // algorithm (ChooseAlgo), and device buffers are staged whole (device_route.cc).
  bool deterministic = false;
};

}  // namespace hoop
