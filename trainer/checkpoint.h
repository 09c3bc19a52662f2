// Checkpoints: the model's parameters, batch-norm statistics and momentum buffers, with where
// training stopped, in one file that rank 0 alone writes at the end of each epoch.
//
// Written atomically: to PATH.tmp.PID, flushed and fsync'ed, then renamed over PATH, so a crash
// leaves the previous checkpoint whole. Format (little-endian): "HOOPCKPT", u32 version, the
// model's name, u32 epochs done, u64 steps done, u32 tensor count, then per tensor its name,
// u64 element count and f32 data; last a CRC-32 of everything before it. Loading checks each of
// these and that every tensor the model expects is there with its size, naming what differs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/tensor.h"

namespace hoop::train {

struct CheckpointInfo {
  std::string model;
  uint32_t epochs_done = 0;
  uint64_t steps_done = 0;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor*>>;

Status SaveCheckpoint(const std::string& path, const CheckpointInfo& info, const NamedTensors& tensors);
// Fills `tensors` (which must all be in the file, with their sizes) and `info`.
Status LoadCheckpoint(const std::string& path, const std::string& model, const NamedTensors& tensors, CheckpointInfo* info);

}  // namespace hoop::train
