// Checkpoints: the model's parameters, batch-norm statistics and momentum buffers, with where
// training stopped, in one file that rank 0 alone writes: at the end of each epoch, every
// --checkpoint-every steps, and when the job is interrupted. A checkpoint taken mid-epoch also
// holds the epoch's partial sums, so a resumed run ends as an unbroken one would.
//
// Written atomically: to PATH.tmp.PID, flushed and fsync'ed, then renamed over PATH, so a crash
// leaves the previous checkpoint whole. Format (little-endian): "HOOPCKPT", u32 version, the
// model's name, u32 epochs done, u64 steps done, and from version 2: u32 steps done in the
// unfinished epoch, u32 ranks, u32 batch per rank, f64 wall seconds, from version 3: u32 metrics
// fields per epoch (15 in version 2, before the energy fields), then u32 n and n f64 (the
// unfinished epoch's partial sums), u32 n and n f64 (the finished epochs' metrics, in
// metrics.h's field order); then u32 tensor count, per tensor its name, u64 element count and f32
// data; last a CRC-32 of everything before it. Version 1 files still load. Loading checks each
// of these and that every tensor the model expects is there with its size, naming what differs.
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
  uint64_t steps_done = 0;        // over the whole run
  uint32_t step_in_epoch = 0;     // steps of the unfinished epoch done (0: at an epoch's end)
  uint32_t ranks = 0, batch = 0;  // the run that wrote it (0: a version 1 file, unknown)
  double wall_s = 0;              // training time so far
  std::vector<double> partial;    // the unfinished epoch's sums (epoch_sums.h's order)
  std::vector<double> history;    // the finished epochs' metrics, flattened (metrics.h)
  uint32_t history_fields = 0;    // per epoch in `history`; 0 when saving: EpochFieldCount()
};

using NamedTensors = std::vector<std::pair<std::string, Tensor*>>;

// Whether files can be written at these paths (empty: not asked for), by making and removing a
// probe beside each: the error names the option (--metrics, --checkpoint) and the cause.
Status ProbeOutputs(const std::string& metrics, const std::string& checkpoint);

Status SaveCheckpoint(const std::string& path, const CheckpointInfo& info, const NamedTensors& tensors);
// Fills `tensors` (which must all be in the file, with their sizes) and `info`; an empty `model`
// takes whichever the file holds. `extra`: what a
// tensor in the file that `tensors` lacks is: an error (a checkpoint to resume from holds what the
// run has, no more), or skipped (a distillation's teacher takes the weights, not the momentum).
enum class ExtraTensors { kRefuse, kSkip };
Status LoadCheckpoint(const std::string& path, const std::string& model, const NamedTensors& tensors,
                      CheckpointInfo* info, ExtraTensors extra = ExtraTensors::kRefuse);
// The model a checkpoint holds, and the rest of its header (the file is read and checked whole).
StatusOr<CheckpointInfo> PeekCheckpoint(const std::string& path);

}  // namespace hoop::train
